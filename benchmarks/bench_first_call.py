"""First calls of new kernels in a new process with an empty cache, per compiler tier (backend/tiers.py):
a + b on 1,000 elements, softmax of (100, 100), conv2d of (2, 3, 32, 32) by (8, 3, 3, 3), each including the
lowering, with tcc (tier 0, when installed), with the C compiler at -O1 (tier 0 without tcc) and at -O3 (tier 1).

    python benchmarks/bench_first_call.py [runs]

Prints the median over `runs` new processes (default 5) of each first call, and of it the compiler's part.
"""
from __future__ import annotations
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

_CHILD = """
import time, numpy as np, minitensor as mt
from minitensor import nn
from minitensor.backend.runtime import stats
a, b = mt.asarray(np.random.rand(1000)), mt.asarray(np.random.rand(1000))
x = mt.asarray(np.random.rand(100, 100).astype(np.float32))
img, w = (mt.asarray(np.random.rand(2, 3, 32, 32).astype(np.float32)),
          mt.asarray(np.random.rand(8, 3, 3, 3).astype(np.float32)))
for f in (lambda: a + b, lambda: nn.softmax(x, axis=-1), lambda: nn.conv2d(img, w)):
  c = stats.compile_seconds
  t = time.perf_counter(); np.asarray(f()); t = time.perf_counter() - t
  print(t, stats.compile_seconds - c)
"""
CASES = ["a + b (1,000)", "softmax (100, 100)", "conv2d (2, 3, 32, 32)"]


def first_calls(env: dict) -> list[tuple[float, float]]:
  with tempfile.TemporaryDirectory() as cache:
    out = subprocess.run([sys.executable, "-c", _CHILD], env={**os.environ, **env, "MINITENSOR_CACHE_DIR": cache},
                         capture_output=True, text=True, check=True).stdout.split()
  return [(float(out[2 * k]), float(out[2 * k + 1])) for k in range(len(CASES))]


def main() -> None:
  from minitensor.bench import bytecode
  runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
  bytecode()         # (a user's processes after the first have it: run.py's first calls are measured so too)
  setups = {"tier 1 (-O3)": {"MINITENSOR_TIER": "1"},
            "tier 0, C compiler -O1": {"MINITENSOR_TIER": "0", "MINITENSOR_CC": shutil.which("cc") or "cc"}}
  if shutil.which("tcc"): setups["tier 0, tcc"] = {"MINITENSOR_TIER": "0"}
  print(f"{'':26s}" + "".join(f"{c:>30s}" for c in CASES))
  for name, env in setups.items():
    res = [first_calls(env) for _ in range(runs)]
    cells = [f"{statistics.median(r[k][0] for r in res) * 1e3:8.1f} ms "
             f"({statistics.median(r[k][1] for r in res) * 1e3:6.1f} cc)"
             for k in range(len(CASES))]
    print(f"{name:26s}" + "".join(f"{c:>30s}" for c in cells))


if __name__ == "__main__":
  main()
