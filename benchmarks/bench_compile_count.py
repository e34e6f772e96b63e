"""Compiler calls when the same functions meet many shapes: a hypothesis test per function, 100 examples each
(shapes of rank 1-3, sizes 1-40), in a fresh cache directory.

    python benchmarks/bench_compile_count.py

Prints, per function, the number of examples and of compiler calls (stats.compiles).
"""
from __future__ import annotations
import os, tempfile, time
os.environ["MINITENSOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="mt-count-")
import numpy as np
from hypothesis import given, settings, strategies as st, HealthCheck
import minitensor as mt
from minitensor import nn
from minitensor.backend.runtime import stats

FUNCTIONS = {
  "a*2 + b*3 - a*b": lambda a, b: a * 2 + b * 3 - a * b,
  "exp(a) / (1 + b.T.T)": lambda a, b: mt.exp(a) / (1 + b.T.T),
  "a.T + 1 (transpose)": lambda a, b: a.T + 1,
  "a[::-1] * b (flip)": lambda a, b: a[::-1] * b,
  "a + a[..., :1] (broadcast)": lambda a, b: a + a[..., :1],
  "sum over the last axis": lambda a, b: a.sum(axis=-1),
  "softmax": lambda a, b: nn.softmax(a, axis=-1),
}

shapes = st.lists(st.integers(1, 40), min_size=1, max_size=3).map(tuple)


def count(fn) -> tuple[int, int]:
  seen = [0]
  before = stats.compiles
  @settings(max_examples=100, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
  @given(shapes)
  def run(shape):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    np.asarray(fn(mt.asarray(a), mt.asarray(a + 1)))
    seen[0] += 1
  run()
  return seen[0], stats.compiles - before


if __name__ == "__main__":
  total = 0
  t = time.perf_counter()
  for name, fn in FUNCTIONS.items():
    n, c = count(fn)
    total += c
    print(f"{name:28s} {n:4d} examples {c:4d} compiler calls")
  print(f"{'all':28s} {'':13s} {total:4d} compiler calls, {time.perf_counter() - t:.1f} s")
