"""Symbolic kernels against concrete ones: the same functions over 8 shapes near (4096, 1024), float32.

    python benchmarks/bench_symbolic.py [--calls 15]

Per family (softmax and layernorm over the last axis, the sums over each axis, a transpose copy): the compiler
calls over all 8 shapes (an empty kernel cache), and per shape the median of `calls` calls after the first, in
minitensor and in NumPy, each library in its own process. A graph with a value over realize.SYMBOLIC_MAX elements is
lowered with symbolic sizes and opt.py's actions on symbolic extents, so each family compiles once for all of them
(issue 29's target: at most 2 compiles per family; from the second call on ahead of NumPy by 3x for softmax,
layernorm and transpose, 1x for the sums).
"""
from __future__ import annotations
import argparse
import json
import os
import subprocess
import sys
import tempfile

SHAPES = [(4096, 1024), (4093, 1021), (4000, 1000), (4100, 1030), (3968, 1056), (4111, 997), (4096, 1000),
          (4000, 1024)]
FAMILIES = ["softmax", "layernorm", "sum axis 0", "sum axis 1", "transpose"]

CHILD = r"""
import json, os, sys, time
import numpy as np
lib, calls = sys.argv[1], int(sys.argv[2])
shapes = json.loads(sys.argv[3])
if lib == "minitensor":
  import minitensor as xp
  from minitensor import nn
  from minitensor.backend.runtime import stats
  wrap, done = xp.asarray, np.asarray
  softmax = lambda a: nn.softmax(a, axis=-1)
else:
  xp = np
  wrap, done = (lambda a: a), (lambda a: a)
  def softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
def layernorm(x):
  d = x - x.mean(axis=-1, keepdims=True)
  return d / xp.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)
fns = {"softmax": softmax, "layernorm": layernorm, "sum axis 0": lambda a: a.sum(axis=0),
       "sum axis 1": lambda a: a.sum(axis=1),
       "transpose": (lambda a: a.T.copy()) if lib == "numpy" else (lambda a: a.T + 0)}
out = {"compiles": {}, "times": {}}
rng = np.random.default_rng(0)
for name, f in fns.items():
  c0 = stats.compiles if lib == "minitensor" else 0
  for shape in shapes:
    x = wrap(rng.standard_normal(shape).astype(np.float32))
    done(f(x))
    ts = []
    for _ in range(calls):
      t = time.perf_counter(); done(f(x)); ts.append(time.perf_counter() - t)
    out["times"].setdefault(name, []).append(sorted(ts)[len(ts) // 2])
  out["compiles"][name] = (stats.compiles - c0) if lib == "minitensor" else 0
print(json.dumps(out))
"""


def run(lib: str, calls: int) -> dict:
  env = dict(os.environ, MINITENSOR_CACHE_DIR=tempfile.mkdtemp(prefix="mt-sym-"))
  r = subprocess.run([sys.executable, "-c", CHILD, lib, str(calls), json.dumps(SHAPES)], env=env,
                     capture_output=True, text=True, check=True)
  return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
  ap = argparse.ArgumentParser()
  ap.add_argument("--calls", type=int, default=15)
  a = ap.parse_args()
  mt, np_ = run("minitensor", a.calls), run("numpy", a.calls)
  cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
  print(f"CPU: {cpu}, {os.cpu_count()} cores; medians of {a.calls} calls after the first, ms")
  print(f"{'family':<12} {'compiles':>8}  " + "  ".join(f"{'x'.join(map(str, s)):>9}" for s in SHAPES) +
        "   median NumPy/minitensor")
  for f in FAMILIES:
    ratios = [n / m for n, m in zip(np_["times"][f], mt["times"][f])]
    print(f"{f:<12} {mt['compiles'][f]:>8}  " + "  ".join(f"{1e3 * t:9.3f}" for t in mt["times"][f]) +
          f"   {sorted(ratios)[len(ratios) // 2]:.2f}x")
    print(f"{'  NumPy':<12} {'':>8}  " + "  ".join(f"{1e3 * t:9.3f}" for t in np_["times"][f]))


if __name__ == "__main__":
  main()
