"""spawn: a compiler run as a child process, without the subprocess module.

Importing subprocess (with signal, selectors and locale) takes about 6 ms, a sixth of a script's first realize with
tcc. A compile needs little of it: start the program in a session of its own (so its children, cc1, as and ld, are
in its process group), collect what it writes, wait for it with a deadline, and kill the whole group at the deadline
or when the wait is interrupted (Ctrl-C). posix_spawn has no working directory, so file operands are absolute paths;
`run` takes out the prefix `strip` from the output, so a message names `kernel.c` as the compiler was told it.
"""
from __future__ import annotations
import os
import select
import time


class Finished:
  """A run that ended: its exit status (negative: the signal that ended it) and its output, decoded. (A plain class:
  a NamedTuple costs 0.1-0.3 ms to define, in a first realize.)"""
  __slots__ = ("args", "returncode", "stdout", "stderr")

  def __init__(self, args: list[str], returncode: int, stdout: str, stderr: str):
    self.args, self.returncode, self.stdout, self.stderr = args, returncode, stdout, stderr


class Timeout(Exception):
  """The program ran past its deadline: its process group was killed."""
  def __init__(self, cmd: list[str], timeout: float):
    super().__init__(f"{cmd[0]} did not finish within {timeout:g} s")
    self.cmd, self.timeout = cmd, timeout


def run(cmd: list[str], timeout: float, strip: str = "") -> Finished:
  """Run cmd (found on PATH) with stdin from /dev/null; its status and output once it has ended. Timeout after
  `timeout` seconds; OSError when it cannot be started. Any exception while waiting kills its group first."""
  out_r, out_w = os.pipe()              # (not inheritable: only the duplicates on 1 and 2 reach the child)
  err_r, err_w = os.pipe()
  try:
    pid = os.posix_spawnp(cmd[0], cmd, os.environ, setsid=True,
                          file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                                        (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)])
  except BaseException:
    for fd in (out_r, out_w, err_r, err_w): os.close(fd)
    raise
  os.close(out_w)
  os.close(err_w)
  try: status, out, err = _wait(pid, out_r, err_r, cmd, timeout)
  except BaseException:
    _kill(pid)
    raise
  finally:
    os.close(out_r)
    os.close(err_r)
  text = lambda b: b.decode(errors="replace").replace(strip, "") if strip else b.decode(errors="replace")  # noqa: E731
  return Finished(cmd, os.waitstatus_to_exitcode(status), text(out), text(err))


def _wait(pid: int, out_r: int, err_r: int, cmd: list[str], timeout: float) -> tuple[int, bytes, bytes]:
  """Read both pipes to their ends and reap the child, by the deadline; its wait status and the bytes."""
  deadline = time.monotonic() + timeout
  chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
  poll = select.poll()
  for fd in chunks: poll.register(fd, select.POLLIN)
  ends = len(chunks)
  while ends:
    if (left := deadline - time.monotonic()) <= 0: raise Timeout(cmd, timeout)
    for fd, _ in poll.poll(left * 1e3):
      if data := os.read(fd, 1 << 16): chunks[fd].append(data)
      else:
        poll.unregister(fd)
        ends -= 1
  # both pipes closed: the program (and its children) have exited or are exiting
  while (r := os.waitpid(pid, os.WNOHANG))[0] == 0:
    if time.monotonic() >= deadline: raise Timeout(cmd, timeout)
    time.sleep(2e-4)
  return r[1], b"".join(chunks[out_r]), b"".join(chunks[err_r])


def _kill(pid: int) -> None:
  """Kill the group of child pid (its session) and reap the child, if it has not been reaped."""
  import signal
  try: os.killpg(pid, signal.SIGKILL)
  except OSError: pass
  try: os.waitpid(pid, 0)
  except ChildProcessError: pass
