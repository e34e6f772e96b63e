"""complex64 / complex128 next to NumPy in the same process: elementwise arithmetic and functions on 1M elements,
a reduction, GEMM, and the first call of a new complex kernel (a C-compiler compile: tcc has no _Complex).

    python benchmarks/bench_complex.py [--tier 0|1]

Prints the best of 15 runs of each (after warm-up calls that compile and, at tier 1, swap in -O3 code) and the
ratio NumPy time / minitensor time.
"""
from __future__ import annotations
import os
import sys
import time
import numpy as np


def best(f, runs: int = 15) -> float:
  ts = []
  for _ in range(runs):
    t = time.perf_counter()
    f()
    ts.append(time.perf_counter() - t)
  return min(ts)


def main() -> None:
  if "--tier" in sys.argv: os.environ["MINITENSOR_TIER"] = sys.argv[sys.argv.index("--tier") + 1]
  import minitensor as mt
  r = np.random.default_rng(0)
  print(f"{'case':28s} {'NumPy':>10s} {'minitensor':>11s} {'ratio':>6s}  first call")
  for dt in (np.complex64, np.complex128):
    a, b = ((r.standard_normal(1 << 20) + 1j * r.standard_normal(1 << 20)).astype(dt) for _ in range(2))
    m, n = (x[:256 * 256].reshape(256, 256) for x in (a, b))
    x, y, mx, my = (mt.asarray(v) for v in (a, b, m, n))
    cases = [("a * b", lambda: a * b, lambda: x * y), ("a / b", lambda: a / b, lambda: x / y),
             ("a * b + a", lambda: a * b + a, lambda: x * y + x), ("exp(a)", lambda: np.exp(a), lambda: mt.exp(x)),
             ("abs(a)", lambda: np.abs(a), lambda: abs(x)), ("sum(a)", lambda: a.sum(), lambda: x.sum()),
             ("matmul 256", lambda: m @ n, lambda: mx @ my)]
    for name, fn, fm in cases:
      t0 = time.perf_counter()
      fm().realize()
      first = time.perf_counter() - t0
      for _ in range(5): fm().realize()
      tn, tm = best(fn), best(lambda: fm().realize())
      label = f"{np.dtype(dt).name} {name}"
      print(f"{label:28s} {tn * 1e3:8.2f}ms {tm * 1e3:9.2f}ms {tn / tm:6.2f}  {first * 1e3:.0f} ms")


if __name__ == "__main__":
  main()
