"""W1-W9 of two source trees of minitensor side by side: the same harness, alternating processes.

    python benchmarks/bench_trees.py OLD_TREE NEW_TREE [--runs 6] [--reps 5] [--only W4,W9]

A tree is a checkout's root (`git worktree add /tmp/old 13e3dee` makes one). Each run starts one process per tree,
in turn (old first in odd runs, new first in even ones), with that tree first on PYTHONPATH, an empty kernel cache
and OpenBLAS on one thread, and times minitensor's version of every workload there with this checkout's harness
(minitensor/bench.py's `child`, --reps timed loops of about 20 ms per workload), so both trees are measured by the
same code. Prints per workload every run's time, the medians and NEW / OLD. (With 5 loops a process's W1 N=1024
figure is the median of 5 loops of 1-2 calls; on a noisy host --reps 15 steadies it.)
"""
from __future__ import annotations
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "minitensor", "bench.py")


def run(tree: str, only: list[str], reps: int = 5) -> dict[str, float]:
  """{workload: minitensor's median seconds per call} of one process importing minitensor from `tree`."""
  code = (f"import json, runpy; c = runpy.run_path({os.path.abspath(HARNESS)!r}, run_name='bench_trees')['child']"
          f"('minitensor', False, {only!r}, {reps}); print(json.dumps(c))")
  with tempfile.TemporaryDirectory(prefix="minitensor-trees-") as cache:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), OPENBLAS_NUM_THREADS="1", MINITENSOR_CACHE_DIR=cache)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=tempfile.gettempdir())
  if p.returncode != 0: raise RuntimeError(f"bench_trees: the process of {tree} failed:\n{p.stderr[-4000:]}")
  return {row: med for row, (_, med) in json.loads(p.stdout.strip().splitlines()[-1]).items()}


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("old")
  ap.add_argument("new")
  ap.add_argument("--runs", type=int, default=6)
  ap.add_argument("--reps", type=int, default=5, help="timed loops per workload in each process")
  ap.add_argument("--only", default="", help="comma-separated workload ids, e.g. W4,W9")
  a = ap.parse_args()
  only = [w for w in a.only.split(",") if w]
  times: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
  for k in range(a.runs):
    # (the order turns every run: the second process of a pair ran W6 about 4% slower than the first, whichever
    # tree it was, on a shared Zen 4)
    for side, tree in (("old", a.old), ("new", a.new))[::1 if k % 2 == 0 else -1]:
      for row, t in run(tree, only, a.reps).items(): times[side].setdefault(row, []).append(t)
    print(f"run {k + 1} of {a.runs} done", file=sys.stderr, flush=True)
  fmt = lambda t: f"{t * 1e6:.1f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms"
  print(f"| workload | old ({a.runs} runs) | median | new ({a.runs} runs) | median | new / old |")
  print("|---|---|---|---|---|---|")
  for row, old in times["old"].items():
    new = times["new"][row]
    mo, mn = statistics.median(old), statistics.median(new)
    print(f"| {row} | {' '.join(fmt(t).split()[0] for t in old)} | {fmt(mo)} | "
          f"{' '.join(fmt(t).split()[0] for t in new)} | {fmt(mn)} | {mn / mo:.2f} |")


if __name__ == "__main__":
  main()
