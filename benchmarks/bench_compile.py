"""Compiler latency: cold compile-and-load of a small kernel, simplify on a 1,000-node index expression, and
the first softmax of a new process with an empty and with a warm disk cache.

    python benchmarks/bench_compile.py

Cold means a new C source each run (a constant varies) in a fresh cache directory: the time is one direct
compiler call plus cffi's dlopen. Medians of 10 (of 5 for the new processes).
"""
from __future__ import annotations
import os
import statistics
import subprocess
import sys
import tempfile
import time
import numpy as np

_FIRST_SOFTMAX = """
import time, numpy as np, minitensor as mt
from minitensor import nn
from minitensor.backend.runtime import stats
x = np.random.rand(4096, 1024).astype(np.float32)
t = time.perf_counter(); np.asarray(nn.softmax(mt.asarray(x), axis=-1)); t = time.perf_counter() - t
print(t, stats.compile_seconds, stats.compiles)
"""


def first_softmax(cache: str) -> tuple[float, float, int]:
  """(seconds to the first softmax result, of which compiling, compiler calls) in a new process."""
  out = subprocess.run([sys.executable, "-c", _FIRST_SOFTMAX], env={**os.environ, "MINITENSOR_CACHE_DIR": cache},
                       capture_output=True, text=True, check=True).stdout.split()
  return float(out[0]), float(out[1]), int(out[2])


def main() -> None:
  os.environ["MINITENSOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="mt-bench-")
  from minitensor.backend.rangeify import lower
  from minitensor.backend.render_c import render_c
  from minitensor.backend.runtime import compile_c
  from minitensor.backend.symbolic import simplify
  from minitensor.backend.uop import buf, range_
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
  cold = [first_softmax(tempfile.mkdtemp(prefix="mt-bench-")) for _ in range(5)]
  warm_dir = tempfile.mkdtemp(prefix="mt-bench-")
  first_softmax(warm_dir)
  warm = [first_softmax(warm_dir) for _ in range(5)]
  print(f"first softmax (4096, 1024) in a new process, empty cache: "
        f"{statistics.median(t for t, _, _ in cold) * 1e3:.0f} ms "
        f"(compiling {statistics.median(c for _, c, _ in cold) * 1e3:.0f} ms, {cold[0][2]} compiler call)")
  print(f"first softmax (4096, 1024) in a new process, warm disk cache: "
        f"{statistics.median(t for t, _, _ in warm) * 1e3:.0f} ms "
        f"({max(n for _, _, n in warm)} compiler calls)")


if __name__ == "__main__":
  main()
