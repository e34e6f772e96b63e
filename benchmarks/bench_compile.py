"""Compiler latency: cold compile-and-load of a small kernel, and simplify on a 1,000-node index expression.

    python benchmarks/bench_compile.py

Cold means a new C source each run (a constant varies) in a fresh cache directory: the time is one direct
compiler call plus cffi's dlopen. Medians of 10.
"""
from __future__ import annotations
import os, statistics, tempfile, time
import numpy as np


def main() -> None:
  os.environ["MINITENSOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="mt-bench-")
  from minitensor.backend.uop import buf, range_
  from minitensor.backend.rangeify import lower
  from minitensor.backend.render_c import render_c
  from minitensor.backend.runtime import compile_c
  from minitensor.backend.symbolic import simplify
  ts = []
  for k in range(10):
    src = render_c(lower(buf(0, 1024).reshape((32, 32)).permute((1, 0)) * float(k + 1), buf(1, 1024)), "k")
    t = time.perf_counter(); compile_c(src); ts.append(time.perf_counter() - t)
  print(f"cold compile + load of a small kernel: {statistics.median(ts) * 1e3:.1f} ms (median of 10)")
  rng = np.random.default_rng(0)
  rs = [range_(int(rng.integers(2, 50)), i) for i in range(8)]
  ts, nodes = [], 0
  for _ in range(10):
    e = rs[0]
    while len(e.toposort()) < 1000:
      r, c = rs[int(rng.integers(8))], int(rng.integers(1, 9))
      e = [e + r * c, (e * c + r) // c, (e + r) % (c * 4), e * c + 1][int(rng.integers(4))]
    nodes = len(e.toposort())
    t = time.perf_counter(); simplify(e); ts.append(time.perf_counter() - t)
  print(f"simplify of a {nodes}-node index expression: {statistics.median(ts) * 1e3:.1f} ms (median of 10)")


if __name__ == "__main__":
  main()
