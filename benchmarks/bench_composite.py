"""Composite vs primitive PAD and FLIP: kernel time (median of 5 after a warm-up) and compile time, apart.

    python benchmarks/bench_composite.py [--quick]
"""
from __future__ import annotations
import sys
import time
import numpy as np
from minitensor.backend import composite as C
from minitensor.backend.rangeify import lower
from minitensor.backend.render_c import render_c
from minitensor.backend.runtime import call, compile_c
from minitensor.backend.uop import buf, prod


def measure(build, shape: tuple[int, ...], reps: int = 5) -> tuple[float, float]:
  """(compile seconds, median kernel seconds) of build(x) on a float32 buffer of `shape`."""
  x = buf(0, prod(shape)).reshape(shape)
  root = build(x)
  t0 = time.perf_counter()
  k = compile_c(render_c(lower(root, buf(1, prod(root.shape))), "bench"))["bench"]
  tc = time.perf_counter() - t0
  a, out = np.random.randn(prod(shape)).astype(np.float32), np.empty(prod(root.shape), np.float32)
  call(k, [a, out])
  ts = []
  for _ in range(reps):
    t = time.perf_counter(); call(k, [a, out]); ts.append(time.perf_counter() - t)
  return tc, float(np.median(ts))


def main() -> None:
  quick = "--quick" in sys.argv
  rows = [("pad (1024, 1024) by 1", (1024, 1024), [("composite pad", lambda x: C.pad(x, ((1, 1), (1, 1)))),
                                                  ("primitive PAD", lambda x: C.pad_guarded(x, ((1, 1), (1, 1))))])]
  # flip_stack's n-way WHERE chain takes the C compiler ~30 s at n=1024 and is out of reach beyond
  rows.append(("flip (1024,)", (1024,), [("anti_eye flip_axis", lambda x: C.flip_axis(x, 0)),
                                         ("flip_stack", lambda x: C.flip_stack(x, 0)),
                                         ("primitive FLIP", lambda x: C.flip(x, (0,)))]))
  if not quick:
    rows.append(("flip (16384,)", (16384,), [("anti_eye flip_axis", lambda x: C.flip_axis(x, 0)),
                                             ("primitive FLIP", lambda x: C.flip(x, (0,)))]))
  for title, shape, impls in rows:
    for name, fn in impls:
      tc, tk = measure(fn, shape)
      print(f"{title:24s} {name:20s} kernel {tk * 1e3:10.3f} ms   compile {tc * 1e3:8.1f} ms")


if __name__ == "__main__":
  main()
