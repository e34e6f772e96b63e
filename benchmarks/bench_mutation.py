"""Loops that mutate in place, next to NumPy in the same process: the explicit heat-equation stencil

    u[1:-1, 1:-1] = up[1:-1, 1:-1] + 0.1 * (up[2:, 1:-1] + up[:-2, 1:-1] + up[1:-1, 2:] + up[1:-1, :-2]
                                            - 4 * up[1:-1, 1:-1])
    up[:] = u[:]

on (64, 64), realized once after n steps and realized after every step, and `acc += x.sum()` in a loop.

    python benchmarks/bench_mutation.py [steps]

Prints the median of 5 runs of each (after a warm-up that compiles), the ratios, and the compiler calls of the
timed runs.
"""
from __future__ import annotations
import statistics
import sys
import time
import numpy as np
import minitensor as mt
from minitensor.backend.runtime import stats


def heat(u, up, n: int, each: bool = False):
  for _ in range(n):
    u[1:-1, 1:-1] = up[1:-1, 1:-1] + 0.1 * (up[2:, 1:-1] + up[:-2, 1:-1] + up[1:-1, 2:] + up[1:-1, :-2]
                                            - 4 * up[1:-1, 1:-1])
    up[:] = u[:]
    if each: np.asarray(up)
  return np.asarray(up)


def accumulate(x, n: int):
  acc = mt.zeros(()) if isinstance(x, mt.Tensor) else np.zeros(())
  for _ in range(n): acc += x.sum()
  return float(acc)


def median_time(f, runs: int = 5) -> float:
  ts = []
  for _ in range(runs):
    t = time.perf_counter()
    f()
    ts.append(time.perf_counter() - t)
  return statistics.median(ts)


def main() -> None:
  n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
  u0 = np.random.default_rng(0).random((64, 64))
  x = np.arange(1000.0)
  cases = {
    f"heat (64, 64), {n} steps, NumPy": lambda: heat(u0.copy(), u0.copy(), n),
    f"heat (64, 64), {n} steps, realized once": lambda: heat(mt.asarray(u0), mt.asarray(u0), n),
    f"heat (64, 64), {n} steps, realized every step": lambda: heat(mt.asarray(u0), mt.asarray(u0), n, True),
    f"acc += x.sum(), {10 * n} times, NumPy": lambda: accumulate(x, 10 * n),
    f"acc += x.sum(), {10 * n} times, minitensor": lambda: accumulate(mt.asarray(x), 10 * n),
  }
  assert np.allclose(cases[f"heat (64, 64), {n} steps, realized once"](), cases[f"heat (64, 64), {n} steps, NumPy"]())
  for f in cases.values(): f()       # warm-up: compiles
  c = stats.compiles
  times = {k: median_time(f) for k, f in cases.items()}
  base = {k: times[k.rsplit(",", 1)[0] + ", NumPy"] if "heat" in k else times[k.rsplit(",", 1)[0] + ", NumPy"]
          for k in times}
  for k, t in times.items():
    print(f"{k:52s} {t * 1e3:9.1f} ms   {t / base[k]:6.1f}x NumPy")
  print(f"compiler calls in the timed runs: {stats.compiles - c}")


if __name__ == "__main__":
  main()
