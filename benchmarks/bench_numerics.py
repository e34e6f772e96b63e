"""Scans and float -> integer casts next to NumPy, in one process (best of 7 runs of 5 calls, after a warm-up).

    PYTHONPATH=. python benchmarks/bench_numerics.py

cumsum/cumprod of (4096, 1024) along each axis (a sequential scan, as NumPy's), and a 4M-element float32
astype to several integer dtypes (the prelude's f2i helpers). Prints ms per call and NumPy / minitensor.
"""
from __future__ import annotations
import time
import numpy as np
import minitensor as mt


def per_call(f, reps: int = 7, calls: int = 5) -> float:
  """The best over `reps` runs of the mean seconds per call of `calls` calls, after `calls` warm-up calls."""
  for _ in range(calls): f()
  best = float("inf")
  for _ in range(reps):
    t = time.perf_counter()
    for _ in range(calls): f()
    best = min(best, (time.perf_counter() - t) / calls)
  return best


def row(name: str, numpy_fn, mt_fn) -> None:
  tm, tn = per_call(lambda: np.asarray(mt_fn())), per_call(numpy_fn)
  print(f"{name:34s} NumPy {tn * 1e3:7.2f} ms  minitensor {tm * 1e3:7.2f} ms  ratio {tn / tm:6.2f}")


def main() -> None:
  rng = np.random.default_rng(0)
  x = rng.standard_normal((4096, 1024)).astype(np.float32)
  xi = (x * 100).astype(np.int32)
  t, ti = mt.asarray(x), mt.asarray(xi)
  for ax in (0, 1):
    row(f"cumsum float32 axis={ax}", lambda: np.cumsum(x, ax), lambda: mt.cumsum(t, ax))
    row(f"cumprod float32 axis={ax}", lambda: np.cumprod(x, ax), lambda: mt.cumprod(t, ax))
    row(f"cumsum int32 axis={ax}", lambda: np.cumsum(xi, ax), lambda: mt.cumsum(ti, ax))
  f = x.reshape(-1) * 1e3
  tf = mt.asarray(f)
  for to in (np.int32, np.int64, np.uint8, np.uint32, np.uint64):
    row(f"float32 -> {np.dtype(to).name}, 4M", lambda: f.astype(to), lambda: tf.astype(to))


if __name__ == "__main__":
  main()
