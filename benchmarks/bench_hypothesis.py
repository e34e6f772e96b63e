"""The README's hypothesis example (softmax after a random movement chain, 100 examples) against the same test on
NumPy alone, each in a new process.

    python benchmarks/bench_hypothesis.py [runs]

Both tests draw the same 100 examples (derandomized): the minitensor test runs `mtt.assert_matches_numpy`
(NumPy's softmax of the chain and minitensor's, compared), the NumPy test the same draws and NumPy's softmax of
the chain twice, compared with `np.testing.assert_allclose` (or, where NumPy raises, the second call must raise
the same exception type, as assert_matches_numpy requires of minitensor). minitensor runs with an empty kernel
cache (every compile in the run) and with the cache the first run left (warm: most structures recur, not all, as
the draws' values decide what is realized together). Prints the median over `runs` processes (default 5) of the
test's time (the import of minitensor and hypothesis not counted), and minitensor / NumPy.
"""
from __future__ import annotations
import os
import statistics
import subprocess
import sys
import tempfile

_CHILD = """
import os, sys, time
import numpy as np
from hypothesis import given, settings, strategies as st
import minitensor as mt
import minitensor.testing as mtt

def softmax(x):
    xp = mt if isinstance(x, mt.Tensor) else np
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

numpy_only = sys.argv[1] == "numpy"

def outcome(f):
    try: return f()
    except Exception as e: return type(e)     # (an error NumPy raises: the other side must raise it too)

def same_on_numpy(f, x):
    a, b = outcome(lambda: f(x)), outcome(lambda: f(x.copy()))
    if isinstance(a, type): assert a is b
    else: np.testing.assert_allclose(a, b)

@settings(max_examples=100, deadline=None, database=None, derandomize=True)
@given(data=st.data())
def test_softmax_after_any_movement(data):
    shape = data.draw(mtt.shapes(min_dims=1, min_side=1))
    x = data.draw(mtt.arrays(np.float32, shape, elements=st.floats(-10, 10, width=32)))
    chain = data.draw(mtt.movement_chains(shape))
    if numpy_only: same_on_numpy(lambda a: softmax(chain.apply(a)), x)
    else: mtt.assert_matches_numpy(lambda a: softmax(chain.apply(a)), x)

t = time.perf_counter()
test_softmax_after_any_movement()
print(time.perf_counter() - t)
"""


def _run(kind: str, cache: str) -> float:
  env = {**os.environ, "MINITENSOR_CACHE_DIR": cache}
  out = subprocess.run([sys.executable, "-c", _CHILD, kind], env=env, capture_output=True, text=True, check=True)
  return float(out.stdout.split()[-1])


def main() -> None:
  runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
  times: dict[str, list[float]] = {"numpy": [], "minitensor, empty cache": [], "minitensor, warm cache": []}
  for _ in range(runs):
    with tempfile.TemporaryDirectory() as cache:
      times["numpy"].append(_run("numpy", cache))
      times["minitensor, empty cache"].append(_run("minitensor", cache))
      times["minitensor, warm cache"].append(_run("minitensor", cache))
  base = statistics.median(times["numpy"])
  for name, ts in times.items():
    m = statistics.median(ts)
    print(f"{name:26s} {m:6.2f} s  ({min(ts):.2f}-{max(ts):.2f})  {m / base:5.2f}x NumPy's")


if __name__ == "__main__":
  main()
