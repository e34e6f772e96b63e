"""Where the time of each workload W1-W9 goes: inside the compiled kernels, or in the Python around them.

    python benchmarks/bench_kernel_share.py [--only W2,W7] [--reps 5]

For each workload (the same data and calls as `python -m minitensor bench`): NumPy's time, minitensor's time per
call (`whole`, median of runs as the bench times it), the time spent inside its compiled C functions per call
(`kernels`: every kernel function of every compiled program is wrapped in a timer for a second series of runs),
and the difference (`python`: building the graph, finding the plan, allocating, returning). The ratio columns
are NumPy / whole (what the bench reports) and NumPy / kernels (what the kernels alone would reach). A kernel that
streams tens of MiB evicts the interpreter's objects from the caches, so the Python around it costs several times
what it costs on its own (benchmarks/bench_dispatch.py measures that part warm).
"""
from __future__ import annotations
import argparse
import sys
import time
from minitensor import bench
from minitensor.backend import realize


class _Timed:
  """A kernel whose calls add their duration to `spent`."""
  def __init__(self, kernel, spent: list[float]):
    self.kernel, self.spent = kernel, spent

  def fn(self, *args) -> None:
    t = time.perf_counter()
    self.kernel.fn(*args)
    self.spent[0] += time.perf_counter() - t


def kernel_time(fn, reps: int) -> float:
  """Seconds per call of fn spent inside compiled kernels (fn warmed up already)."""
  spent = [0.0]
  saved = {id(c): c.fns for c in realize._cache.values()}
  for c in realize._cache.values(): c.fns = [(_Timed(k, spent), *rest) for k, *rest in c.fns]
  try:
    n = 0
    end = time.perf_counter() + 0.1 * reps
    while time.perf_counter() < end or n < reps:
      fn(); n += 1
  finally:
    for c in realize._cache.values(): c.fns = saved.get(id(c), c.fns)
  return spent[0] / n


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--only", default="", help="comma-separated workload ids, e.g. W2,W7")
  p.add_argument("--reps", type=int, default=5)
  args = p.parse_args(argv)
  only = {s.strip() for s in args.only.split(",") if s.strip()}
  print(bench.cpu_line())
  print(f"{'workload':26s} {'numpy':>10s} {'whole':>10s} {'kernels':>10s} {'python':>10s} {'ratio':>7s} "
        f"{'kernels':>8s}")
  for w in bench.workloads(False):
    if only and w.name.split()[0] not in only: continue
    _, tn = bench.timeit(w.numpy, args.reps)
    _, tm = bench.timeit(w.minitensor, args.reps)
    tk = kernel_time(w.minitensor, args.reps)
    f = bench._fmt
    print(f"{w.name:26s} {f(tn)} {f(tm)} {f(tk)} {f(max(tm - tk, 0.0))} {tn / tm:7.2f} {tn / tk:8.2f}", flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
