"""fork safety: after the parent ran a threaded (OpenMP) kernel, forked children run kernels single-threaded
instead of waiting forever for the parent's thread pool; multiprocessing works with every start method; a fork
while another thread compiles leaves the child's caches usable. Each scenario runs in a child process with a
deadline, so a hang fails the test (and its processes are killed) instead of blocking the suite.
"""
from __future__ import annotations
import os
import shutil
import subprocess
import sys
import textwrap
import pytest
import minitensor as mt
from minitensor.backend.runtime import compiler

REPO = os.path.dirname(os.path.dirname(os.path.abspath(mt.__file__)))

# a threaded kernel: 2^18 float64 elements pass the threading threshold (checked in the generated C below)
_COMMON = textwrap.dedent("""
  import os, sys, time
  import numpy as np
  import minitensor as mt
  from minitensor.backend import runtime

  def work(seed):
    x = np.random.default_rng(seed).standard_normal(1 << 18)
    got = np.asarray(mt.exp(mt.asarray(x)) * 2.0 - mt.asarray(x))
    np.testing.assert_allclose(got, np.exp(x) * 2.0 - x, rtol=1e-12)
    return True

  def threaded_kernel_ran():
    return any("#pragma omp parallel" in k.src for ks in runtime._loaded.values() for k in ks.values())

  def wait(pid, seconds=60):
    \"\"\"The child's exit status, or kill it and fail after `seconds`.\"\"\"
    deadline = time.time() + seconds
    while time.time() < deadline:
      done, status = os.waitpid(pid, os.WNOHANG)
      if done: return os.waitstatus_to_exitcode(status)
      time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    sys.exit("child hung")
""")


def _run(tmp_path, body: str, *args: str, **env) -> str:
  script = tmp_path / "scenario.py"
  script.write_text(_COMMON + textwrap.dedent(body))
  e = {k: v for k, v in os.environ.items() if not k.startswith("MINITENSOR_")}
  # tier 1: the kernels these tests run must be OpenMP-threaded ones (tier 0's tcc code runs on one thread)
  e.update(MINITENSOR_CACHE_DIR=str(tmp_path / "cache"), MINITENSOR_TIER="1",
           PYTHONPATH=REPO + os.pathsep + e.get("PYTHONPATH", ""), **env)
  try: p = subprocess.run([sys.executable, str(script), *args], env=e, cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=240)
  except subprocess.TimeoutExpired as t: pytest.fail(f"hung: {t.stderr}")
  assert p.returncode == 0, p.stdout + p.stderr
  return p.stdout


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_pool_after_a_threaded_kernel(tmp_path, method):
  out = _run(tmp_path, """
    if __name__ == "__main__":
      import multiprocessing as mp
      assert work(0) and threaded_kernel_ran()
      with mp.get_context(sys.argv[1]).Pool(2) as pool:
        res = pool.map_async(work, range(1, 5))
        assert all(res.get(timeout=120))
      assert work(5)                    # the parent keeps its threads
      print("ok")
  """, method)
  assert out.strip() == "ok"


def test_forked_child_runs_known_and_new_threaded_kernels(tmp_path):
  out = _run(tmp_path, """
    assert work(0) and threaded_kernel_ran()
    pid = os.fork()
    if pid == 0:
      ok = work(1)
      x = np.linspace(0, 1, 1 << 18)
      ok = ok and np.allclose(np.asarray(mt.sin(mt.asarray(x)) + 1.0), np.sin(x) + 1.0, rtol=1e-12)   # compiled here
      os._exit(0 if ok and runtime._serial else 1)
    assert wait(pid) == 0 and not runtime._serial
    print("ok")
  """)
  assert out.strip() == "ok"


def test_fork_while_another_thread_compiles(tmp_path):
  """A thread is inside a compile (a slow compiler) when the main thread forks: the child's caches must not
  wait for that thread (it does not exist there); the child compiles the same graph itself."""
  started = tmp_path / "started"
  slow_cc = tmp_path / "slow_cc"
  cc = shutil.which(compiler())
  slow_cc.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && exec {cc} --version\n"
                     f"touch '{started}'\nsleep 1\nexec {cc} \"$@\"\n")
  slow_cc.chmod(0o755)
  out = _run(tmp_path, f"""
    import threading
    assert work(0) and threaded_kernel_ran()
    os.unlink({str(started)!r})
    x = np.linspace(-1, 1, 1 << 18)
    th = threading.Thread(target=lambda: np.asarray(mt.tanh(mt.asarray(x)) * 3.0))
    th.start()
    while not os.path.exists({str(started)!r}): time.sleep(0.005)
    pid = os.fork()
    if pid == 0:
      ok = np.allclose(np.asarray(mt.tanh(mt.asarray(x)) * 3.0), np.tanh(x) * 3.0, rtol=1e-12) and work(2)
      os._exit(0 if ok else 1)
    status = wait(pid)
    th.join()
    assert status == 0
    print("ok")
  """, MINITENSOR_CC=str(slow_cc))
  assert out.strip() == "ok"



@pytest.mark.parametrize("policy", ["ACTIVE", "PASSIVE"])
def test_exit_after_threaded_kernels_with_spinning_workers(tmp_path, policy):
  """The interpreter exits cleanly while OpenMP's workers are still spinning (OMP_WAIT_POLICY=ACTIVE): the kernel
  libraries stay mapped to the end, so the OpenMP runtime is not unloaded under its threads (it was: exit
  segfaulted in 4 runs of 4)."""
  for _ in range(3):
    _run(tmp_path, """
      for seed in range(3): work(seed)
      assert threaded_kernel_ran()
    """, OMP_WAIT_POLICY=policy)
