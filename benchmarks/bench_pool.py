"""Result memory (issue 30): W3's 16 MiB result, alone in a loop and interleaved with NumPy work that makes and
frees its own 16 MiB temporaries, minitensor and NumPy each in its own process.

    python benchmarks/bench_pool.py [--base PATH]

A result of at least buffers.MIN_BYTES is lent from the pool of backend/buffers.py and comes back when the caller
drops it, so a loop maps no new pages (each 4 KiB page faults and is zeroed on its first write). With --base, a
third process runs minitensor from another checkout (PATH, e.g. a `git worktree` of an older commit) for the
before/after figure. Prints the median of 30 timed calls of each.
"""
from __future__ import annotations
import json
import os
import subprocess
import sys
import time

_CHILD = r"""
import json, sys, time
import numpy as np
lib = sys.argv[1]
n = 1 << 22
rng = np.random.default_rng(0)
a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
c = rng.standard_normal(1 << 21)
if lib == "numpy":
  w3 = lambda: a * 2 + b * 3 - a * b
else:
  import minitensor as mt
  from minitensor.backend.realize import settle
  A, B = mt.asarray(a), mt.asarray(b)
  w3 = lambda: np.asarray(A * 2 + B * 3 - A * B)
def numpy_work():
  return float((np.sin(c) + np.cos(c))[0])      # NumPy's own 16 MiB temporaries, freed
for _ in range(20): w3(); numpy_work()
if lib != "numpy": settle()
def median(ts): return sorted(ts)[len(ts) // 2] * 1e3
alone, mixed = [], []
for _ in range(30):
  t = time.perf_counter(); r = w3(); alone.append(time.perf_counter() - t)
for _ in range(30):
  numpy_work()
  t = time.perf_counter(); r = w3(); mixed.append(time.perf_counter() - t)
  del r
print(json.dumps({"alone": median(alone), "mixed": median(mixed)}))
"""


def run(lib: str, path: str | None = None) -> dict:
  env = dict(os.environ)
  if path: env["PYTHONPATH"] = path
  out = subprocess.run([sys.executable, "-c", _CHILD, lib], env=env, capture_output=True, text=True, check=True,
                       cwd=path or None)
  return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
  base = sys.argv[sys.argv.index("--base") + 1] if "--base" in sys.argv else None
  rows = [("NumPy", run("numpy")), ("minitensor", run("minitensor"))]
  if base: rows.append(("minitensor (base)", run("minitensor", os.path.abspath(base))))
  print(f"{'W3 a*2+b*3-a*b, 4M float32':28s} {'alone':>9s} {'with NumPy work':>16s}")
  for name, r in rows: print(f"{name:28s} {r['alone']:7.2f}ms {r['mixed']:14.2f}ms")
  print(f"(median of 30 calls each, {time.strftime('%Y-%m-%d')})")


if __name__ == "__main__":
  main()
