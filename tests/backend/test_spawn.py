"""spawn.run, the compiler's process runner: exit statuses, both outputs in full, stdin closed, the deadline killing
the whole process group, and a program that cannot be started."""
from __future__ import annotations
import os
import time
import pytest
from minitensor.backend import spawn


def test_status_and_both_outputs():
  r = spawn.run(["sh", "-c", "echo out; echo err >&2; exit 3"], 10.0)
  assert (r.returncode, r.stdout, r.stderr) == (3, "out\n", "err\n")


def test_a_signal_is_a_negative_status():
  assert spawn.run(["sh", "-c", "kill -9 $$"], 10.0).returncode == -9


def test_outputs_beyond_a_pipe_buffer_on_both_streams_at_once():
  """Each stream gets 1 MB, interleaved: reading one pipe to its end first would deadlock on the other."""
  r = spawn.run(["sh", "-c", "for i in 1 2 3 4; do head -c 262144 /dev/zero | tr '\\0' a; "
                             "head -c 262144 /dev/zero | tr '\\0' b >&2; done"], 30.0)
  assert r.returncode == 0 and r.stdout == "a" * (1 << 20) and r.stderr == "b" * (1 << 20)


def test_stdin_is_empty():
  """A program reading stdin meets its end at once (it does not wait for the user's terminal)."""
  r = spawn.run(["cat"], 10.0)
  assert (r.returncode, r.stdout) == (0, "")


def test_the_prefix_is_taken_out_of_the_output(tmp_path):
  d = os.path.join(str(tmp_path), "")
  r = spawn.run(["sh", "-c", f"echo {d}kernel.c:3: error >&2"], 10.0, d)
  assert r.stderr == "kernel.c:3: error\n"


def test_the_deadline_kills_the_whole_group(tmp_path):
  """A program whose child (like a compiler driver's cc1) holds the pipes: both are killed at the deadline, and the
  call returns soon after it."""
  pid_file = tmp_path / "child"
  t = time.monotonic()
  with pytest.raises(spawn.Timeout, match="did not finish within 0.3 s") as e:
    spawn.run(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], 0.3)
  assert time.monotonic() - t < 10 and e.value.timeout == 0.3
  child = int(pid_file.read_text())
  for _ in range(200):          # (killed at once: gone, or a zombie until whoever inherited it reaps it)
    try:
      os.kill(child, 0)
      with open(f"/proc/{child}/stat") as f:
        if f.read().rsplit(")", 1)[1].split()[0] == "Z": break
    except (ProcessLookupError, FileNotFoundError): break
    time.sleep(0.01)
  else: pytest.fail(f"the program's child {child} outlived the deadline")


def test_a_missing_program_is_an_oserror():
  with pytest.raises(FileNotFoundError): spawn.run(["minitensor-no-such-compiler"], 10.0)
