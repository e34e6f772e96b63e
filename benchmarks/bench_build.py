"""What graph building and realize's own Python work cost for common expressions (issue 16: on a 256x256 GEMM or a
softmax, recording the graph cost a large part of NumPy's whole call).

    python benchmarks/bench_build.py [--cold] [--profile NAME] [--n N] [--only NAME,...]

Workloads (float32): `a @ b` of (256, 256) tensors; nn.softmax of (4096, 1024) along the last axis; the layernorm
expression (x - x.mean(-1, keepdims=True)) / mt.sqrt(x.var(-1, keepdims=True) + 1e-5) of (4096, 1024). Rows:

    build      recording the graph of the expression (its result dropped, so every node is built anew)
    realize    np.asarray of a built graph, less the time inside the compiled kernels: structure key, program
               lookup, buffers, pointers, bookkeeping
    nodes      the UOps one build creates

Figures are microseconds of the calling thread's CPU time per call (other processes on a shared machine do not
count; OpenMP's worker threads neither): the minimum and the median over --n samples (each sample the mean of a
batch of calls for a warm build, one call otherwise). --cold streams 32 MiB through the caches before each
sample, as the kernel before a build does in a real program (Python's objects are then out of the caches).
--profile NAME prints cProfile's top functions of 300 builds of that workload.
"""
from __future__ import annotations
import argparse
import cProfile
import pstats
import statistics
import sys
import time
import numpy as np
import minitensor as mt
from minitensor.backend import realize as R
from minitensor.backend.debug import new_nodes

BATCH = 20


def workloads() -> dict:
  rng = np.random.default_rng(0)
  ta, tb = (mt.asarray(rng.standard_normal((256, 256), dtype=np.float32)) for _ in range(2))
  tx = mt.asarray(rng.standard_normal((4096, 1024), dtype=np.float32))
  return {
    "matmul": lambda: ta @ tb,
    "softmax": lambda: mt.nn.softmax(tx, axis=-1),
    "layernorm": lambda: (tx - tx.mean(-1, keepdims=True)) / mt.sqrt(tx.var(-1, keepdims=True) + 1e-5),
  }


class Streamer:
  """Moves 32 MiB through the caches (a 16 MiB copy), evicting Python's objects from L1 and L2."""
  def __init__(self): self.src, self.dst = np.ones(1 << 22, np.float32), np.empty(1 << 22, np.float32)
  def __call__(self): np.copyto(self.dst, self.src)


class KernelClock:
  """Accumulates the time spent inside compiled kernels: wraps each kernel function of the programs in memory."""
  def __init__(self): self.total, self.wrapped = 0.0, set()

  def wrap_all(self) -> None:
    for prog in list(R._cache.values()):
      for k, *_ in prog.fns:
        if id(k) in self.wrapped: continue
        self.wrapped.add(id(k))
        fn = k.fn
        def timed(*args, fn=fn):
          t = time.thread_time()
          r = fn(*args)
          self.total += time.thread_time() - t
          return r
        k.fn = timed


def sample(fn, n: int, batch: int, before=None) -> list[float]:
  """n samples of fn's time in microseconds (each the mean over `batch` calls), `before` run untimed first."""
  out = []
  for _ in range(n):
    if before is not None: before()
    t = time.thread_time_ns()
    for _ in range(batch): fn()
    out.append((time.thread_time_ns() - t) / batch / 1e3)
  return out


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--cold", action="store_true")
  p.add_argument("--profile", default=None)
  p.add_argument("--n", type=int, default=200)
  p.add_argument("--only", default=None, help="comma-separated workload names")
  args = p.parse_args(argv)
  w = workloads()
  if args.only: w = {k: w[k] for k in args.only.split(",")}
  stream = Streamer() if args.cold else None
  for f in w.values():
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end: np.asarray(f())      # compiled (or loaded) and past the tier-1 swap
  R.settle()
  clock = KernelClock()
  clock.wrap_all()
  if args.profile:
    f = w[args.profile]
    prof = cProfile.Profile()
    def builds():
      for _ in range(300): f()       # (each result dropped: its nodes are built anew by the next call)
    prof.runcall(builds)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    return 0
  print(f"{'':10s} {'build min':>10s} {'median':>8s} {'realize min':>12s} {'median':>8s} {'nodes':>6s}"
        f"   ({'cold' if args.cold else 'warm'}, us per call)")
  for name, f in w.items():
    b = sample(f, args.n, 1 if args.cold else BATCH, stream)
    rl = []
    for _ in range(max(args.n // 4, 10)):
      x = f()
      clock.wrap_all()
      if stream is not None: stream()
      k0 = clock.total
      t = time.thread_time()
      np.asarray(x)
      rl.append((time.thread_time() - t - (clock.total - k0)) * 1e6)
      del x
    print(f"{name:10s} {min(b):10.1f} {statistics.median(b):8.1f} {min(rl):12.1f} {statistics.median(rl):8.1f} "
          f"{new_nodes(f):6d}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
