"""Where the time of W9 goes: `np.asarray(t + u)` of two 16-element float32 tensors (a cached graph), by stage.

    python benchmarks/bench_dispatch.py [--profile]

Each figure is the minimum over 200 batches of 200 calls (microseconds per call): on a shared machine the minimum
of short batches is the figure least disturbed by other work. Stages:

    numpy            a + b of the ndarrays (the reference of the W9 target: at most 25x this)
    build            t + u: Tensor.__add__ recording the UOp (dtype resolution, broadcasting, the node)
    realize          np.asarray(x) of a built, unrealized x (200 pairs of tensors, each summed once per batch: no
                     node is realized twice; from the second batch on, each pair's bound plan runs)
    structure key    realize.structure of such a graph (the walk that finds its compiled program on a miss)
    kernel           the compiled C function called through cffi on prepared pointers
    full             np.asarray(t + u), the W9 workload

--profile prints cProfile's top functions of the full call.
"""
from __future__ import annotations
import argparse
import cProfile
import pstats
import sys
import time
import numpy as np
import minitensor as mt
from minitensor.backend import realize as R
from minitensor.backend.runtime import native

BATCH, BATCHES = 200, 200


def best(loop) -> float:
  """Microseconds per call: the minimum over BATCHES runs of loop(), which makes BATCH calls."""
  r = float("inf")
  for _ in range(BATCHES):
    t = time.perf_counter_ns(); loop(); r = min(r, time.perf_counter_ns() - t)
  return r / BATCH / 1e3


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--profile", action="store_true")
  args = p.parse_args(argv)
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal(16, dtype=np.float32), rng.standard_normal(16, dtype=np.float32)
  t, u = mt.asarray(a), mt.asarray(b)
  full = lambda: np.asarray(t + u)
  end = time.perf_counter() + 0.5
  while time.perf_counter() < end: full()        # past the tier-1 swap of the schedule
  R.settle()
  rows = {}
  def l_np():
    for _ in range(BATCH): a + b
  def l_build():
    for _ in range(BATCH): t + u
  pairs = [(mt.asarray(a), mt.asarray(b)) for _ in range(BATCH)]
  def l_realize():
    xs = [x + y for x, y in pairs]       # built outside the timed part below
    s = time.perf_counter_ns()
    for x in xs: np.asarray(x)
    return time.perf_counter_ns() - s
  g = (mt.asarray(a) + mt.asarray(b)).uop     # a graph of the same structure that is never realized
  def l_key():
    for _ in range(BATCH): R.structure([g])
  skey, leaves, sizes = R.structure([g])
  prog = R._schedules.get(R.ProgramKey(skey, R.modes()), lambda: None)
  n = native()
  out = np.empty(16, np.float32)
  k, slots, extra, vs = prog.fns[0]
  ptrs = [n.from_buffer(x) for x in (a, b, out)] + list(extra) + [sizes[v] for v in vs] + [R.fpstatus.slot()]
  def l_kernel():
    for _ in range(BATCH): k.fn(*ptrs)
  def l_full():
    for _ in range(BATCH): np.asarray(t + u)
  rows["numpy"] = best(l_np)
  rows["build"] = best(l_build)
  rows["realize"] = min(l_realize() for _ in range(BATCHES)) / BATCH / 1e3
  rows["structure key"] = best(l_key)
  rows["kernel"] = best(l_kernel)
  rows["full"] = best(l_full)
  for name, us in rows.items(): print(f"{name:14s} {us:7.2f} us")
  print(f"full / numpy   {rows['full'] / rows['numpy']:7.1f}x")
  if args.profile:
    prof = cProfile.Profile()
    prof.runcall(lambda: [full() for _ in range(20000)])
    pstats.Stats(prof).sort_stats("tottime").print_stats(20)
  return 0


if __name__ == "__main__":
  sys.exit(main())
