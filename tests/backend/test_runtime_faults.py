"""Faults of the runtime: the disk cache under concurrency and damage, unusable directories and compilers,
threads, the cache counters, and 64-bit indexing of arrays past 2^31 elements.

Every test gets its own MINITENSOR_CACHE_DIR and empty memory caches (the `cache` fixture), so a kernel
is compiled anew and the counters of `stats` move only by what the test does.
"""
from __future__ import annotations
import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
import numpy as np
import pytest
import minitensor as mt
from minitensor.backend import diskcache, keys, runtime
from minitensor.backend import realize as realize_mod
from minitensor.backend.dtype import dtypes
from minitensor.backend.rangeify import lower
from minitensor.backend.render_c import index_type, render_function
from minitensor.backend.runtime import CompileError, compile_c, stats
from minitensor.backend.uop import Ops, buf
from cache_files import CACHE_ENV as _ENV
from cache_files import REPO
from cache_files import files as _files

_FUNCTIONS = ("exp", "sin", "cos", "tanh", "arctan")


def _graph(x: np.ndarray, c: float = 3.0):
  """A small fused graph of x (needs a compiled kernel) and NumPy's value of it. c is a kernel argument, not part
  of the kernel: the function applied, chosen by int(c), makes graphs of different c different kernels."""
  f = _FUNCTIONS[int(c) % len(_FUNCTIONS)]
  t = mt.asarray(x)
  return (getattr(mt, f)(t * c) + t).sum(axis=1), (getattr(np, f)(x * c) + x).sum(axis=1)


def _data(seed: int = 0, shape=(5, 7)) -> np.ndarray:
  return np.random.default_rng(seed).standard_normal(shape)


def _realize_fresh(x: np.ndarray, c: float = 3.0) -> None:
  """Realize _graph(x, c) with empty memory caches (so only the disk cache can spare a compile)."""
  runtime._loaded.clear()
  realize_mod._cache.clear()
  keys.forget()
  got, want = _graph(x, c)
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def _child_env(cache_dir) -> dict:
  env = {k: v for k, v in os.environ.items() if k not in _ENV}
  env.update(MINITENSOR_CACHE_DIR=str(cache_dir), PYTHONPATH=REPO + os.pathsep + env.get("PYTHONPATH", ""))
  return env


_CHILD = textwrap.dedent("""
  import os, sys, time
  import numpy as np
  import minitensor as mt
  from minitensor.backend.runtime import stats
  ready, go = sys.argv[1], sys.argv[2]
  open(ready, "w").close()
  while go and not os.path.exists(go): time.sleep(0.002)
  x = np.arange(35, dtype=np.float64).reshape(5, 7) / 10
  t = mt.asarray(x)
  outs = [(mt.exp(t * 0.5) + t).sum(axis=1), mt.maximum(t, 1.5) * t.max(axis=0), (t @ t.T).sum(axis=0)]
  want = [(np.exp(x * 0.5) + x).sum(axis=1), np.maximum(x, 1.5) * x.max(axis=0), (x @ x.T).sum(axis=0)]
  assert all(np.allclose(o.numpy(), w, rtol=1e-12) for o, w in zip(outs, want))
  print("ok", stats.compiles, stats.disk_hits)
""")


# ---------------------------------------------------------------------- concurrent processes
def test_four_processes_compiling_the_same_new_kernels_all_succeed(cache, tmp_path):
  """Released together (a start file), 4 processes compile the same kernels into one empty cache directory."""
  go = tmp_path / "go"
  procs = [subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path / f"ready{k}"), str(go)], env=_child_env(cache),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(4)]
  deadline = time.time() + 60
  while not all((tmp_path / f"ready{k}").exists() for k in range(4)) and time.time() < deadline: time.sleep(0.01)
  go.touch()
  results = [p.communicate(timeout=120) for p in procs]
  for p, (out, err) in zip(procs, results):
    assert p.returncode == 0 and out.startswith("ok"), err
  assert _files(cache, ".so") and not [f for f in _files(cache) if ".tmp-" in f]     # no temporary left behind


def test_install_waits_for_the_cache_lock(cache):
  """Entries are moved into place under the cache's lock: while another holder has it, a finished compile is
  loaded (from its build directory) but not installed; once the lock is free it is, with a valid checksum."""
  src = "void k(float* restrict a) { a[0] = 42.0f; }\n"
  key = runtime._key(src, runtime.FLAGS, runtime.compiler())
  path = os.path.join(runtime.cache_dir(), key[:2], key + ".so")
  c0, done = stats.compiles, []
  with diskcache._locked(runtime.cache_dir()):
    th = threading.Thread(target=lambda: done.append(compile_c(src)["k"]))
    th.start()
    deadline = time.time() + 60
    while stats.compiles == c0 and time.time() < deadline: time.sleep(0.01)
    assert stats.compiles == c0 + 1 and not os.path.exists(path) and not done
  th.join(60)
  assert done and diskcache.valid(path)
  a = np.zeros(1, np.float32)
  runtime.call(done[0], [a])
  assert a[0] == 42.0


# ---------------------------------------------------------------------- damaged entries
@pytest.mark.parametrize("damage", ["truncated", "corrupted"])
def test_damaged_cache_entry_is_rebuilt_not_loaded(cache, damage):
  x = _data(1)
  _realize_fresh(x)
  (so,) = _files(cache, ".so")
  data = open(so, "rb").read()
  if damage == "truncated": data = data[:len(data) // 2]
  else:
    mid = len(data) // 2
    data = data[:mid] + bytes(b ^ 0xFF for b in data[mid:mid + 64]) + data[mid + 64:]
  with open(so + ".new", "wb") as f: f.write(data)
  os.replace(so + ".new", so)                            # a new file: the loaded library stays mapped intact
  c0, h0 = stats.compiles, stats.disk_hits
  _realize_fresh(x)
  assert (stats.compiles - c0, stats.disk_hits - h0) == (1, 0)
  assert diskcache.valid(so) and open(so, "rb").read() != data


def test_missing_checksum_is_rebuilt(cache):
  x = _data(2)
  _realize_fresh(x)
  (sha,) = _files(cache, ".sha256")
  os.unlink(sha)
  c0 = stats.compiles
  _realize_fresh(x)
  assert stats.compiles - c0 == 1 and os.path.exists(sha)


# ---------------------------------------------------------------------- unusable directories, NOCACHE, size bound
def test_uncreatable_cache_dir_falls_back_with_one_warning(cache, tmp_path, monkeypatch):
  """A path below a regular file cannot be created, even by root (chmod would not stop root)."""
  blocker = tmp_path / "a_file"
  blocker.write_text("not a directory")
  monkeypatch.setenv("MINITENSOR_CACHE_DIR", str(blocker / "cache"))
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for k in range(3):
      _realize_fresh(_data(k), c=1.0 + k)                # three different kernels, three compiles
  rw = [w for w in caught if issubclass(w.category, RuntimeWarning)]
  assert len(rw) == 1 and "cache" in str(rw[0].message)
  assert _files(diskcache._fallback[0], ".so")


def test_nocache_writes_nothing_to_the_cache_dir(cache, monkeypatch):
  monkeypatch.setenv("MINITENSOR_NOCACHE", "1")
  c0 = stats.compiles
  _realize_fresh(_data(3))
  _realize_fresh(_data(3))                               # this process: still answered without a new compile
  assert stats.compiles - c0 == 1
  assert not cache.exists() or _files(cache) == []


def test_tiny_cache_bytes_evicts_old_entries(cache, monkeypatch):
  monkeypatch.setenv("MINITENSOR_CACHE_BYTES", "1")
  for k in range(4):
    _realize_fresh(_data(k), c=1.0 + k)
    assert len(_files(cache, ".so")) <= 2


def test_small_cache_bytes_bounds_the_directory(cache, monkeypatch):
  """A bound of about two entries: the directory never holds more than two, and the newest survives."""
  _realize_fresh(_data(0), c=1.0)
  (first,) = _files(cache, ".so")
  monkeypatch.setenv("MINITENSOR_CACHE_BYTES", str(int(os.path.getsize(first) * 2.5)))
  for k in range(1, 5):
    time.sleep(0.01)                                     # distinct mtimes: a well-defined least recently used
    _realize_fresh(_data(k), c=1.0 + k)
    assert 1 <= len(_files(cache, ".so")) <= 2
  assert not os.path.exists(first)


# ---------------------------------------------------------------------- compiler failures
def test_missing_compiler_raises_compile_error_naming_the_variable(cache, monkeypatch):
  monkeypatch.setenv("MINITENSOR_CC", "/nonexistent/cc")
  t = mt.asarray(_data(4)) * 7.0 + 1.0                   # construction does not compile
  with pytest.raises(CompileError, match="MINITENSOR_CC"):
    t.numpy()


def test_c_syntax_error_reports_compiler_message_and_saved_source(cache):
  src = "void broken(float* a) { a[0] = ; }\n"
  with pytest.raises(CompileError) as e:
    compile_c(src)
  assert "error" in str(e.value) and e.value.source_path and os.path.exists(e.value.source_path)
  assert e.value.source_path in str(e.value) and open(e.value.source_path).read() == src


# ---------------------------------------------------------------------- threads
def test_eight_threads_realizing_one_new_graph_compile_it_once(cache):
  n = 8
  xs = [_data(10 + k) for k in range(n)]
  barrier, got, errors = threading.Barrier(n), [None] * n, []
  def work(k):
    try:
      t = mt.asarray(xs[k])
      r = mt.maximum(t * 2.0 + 1.0, t.max(axis=0))
      barrier.wait()
      got[k] = r.numpy()
    except Exception as e:                               # noqa: BLE001  (reported below)
      errors.append(e)
  c0 = stats.compiles
  threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
  for th in threads: th.start()
  for th in threads: th.join(60)
  assert not errors, errors
  for x, g in zip(xs, got): np.testing.assert_allclose(g, np.maximum(x * 2 + 1, x.max(axis=0)), rtol=1e-12)
  assert stats.compiles - c0 == 1


def test_threads_compiling_different_graphs_run_their_compilers_at_once(cache, tmp_path, monkeypatch):
  """A compiler that logs when each call starts and ends (and takes its time): two threads realizing two new
  graphs have their compiler calls in flight together (neither waits for the other's compile)."""
  log, cc = tmp_path / "calls.log", tmp_path / "slowcc"
  real = runtime.compiler()
  cc.write_text(f'#!/bin/sh\ncase "$1" in --version) exec "{real}" "$@";; esac\n'
                f'echo start >> "{log}"\nsleep 1\n"{real}" "$@"; rc=$?\necho end >> "{log}"\nexit $rc\n')
  cc.chmod(0o755)
  monkeypatch.setenv("MINITENSOR_CC", str(cc))
  barrier, got, errors = threading.Barrier(2), [None, None], []
  def work(k):
    try:
      g, want = _graph(_data(30 + k), c=4.0 + k)
      barrier.wait()
      got[k] = (g.numpy(), want)
    except Exception as e:                               # noqa: BLE001  (reported below)
      errors.append(e)
  threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
  for th in threads: th.start()
  for th in threads: th.join(120)
  assert not errors, errors
  for g, want in got: np.testing.assert_allclose(g, want, rtol=1e-12)
  assert log.read_text().split() == ["start", "start", "end", "end"]


# ---------------------------------------------------------------------- cache counters
def test_same_graph_on_new_data_is_a_graph_cache_hit(cache):
  _, _ = _graph(_data(5))
  got, want = _graph(_data(5))
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
  c0, h0 = stats.compiles, stats.graph_hits
  got, want = _graph(_data(6))
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
  assert (stats.compiles - c0, stats.graph_hits - h0) == (0, 1)


def test_element_reads_of_a_realized_tensor_compile_nothing(cache):
  x = np.arange(24, dtype=np.float32).reshape(4, 6) * 1.5
  t = (mt.asarray(x) + 1).realize()
  c0, m0 = stats.compiles, stats.graph_misses
  assert float(t[1, 2]) == x[1, 2] + 1 and t[3, 4].item() == x[3, 4] + 1
  assert int(t.reshape(-1)[3]) == int(x.reshape(-1)[3] + 1)
  assert t.tolist() == (x + 1).tolist() and t[2].tolist() == (x[2] + 1).tolist()
  assert (stats.compiles - c0, stats.graph_misses - m0) == (0, 0)


def test_new_process_with_warm_disk_cache_does_not_compile(cache, tmp_path):
  def run():
    p = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "ready"), ""], env=_child_env(cache),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()
  first, second = run(), run()
  assert first[0] == second[0] == "ok"
  assert int(first[1]) >= 1 and int(second[1]) == 0 and int(second[2]) >= 1


# ---------------------------------------------------------------------- 64-bit indexing
BIG = 2**31 + 8


@pytest.mark.parametrize("case", ["elementwise", "sum", "row_sums"])
def test_kernels_over_more_than_2_31_elements_index_with_int64(case):
  """Built as UOps and only lowered and rendered: nothing of 2 GiB is allocated."""
  x = buf(0, BIG, dtypes.uint8)
  if case == "elementwise": root = x + x.const_like(1)
  elif case == "sum": root = x.reduce(Ops.ADD, 1)
  else: root = x.reshape((8, BIG // 8)).reduce(Ops.MAX, 1)
  sink = lower(root, buf(1, max(int(np.prod(root.shape)), 1), root.dtype))
  assert index_type(sink) == "int64_t"
  assert "int64_t ridx" in render_function(sink, "big")


def test_small_kernels_index_with_int():
  x = buf(0, 1000, dtypes.uint8)
  sink = lower(x + x.const_like(1), buf(1, 1000, dtypes.uint8))
  assert index_type(sink) == "int" and "int64_t" not in render_function(sink, "small")
