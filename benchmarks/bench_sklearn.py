"""scikit-learn on Tensors next to scikit-learn on ndarrays (array_api_dispatch=True, SCIPY_ARRAY_API=1): fit (and
predict or transform) of StandardScaler, LinearDiscriminantAnalysis and Ridge at 2000 x 20 float64. Ridge's
default solver is cholesky on ndarrays but svd under array API dispatch, so Ridge(solver="svd") is shown too.

    python benchmarks/bench_sklearn.py [--runs 20] [--warm 1.0]

Prints, per estimator, the first call on Tensors (it compiles or loads minitensor's kernels), the median of --runs
calls on each input right after it (minitensor's programs still at tier 0), the median of --runs steady-state calls
(after --warm seconds of calls, a loop's first second, and the tier-1 compiles they started: tiers.hot), and the
ratio NumPy time / minitensor steady time; also how many kernels one
steady-state call on Tensors realizes, the main cost at this size (each realization is a graph-cache lookup and
a kernel launch of some microseconds, where NumPy's own ufunc calls cost about one).
"""
from __future__ import annotations
import os
import sys
import time
import warnings

os.environ.setdefault("SCIPY_ARRAY_API", "1")


def median(f, runs: int) -> float:
  ts = []
  for _ in range(runs):
    t = time.perf_counter()
    f()
    ts.append(time.perf_counter() - t)
  return sorted(ts)[len(ts) // 2]


def warm(f, seconds: float) -> None:
  end = time.perf_counter() + seconds
  while time.perf_counter() < end: f()


def main() -> None:
  import numpy as np
  import sklearn
  from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
  from sklearn.linear_model import Ridge
  from sklearn.preprocessing import StandardScaler
  import minitensor as mt
  from minitensor.backend.realize import settle
  from minitensor.backend.runtime import stats
  runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 20
  seconds = float(sys.argv[sys.argv.index("--warm") + 1]) if "--warm" in sys.argv else 1.0
  rng = np.random.default_rng(0)
  X = rng.standard_normal((2000, 20))
  y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64)
  yr = X @ rng.standard_normal(20) + 0.1 * rng.standard_normal(2000)
  cases = [("StandardScaler fit+transform", lambda X, y, yr: StandardScaler().fit(X).transform(X)),
           ("LDA fit+predict", lambda X, y, yr: LinearDiscriminantAnalysis().fit(X, y).predict(X)),
           ("Ridge fit+predict", lambda X, y, yr: Ridge(alpha=1.0).fit(X, yr).predict(X)),
           ("Ridge(svd) fit+predict", lambda X, y, yr: Ridge(alpha=1.0, solver="svd").fit(X, yr).predict(X))]
  Xt, yt, yrt = mt.asarray(X), mt.asarray(y), mt.asarray(yr)
  print(f"{'case':30s} {'first (mt)':>10s} {'NumPy':>9s} {'mt, tier 0':>11s} {'mt, steady':>11s} {'ratio':>6s} "
        f"{'realizations':>12s}")
  warnings.simplefilter("ignore")     # Ridge's note that Tensors get the svd solver where ndarrays get cholesky
  with sklearn.config_context(array_api_dispatch=True):
    for name, f in cases:
      t = time.perf_counter()
      want, got = f(X, y, yr), np.asarray(f(Xt, yt, yrt))
      first = time.perf_counter() - t
      assert np.allclose(got, want, rtol=1e-9, atol=1e-9), name
      n = stats.graph_hits + stats.graph_misses
      np.asarray(f(Xt, yt, yrt))
      kernels = stats.graph_hits + stats.graph_misses - n
      mine = lambda: np.asarray(f(Xt, yt, yrt))
      t0 = median(mine, runs)
      warm(mine, seconds)
      settle()
      tn, tm = median(lambda: f(X, y, yr), runs), median(mine, runs)
      print(f"{name:30s} {first * 1e3:8.1f}ms {tn * 1e3:7.2f}ms {t0 * 1e3:9.2f}ms {tm * 1e3:9.2f}ms {tn / tm:6.2f} "
            f"{kernels:12d}")


if __name__ == "__main__":
  main()
