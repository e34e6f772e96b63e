"""Compiler calls and lowering time when the same functions meet many shapes, constants and element reads, and
what a new process with a warm disk cache pays for its first calls. Each part runs in a fresh cache directory.

    python benchmarks/bench_compile_count.py

(a) per function, 100 hypothesis shapes (rank 1-3, sizes 1-40) and 100 random 2-D shapes (sizes 1-200): compiler
    calls and the time spent lowering (kernelize, lowering, rendering: everything of a first call but the compiler)
(b) x * (i + 0.5) - (i + 2.5) for 40 values of i
(c) the 30 elements of a lazy (5, 6) result read one by one with float(t[i, j])
(d) new processes with a warm disk cache: the first nn.conv2d of (2, 3, 32, 32) by (8, 3, 3, 3) and the first
    softmax of (4096, 1024) (median of 5 processes; the softmax with its kernel's run time subtracted)
"""
from __future__ import annotations
import os
import subprocess
import sys
import tempfile
import time

os.environ["MINITENSOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="mt-count-")
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor import nn
from minitensor.backend import realize as realize_mod
from minitensor.backend.runtime import stats


def _layernorm(x):
  d = x - x.mean(axis=-1, keepdims=True)
  return d / mt.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)


FUNCTIONS = {
  "a*2 + b*3 - a*b": lambda a, b: a * 2 + b * 3 - a * b,
  "exp(a) / (1 + b.T.T)": lambda a, b: mt.exp(a) / (1 + b.T.T),
  "a.T + 1 (transpose)": lambda a, b: a.T + 1,
  "a[::-1] * b (flip)": lambda a, b: a[::-1] * b,
  "a + a[..., :1] (broadcast)": lambda a, b: a + a[..., :1],
  "sum over the last axis": lambda a, b: a.sum(axis=-1),
  "column sum (axis 0)": lambda a, b: a.sum(axis=0),
  "softmax": lambda a, b: nn.softmax(a, axis=-1),
  "layernorm": lambda a, b: _layernorm(a),
}

hypothesis_shapes = st.lists(st.integers(1, 40), min_size=1, max_size=3).map(tuple)
random_2d = [tuple(int(v) for v in np.random.default_rng(k).integers(1, 201, 2)) for k in range(100)]


class Lowering:
  """Seconds spent in compile_schedule minus the compiler's own seconds (so: kernelize, lower, render)."""
  def __enter__(self):
    self.real, self.spent = realize_mod.compile_schedule, [0.0]
    def timed(*a, **k):
      t, c = time.perf_counter(), stats.compile_seconds
      try: return self.real(*a, **k)
      finally: self.spent[0] += time.perf_counter() - t - (stats.compile_seconds - c)
    realize_mod.compile_schedule = timed
    return self
  def __exit__(self, *exc): realize_mod.compile_schedule = self.real


def run(fn, shape) -> None:
  a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
  np.asarray(fn(mt.asarray(a), mt.asarray(a + 1)))


def count_hypothesis(fn) -> tuple[int, int, float]:
  seen = [0]
  before = stats.compiles
  with Lowering() as low:
    @settings(max_examples=100, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(hypothesis_shapes)
    def each(shape):
      run(fn, shape)
      seen[0] += 1
    each()
  return seen[0], stats.compiles - before, low.spent[0]


def count_shapes(fn, shapes) -> tuple[int, float]:
  before = stats.compiles
  with Lowering() as low:
    for s in shapes: run(fn, s)
  return stats.compiles - before, low.spent[0]


def constants() -> int:
  x, before = mt.asarray(np.arange(12.0).reshape(3, 4)), stats.compiles
  for i in range(40): np.asarray(x * (i + 0.5) - (i + 2.5))
  return stats.compiles - before


def element_reads() -> int:
  t, before = mt.exp(mt.asarray(np.random.default_rng(1).standard_normal((5, 6)))) * 2 + 1, stats.compiles
  [[float(t[i, j]) for j in range(6)] for i in range(5)]
  return stats.compiles - before


_FIRST = """
import time, numpy as np
t0 = time.perf_counter()
import minitensor as mt
from minitensor import nn
from minitensor.backend.runtime import stats
rng = np.random.default_rng(0)
x, w = mt.asarray(rng.random((2, 3, 32, 32), np.float32)), mt.asarray(rng.random((8, 3, 3, 3), np.float32))
a = mt.asarray(rng.random((4096, 1024), np.float32))
t1 = time.perf_counter(); np.asarray(nn.conv2d(x, w)); t2 = time.perf_counter()
np.asarray(nn.softmax(a, axis=-1)); t3 = time.perf_counter()
np.asarray(nn.softmax(a * 1.5, axis=-1)); t4 = time.perf_counter()       # a warm run of the same kernel
print(t2 - t1, (t3 - t2) - (t4 - t3), stats.compiles, getattr(stats, "plan_hits", 0))
"""


def warm_process() -> tuple[float, float, int, int]:
  env = dict(os.environ)
  subprocess.run([sys.executable, "-c", _FIRST], env=env, check=True, capture_output=True)     # fills the cache
  runs = [subprocess.run([sys.executable, "-c", _FIRST], env=env, check=True, capture_output=True,
                         text=True).stdout.split()
          for _ in range(5)]
  conv, soft = sorted(float(r[0]) for r in runs)[2], sorted(float(r[1]) for r in runs)[2]
  return conv, soft, int(runs[-1][2]), int(runs[-1][3])


if __name__ == "__main__":
  t = time.perf_counter()
  print("(a) compiler calls (lowering seconds)      100 hypothesis shapes     100 random 2-D shapes")
  total = 0
  for name, fn in FUNCTIONS.items():
    n, c, low = count_hypothesis(fn)
    c2, low2 = count_shapes(fn, random_2d)
    total += c + c2
    print(f"  {name:28s} {c:4d} ({low:5.2f} s) of {n:3d}         {c2:4d} ({low2:5.2f} s)")
  print(f"  {'all':28s} {total:4d} compiler calls, {time.perf_counter() - t:.1f} s")
  print(f"(b) 40 constants in one expression: {constants()} compiler call(s)")
  print(f"(c) 30 element reads of a lazy (5, 6) result: {element_reads()} compiler call(s)")
  conv, soft, c, h = warm_process()
  print(f"(d) a new process, warm disk cache: first conv2d {conv * 1e3:.1f} ms, first softmax (4096, 1024) "
        f"{soft * 1e3:.1f} ms beyond its kernel's run; {c} compiles, {h} plans found")
