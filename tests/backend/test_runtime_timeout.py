"""MINITENSOR_COMPILE_TIMEOUT: a compiler that hangs is stopped (with the processes it started), its build
directory removed, and the realize raises a CompileError naming the variable; a bad value fails before compiling.
Ctrl-C during a long kernel interrupts its realize once the kernel returns, leaving nothing broken."""
import os
import subprocess
import sys
import time
import numpy as np
import pytest
import minitensor as mt
from minitensor.backend import runtime
from minitensor.backend.runtime import CompileError, stats
from cache_files import CACHE_ENV, REPO, files


def _graph(seed: int):
  x = np.random.default_rng(seed).standard_normal((4, 6))
  return (mt.exp(mt.asarray(x) * 2.0) + 1).sum(axis=1), (np.exp(x * 2.0) + 1).sum(axis=1)


def _hanging_compiler(tmp_path):
  """A compiler that answers --version as the real one and otherwise starts a child that sleeps, records both
  process ids and waits for it."""
  cc, pids = tmp_path / "hangcc", tmp_path / "pids"
  cc.write_text(f'#!/bin/sh\ncase "$1" in --version) exec "{runtime.compiler()}" "$@";; esac\n'
                f'sleep 300 &\necho $$ $! > "{pids}"\nwait\n')
  cc.chmod(0o755)
  return cc, pids


def _running(pid: int) -> bool:
  """pid is a live process (not gone, not a zombie waiting to be reaped)."""
  try:
    with open(f"/proc/{pid}/stat") as f: return f.read().rpartition(")")[2].split()[0] not in "ZX"
  except FileNotFoundError: return False


def test_hung_compiler_is_stopped_with_a_compile_error_naming_the_variable(cache, tmp_path, monkeypatch):
  cc, pids = _hanging_compiler(tmp_path)
  monkeypatch.setenv("MINITENSOR_CC", str(cc))
  monkeypatch.setenv("MINITENSOR_COMPILE_TIMEOUT", "0.5")
  c0 = stats.compiles
  got, _ = _graph(0)
  with pytest.raises(CompileError, match="MINITENSOR_COMPILE_TIMEOUT") as e:
    got.numpy()
  assert "0.5 s" in str(e.value) and e.value.source_path and os.path.isfile(e.value.source_path)
  assert stats.compiles == c0
  assert not [p for p in files(cache) if "/.build-" in p] and not [d for d, _, _ in os.walk(cache) if ".build-" in d]
  shell, sleeper = map(int, pids.read_text().split())
  for _ in range(100):                           # SIGKILL is delivered at once; reaping may lag a moment
    if not (_running(shell) or _running(sleeper)): break
    time.sleep(0.05)
  assert not _running(shell) and not _running(sleeper)
  # the same graph compiles once a working compiler is back (nothing stuck in the caches)
  monkeypatch.delenv("MINITENSOR_CC")
  got, want = _graph(0)
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
  assert stats.compiles == c0 + 1


@pytest.mark.parametrize("value", ["0", "-3", "ten", "nan", "inf", "1e400"])
def test_bad_timeout_raises_value_error_before_compiling(cache, monkeypatch, value):
  monkeypatch.setenv("MINITENSOR_COMPILE_TIMEOUT", value)
  c0 = stats.compiles
  got, _ = _graph(1)
  with pytest.raises(ValueError, match="MINITENSOR_COMPILE_TIMEOUT"):
    got.numpy()
  assert stats.compiles == c0 and not files(cache, ".so")


@pytest.mark.parametrize("value, seconds", [("", 120.0), ("30", 30.0), (" 2.5 ", 2.5)])
def test_good_timeout_values(cache, monkeypatch, value, seconds):
  monkeypatch.setenv("MINITENSOR_COMPILE_TIMEOUT", value)
  assert runtime.compile_timeout() == seconds
  got, want = _graph(2)
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


_LONG_KERNEL = """
import os, signal, sys, threading, time
import numpy as np, minitensor as mt
x = np.linspace(0, 1, 1 << 21)
def f(m, v):
  for _ in range(40): v = m.sin(v) * 1.25 + 0.5
  return v
t = mt.asarray(x)
t0 = time.perf_counter(); np.asarray(f(mt, t)); first = time.perf_counter() - t0      # compiled and run
t0 = time.perf_counter(); np.asarray(f(mt, t)); run = time.perf_counter() - t0        # the kernel alone
threading.Timer(run / 3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.perf_counter()
try:
  np.asarray(f(mt, t))
  print("not interrupted")
except KeyboardInterrupt:
  print("interrupted", f"{(time.perf_counter() - t0) / run:.2f}")
np.testing.assert_allclose(np.asarray(f(mt, t)), f(np, x), rtol=1e-12, atol=1e-12)   # nothing left broken
print("ok")
"""


def test_ctrl_c_during_a_long_kernel_interrupts_the_realize_and_breaks_nothing(tmp_path):
  """SIGINT a third into a kernel's run: a KeyboardInterrupt from that realize, once the kernel has returned (the
  documented limit: kernels are not stopped midway), and the same graph realizes right afterwards."""
  env = {k: v for k, v in os.environ.items() if k not in CACHE_ENV}
  env.update(MINITENSOR_CACHE_DIR=str(tmp_path / "cache"), MINITENSOR_TIER="1",
             PYTHONPATH=REPO + os.pathsep + env.get("PYTHONPATH", ""))
  p = subprocess.run([sys.executable, "-c", _LONG_KERNEL], env=env, cwd=REPO, capture_output=True, text=True,
                     timeout=300)
  assert p.returncode == 0, p.stderr
  said = p.stdout.split()
  assert said[0] == "interrupted" and said[-1] == "ok", p.stdout
  assert float(said[1]) < 3.0         # delivered when the kernel returned, not after further work
