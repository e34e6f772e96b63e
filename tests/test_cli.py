"""The command line and the inspection API, run as a user runs them (subprocesses)."""
import os
import re
import subprocess
import sys
from pathlib import Path
import numpy as np
import pytest
import minitensor as mt

ROWSUM = (Path(__file__).parent / "rowsum.uir").read_text()      # section 6.7 of the course, as in test_uir


ROOT = Path(__file__).resolve().parents[1]        # the children import this checkout's minitensor


def run(*args, env=None, check=True):
  p = subprocess.run([sys.executable, "-m", "minitensor", *args], capture_output=True, text=True, timeout=300,
                     env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, cwd=ROOT)
  if check: assert p.returncode == 0, p.stderr
  return p


def test_demo_checks_against_numpy_and_prints_a_kernel():
  out = run().stdout
  assert "softmax (256, 512) float32 matches NumPy: True" in out
  assert "matches NumPy: True" in out.split("\n")[1]
  assert "void k0(" in out and re.search(r"for \((int|int64_t) ridx0", out) and "NumPy" in out.splitlines()[-1]


def test_compile_rowsum_prints_c_that_compiles(tmp_path):
  f = tmp_path / "rowsum.uir"
  f.write_text(ROWSUM)
  c = run("compile", str(f)).stdout
  assert "void rowsum(" in c and "acc0 = 0.0f;" in c
  (tmp_path / "k.c").write_text(c)
  cc = subprocess.run(["cc", "-Wall", "-Werror", "-std=gnu99", "-c", "-o", str(tmp_path / "k.o"),
                       str(tmp_path / "k.c")],
                      capture_output=True, text=True)
  assert cc.returncode == 0, cc.stderr
  assert run("compile", str(f), "--emit", "uir").stdout.strip() == ROWSUM.strip()
  loops = run("compile", str(f), "--emit", "loops").stdout
  assert "open range 0 (3)" in loops and "open range 1 (4)" in loops


def test_compile_shaped_program_with_opts(tmp_path):
  f = tmp_path / "gemm.uir"
  f.write_text("%0 = buffer 64 : dtype=f32 slot=0\n%1 = buffer 64 : dtype=f32 slot=1\n%2 = reshape %0, (8, 1, 8)\n"
               "%3 = reshape %1, (8, 8)\n%4 = permute %3, (1, 0)\n%5 = reshape %4, (1, 8, 8)\n%6 = mul %2, %5\n"
               "%7 = reduce %6 : op=add pop=1\n")
  c = run("compile", str(f), "--opt", "upcast=1:4,thread=0").stdout
  assert "#pragma omp parallel for" in c and "data2[" in c


@pytest.mark.parametrize("args, text", [
  (["compile", "{bad}"], "line 2: unknown op 'mull'"),
  (["compile", "/nonexistent/file.uir"], "No such file"),
  (["compile", "{bad}", "--opt", "spin=3"], "line 2"),
])
def test_errors_are_one_line_and_exit_2(tmp_path, args, text):
  bad = tmp_path / "bad.uir"
  bad.write_text("%0 = buffer 4 : dtype=f32 slot=0\n%1 = mull %0, %0\n")
  p = run(*[a.format(bad=bad) for a in args], check=False)
  assert p.returncode == 2 and "Traceback" not in p.stderr
  assert len(p.stderr.strip().splitlines()) == 1 and text in p.stderr


def test_bad_arguments_exit_2():
  for args in (["nonsense"], ["compile"], ["cache", "wipe"], ["compile", "x.uir", "--emit", "asm"]):
    p = run(*args, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_help_everywhere():
  for args in ([], ["demo"], ["compile"], ["cache"], ["bench"], ["tune"]):
    assert run(*args, "--help").stdout.lower().startswith("usage")


def test_cache_info_and_clear(tmp_path):
  env = {"MINITENSOR_CACHE_DIR": str(tmp_path)}
  subprocess.run([sys.executable, "-c", "import minitensor as mt; (mt.ones(7) * 3).realize()"],
                 env={**os.environ, **env}, check=True)
  info = run("cache", "info", env=env).stdout
  assert str(tmp_path) in info and "kernels: 1" in info and "run plans: 1" in info
  assert "removed 1 kernel(s), 1 run plan(s) and 0 tuning record(s)" in run("cache", "clear", env=env).stdout
  assert "kernels: 0" in run("cache", "info", env=env).stdout


def test_bench_quick_runs_selected_workloads():
  # (each library in a process of its own, and minitensor's calls interleaved with NumPy's in one more)
  lines = run("bench", "--quick", "--only", "W3,W9").stdout.splitlines()
  rows = [x for x in lines if x[:2] in ("W1", "W3", "W9")]
  assert [r[:2] for r in rows] == ["W3", "W9"]
  assert "interleaved" in lines[1] and "first call" in lines[1]
  assert all(" own " in r for r in rows)


def test_bench_names_the_cpu_and_rates_dispatch_against_its_target():
  from minitensor.backend.machine import machine
  lines = run("bench", "--quick", "--only", "W9").stdout.splitlines()
  m = machine()
  assert lines[0].startswith("CPU: ") and f"{m.cores} core" in lines[0] and f"{m.vector_bits}-bit" in lines[0]
  if m.x86: assert ("AVX-512" if m.vector_bytes == 64 else "AVX2" if m.vector_bytes == 32 else "SSE2") in lines[0]
  w9 = [x for x in lines if x.startswith("W9")]
  assert len(w9) == 1 and "NumPy's time (target: at most 25x)" in w9[0]


def test_debug_logs_one_line_per_kernel_and_can_be_silenced():
  code = ("import logging, numpy as np, minitensor as mt\n"
          "x = mt.asarray(np.ones((8, 8), np.float32))\n"
          "(x * 2).realize(); (x * 2).realize()\n"
          "logging.getLogger('minitensor').setLevel(logging.WARNING)\n"
          "(x * 3).realize()\n")
  p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                     env={**os.environ, "MINITENSOR_DEBUG": "1"})
  lines = [ln for ln in p.stderr.splitlines() if ln.startswith("k0")]
  assert len(lines) == 2 and "compiled in" in lines[0] and "cache hit" in lines[1] and "GB/s" in lines[0]
  p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                     env={**os.environ, "MINITENSOR_DEBUG": "2"})
  assert "void k0(" in p.stderr


def test_debug_logs_each_new_programs_first_call_by_stage(tmp_path):
  """MINITENSOR_DEBUG=1: one line per new program with its first call's stages in order; with an empty cache every
  stage, with the plans and kernels on disk no lowering (no import, kernelize, lower or render) and no
  compile."""
  from minitensor.backend.realize import STAGES
  code = ("import numpy as np, minitensor as mt\n"
          "x = mt.asarray(np.ones((8, 8), np.float32))\n"
          "(x * 2).realize(); (x * 2).realize(); (x + 1).realize()\n")
  env = {**os.environ, "MINITENSOR_DEBUG": "1", "MINITENSOR_CACHE_DIR": str(tmp_path)}
  def stages() -> list[dict[str, float]]:
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stderr
    lines = [ln.split("): ", 1)[1] for ln in err.splitlines() if "first call of a program" in ln]
    return [{p.split()[0]: float(p.split()[1]) for p in ln.split(", ")} for ln in lines]
  cold, warm = stages(), stages()
  assert len(cold) == len(warm) == 2
  for s in cold: assert list(s) == list(STAGES) and min(s.values()) >= 0 and s["compile"] > 0
  lowering = ("import", "kernelize", "lower", "render")
  for s in warm: assert list(s) == [k for k in STAGES if k not in lowering] and s["compile"] == 0


def test_explain_and_to_dot():
  x = mt.asarray(np.ones((16, 32), np.float32))
  e = (x - x.max(axis=1, keepdims=True)).explain()
  assert len(e.kernels) == 1 and e.kernels[0].iterations == e.total_iterations > 16 * 32
  assert "void k0(" in str(e) and e.inputs == (((16, 32), "float32"),)
  dot = mt.to_dot(x + 1)
  assert dot.startswith("digraph") and "ADD" in dot and "->" in dot
  x.realize()
  assert mt.explain(x).kernels == ()
