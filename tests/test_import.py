"""`import minitensor` stays cheap: the heavy modules load where they are first needed (a new process each)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
import numpy as np
import pytest

ROOT = str(Path(__file__).resolve().parent.parent)
HEAVY = ("cffi", "pycparser", "_cffi_backend", "hypothesis", "scipy", "matplotlib", "numpy.random",
         "minitensor.testing", "minitensor.testing_strategies", "minitensor.testing_chains", "minitensor.random",
         "minitensor.nn", "minitensor.__main__", "minitensor.bench")
# what a first realize of a small graph does not need either: the standard library's process and file helpers
# (spawn.py, diskcache.py) and the lowerings of concrete graphs (lowerings.py)
FIRST_REALIZE = ("subprocess", "tempfile", "shutil", "minitensor.backend.gemm", "minitensor.backend.attention",
                 "minitensor.backend.search", "minitensor.backend.opt", "minitensor.backend.scan",
                 "minitensor.backend.split")

_CHILD = textwrap.dedent("""
  import json, sys
  import numpy as np
  heavy, first = %r
  loaded = lambda: [m for m in heavy if m in sys.modules]
  import minitensor as mt
  seen = {"import": loaded()}
  x = mt.asarray(np.arange(6.0).reshape(2, 3))
  seen["value"] = (x * 2 + 1).sum(axis=1).numpy().tolist()
  seen["realize"] = loaded()
  seen["first"] = [m for m in first if m in sys.modules]
  seen["rand"] = mt.random.default_rng(0).random(3).numpy().tolist()
  seen["random"] = loaded()
  seen["relu"] = mt.nn.relu(x - 2).numpy().tolist()
  seen["testing"] = mt.testing.__name__
  seen["last"] = loaded()
  print(json.dumps(seen))
""")


def test_import_loads_no_heavy_module_until_it_is_used(tmp_path):
  env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
         "MINITENSOR_CACHE_DIR": str(tmp_path / "cache")}
  p = subprocess.run([sys.executable, "-c", _CHILD % ((HEAVY, FIRST_REALIZE),)], capture_output=True, text=True,
                     env=env, cwd=ROOT, timeout=300)
  assert p.returncode == 0, p.stderr
  seen = json.loads(p.stdout)
  assert seen["import"] == []
  x = np.arange(6.0).reshape(2, 3)
  assert seen["value"] == (x * 2 + 1).sum(axis=1).tolist()
  assert seen["realize"] == ["_cffi_backend"]        # the first kernel loads cffi's backend (never its C parser)
  assert seen["first"] == []
  assert seen["rand"] == np.random.default_rng(0).random(3).tolist()
  assert set(seen["random"]) == {"_cffi_backend", "numpy.random", "minitensor.random"}
  assert seen["relu"] == np.maximum(x - 2, 0).tolist()
  assert seen["testing"] == "minitensor.testing"
  unused = {"cffi", "pycparser", "scipy", "matplotlib", "minitensor.__main__", "minitensor.bench"}
  assert set(seen["last"]) == set(HEAVY) - unused


def test_lazy_submodules_are_attributes_and_listed():
  import minitensor as mt
  for name in ("random", "nn", "testing"):
    assert name in dir(mt) and getattr(mt, name).__name__ == f"minitensor.{name}"
  with pytest.raises(AttributeError, match="no_such_name"): mt.no_such_name
