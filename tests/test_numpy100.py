"""benchmarks/numpy100.py, the numpy-100 runner: on a small collection of its format it counts a match, a
difference, a raise and a timing answer, so a wrong value cannot pass as a match."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KTX = '''< q1
Random integers, then their sum (★☆☆)

< h1
hint: np.random.randint

< a1
Z = np.random.randint(0, 10, 5)
print(Z, Z.sum())
from numpy.lib.stride_tricks import sliding_window_view
W = sliding_window_view(np.arange(6.0), 3).mean(axis=-1)

< q2
A name that differs

< a2
print(np.__name__)

< q3
A datetime array

< a3
Z = np.arange('2016-07', '2016-08', dtype='datetime64[D]')

< q4
Timing

< a4
x = np.ones(3)
%timeit x * x
'''


def test_runner_counts_each_outcome(tmp_path, capsys):
  spec = importlib.util.spec_from_file_location("numpy100", ROOT / "benchmarks" / "numpy100.py")
  runner = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(runner)
  path = tmp_path / "exercises100.ktx"
  path.write_text(KTX, encoding="utf-8")
  assert runner.main([str(path), "-v"]) == 0
  lines = capsys.readouterr().out.splitlines()
  assert lines[0].split()[:2] == ["1", "match"]
  assert lines[1].split()[:2] == ["2", "differ"] and "'numpy' vs 'minitensor'" in lines[1]
  assert lines[2].split()[:2] == ["3", "raise"] and "TypeError" in lines[2]
  assert lines[-1].startswith("3 answers (+1 timing): 1 run and match, 1 differ, 1 raise")
  assert runner.for_minitensor("import numpy as np\nfrom numpy.lib import x\nimport numpy; numpy.info(1)") == \
    "import minitensor as np\nfrom minitensor.lib import x\nimport minitensor as numpy; numpy.info(1)"
