"""Start-up of a script: `import numpy`, then `import minitensor` (the time beyond NumPy's), then the first realize of a
small graph, `(mt.asarray(np.ones(10)) + 1).numpy()`, with a cold (empty) and a warm cache directory, with tcc as
tier 0 (when installed) and with the C compiler alone (MINITENSOR_CC set). Each figure is the median over `runs`
new processes (default 5).

    python benchmarks/bench_startup.py [runs]

Python compiles a module's source on every import when it may not write bytecode (PYTHONDONTWRITEBYTECODE): the
figures are printed both ways (with bytecode: minitensor's written to a temporary PYTHONPYCACHEPREFIX by a first
process; NumPy's is always read as installed).
"""
from __future__ import annotations
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

_CHILD = """
import time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import minitensor as mt
t2 = time.perf_counter()
(mt.asarray(np.ones(10)) + 1).numpy()
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def _run(env: dict) -> list[float]:
  out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True).stdout
  return [float(x) * 1e3 for x in out.split()]


def measure(env: dict, runs: int, warm: bool) -> list[float]:
  """Medians (ms) of [import numpy, import minitensor, first realize]."""
  rows = []
  with tempfile.TemporaryDirectory() as root:
    for k in range(runs):
      cache = os.path.join(root, "warm" if warm else f"cold{k}")
      if warm and k == 0: _run({**env, "MINITENSOR_CACHE_DIR": cache})
      rows.append(_run({**env, "MINITENSOR_CACHE_DIR": cache}))
  return [statistics.median(c) for c in zip(*rows)]


def main() -> None:
  runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
  base = {**os.environ}
  base.pop("MINITENSOR_CC", None)
  base.pop("MINITENSOR_FAST_CC", None)
  cc = shutil.which("gcc") or shutil.which("cc") or "cc"
  print(f"{'bytecode':9} {'tier 0':8} {'cache':5} {'numpy ms':>9} {'minitensor ms':>14} {'first realize ms':>17}")
  with tempfile.TemporaryDirectory() as pyc:
    for bytecode in (False, True):
      # (a PYTHONPYCACHEPREFIX hides the bytecode installed beside NumPy's sources: set only where it is written)
      env = {**base, "PYTHONPYCACHEPREFIX": pyc} if bytecode else {**base, "PYTHONDONTWRITEBYTECODE": "1"}
      if bytecode: env.pop("PYTHONDONTWRITEBYTECODE", None)
      for name, extra in (("tcc", {}), ("cc alone", {"MINITENSOR_CC": cc})):
        if name == "tcc" and not shutil.which("tcc"): continue
        for warm in (False, True):
          n, m, r = measure({**env, **extra}, runs, warm)
          print(f"{'yes' if bytecode else 'no':9} {name:8} {'warm' if warm else 'cold':5} {n:9.1f} {m:14.1f} {r:17.1f}")


if __name__ == "__main__":
  main()
