"""Elementwise work and reductions on data with NaN (missing values) and negative numbers, minitensor and NumPy
each in its own process.

    python benchmarks/bench_nan.py [--n 1000000] [--runs 15]

The data: n float64 standard normal values, every tenth NaN. A tier-1 kernel whose run raises a floating-point
flag NumPy might not raise is run again at tier 0 to confirm it (fpstatus.confirmable): this shows what that costs
where the flag is spurious (compares of NaN, in kernels with accumulators) or genuine (sqrt, log of negatives).
Prints per case both medians (after warm-up: tier 1, no compiles) and NumPy time / minitensor time. Values are
checked against NumPy's in the minitensor process; warnings are silenced in both.
"""
from __future__ import annotations
import json
import subprocess
import sys

CASES = {
  "where(x > 0, x, 0)": lambda xp, x: xp.where(x > 0, x, 0),
  "maximum(x, 0)": lambda xp, x: xp.maximum(x, 0),
  "clip(x, -1, 1)": lambda xp, x: xp.clip(x, -1, 1),
  "x > 0.5 (mask)": lambda xp, x: x > 0.5,
  "sqrt(x)": lambda xp, x: xp.sqrt(x),
  "(x > 0).sum()": lambda xp, x: (x > 0).sum(),
  "x.max()": lambda xp, x: x.max(),
  "log(x)": lambda xp, x: xp.log(x),
  "nanmean(x)": lambda xp, x: xp.nanmean(x),
}


def child(lib: str, n: int, runs: int) -> dict[str, float]:
  import time
  import warnings
  import numpy as np
  warnings.simplefilter("ignore")
  x = np.random.default_rng(0).standard_normal(n)
  x[::10] = np.nan
  if lib == "numpy": xp, arg, done = np, x, lambda v: v
  else:
    import minitensor as mt
    from minitensor.backend.realize import settle
    xp, arg, done = mt, mt.asarray(x), np.asarray
  out = {}
  for name, f in CASES.items():
    call = lambda: done(f(xp, arg))
    for _ in range(20): call()
    if lib != "numpy":
      settle()
      np.testing.assert_allclose(call(), f(np, x), rtol=1e-14, err_msg=name)    # (log: libmvec vs NumPy, an ulp)
    ts = []
    for _ in range(runs):
      t = time.perf_counter()
      call()
      ts.append(time.perf_counter() - t)
    out[name] = sorted(ts)[len(ts) // 2]
  return out


def main() -> None:
  n = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 1_000_000
  runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 15
  res = {}
  for lib in ("numpy", "minitensor"):
    code = (f"import json, runpy; c = runpy.run_path({__file__!r}, run_name='bench_nan')['child']({lib!r}, {n}, "
            f"{runs}); print(json.dumps(c))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if p.returncode != 0: raise RuntimeError(f"bench_nan: the {lib} process failed:\n{p.stderr[-4000:]}")
    res[lib] = json.loads(p.stdout.strip().splitlines()[-1])
  print(f"{n:,} float64, every tenth NaN; medians of {runs}")
  print(f"{'case':22s} {'NumPy':>10s} {'minitensor':>11s} {'ratio':>7s}")
  for name in CASES:
    tn, tm = res["numpy"][name], res["minitensor"][name]
    print(f"{name:22s} {tn * 1e6:8.0f}us {tm * 1e6:9.0f}us {tn / tm:7.2f}")


if __name__ == "__main__":
  main()
