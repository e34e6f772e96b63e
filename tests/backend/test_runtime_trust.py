"""The disk cache's trust rules (see diskcache's docstring and the README's threat model): planted libraries in
directories others can write never run, entries that are not what they claim are rebuilt, eviction touches
only completed entries, build directories never outlive their build. A library that could crash the process is
realized in a child process, so a crash fails the test instead of killing pytest.
"""
from __future__ import annotations
import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
import time
import warnings
import numpy as np
import pytest
import minitensor as mt
from minitensor.backend import diskcache, runtime
from minitensor.backend.runtime import compile_c, stats
from cache_files import CACHE_ENV as _ENV
from cache_files import REPO
from cache_files import files as _files


def _env(cache_dir, **extra) -> dict:
  env = {k: v for k, v in os.environ.items() if k not in _ENV}
  env.update(MINITENSOR_CACHE_DIR=str(cache_dir), PYTHONPATH=REPO + os.pathsep + env.get("PYTHONPATH", ""), **extra)
  return env


# a child realizing some of a few graphs (named by letters) and checking them against NumPy; prints its compiles
# and disk hits
_CHILD = textwrap.dedent("""
  import sys
  import numpy as np
  import minitensor as mt
  from minitensor.backend.runtime import stats
  x = np.linspace(-2, 2, 35).reshape(5, 7)
  t = mt.asarray(x)
  graphs = {"a": (lambda m, v: (m.exp(v * 0.5) + v).sum(axis=1)), "b": (lambda m, v: (m.sin(v) * v).max(axis=0)),
            "c": (lambda m, v: m.tanh(v) - v * v), "d": (lambda m, v: (m.cos(v) + 1.0).sum(axis=0))}
  for name in sys.argv[1]:
    np.testing.assert_allclose(np.asarray(graphs[name](mt, t)), graphs[name](np, x), rtol=1e-12, atol=1e-12)
  print(stats.compiles, stats.disk_hits)
""")


def _child(cache_dir, graphs: str, **env) -> tuple[int, int]:
  """Realize graphs in a new process: (compiles, disk hits)."""
  p = subprocess.run([sys.executable, "-c", _CHILD, graphs], env=_env(cache_dir, **env), cwd=REPO,
                     capture_output=True, text=True, timeout=180)
  assert p.returncode == 0, f"child failed (exit {p.returncode}):\n{p.stderr}"
  c, h = map(int, p.stdout.split())
  return c, h


def _entry(cache_dir) -> str:
  (so,) = _files(cache_dir, ".so")
  return so


def _replace(path: str, data: bytes) -> None:
  """Write a new file at path (never into the old one: this process may have it mapped as a library)."""
  with open(path + ".new", "wb") as f: f.write(data)
  os.replace(path + ".new", path)


def _plant(so: str, marker) -> None:
  """Replace the entry at so by a library whose constructor creates `marker` when it is loaded; it embeds the
  entry's key and its checksum file matches, so only the directory checks can keep it from running."""
  key = os.path.basename(so)[:-3]
  src, out = so[:-3] + ".plant.c", so[:-3] + ".plant.so"
  with open(src, "w") as f:
    f.write(f'#include <stdio.h>\nconst char mt_cache_key[] = "{key}";\n__attribute__((constructor)) static void '
            f'planted(void) {{ FILE* f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
  subprocess.run([runtime.compiler(), "-shared", "-fPIC", "-o", out, src], check=True)
  data = open(out, "rb").read()
  for p in (src, out): os.unlink(p)
  _replace(so, data)
  os.chmod(so, 0o600)
  _replace(so[:-3] + ".sha256", f"{hashlib.sha256(data).hexdigest()} {len(data)}\n".encode())
  assert diskcache.valid(so)         # the entry itself is perfect: owned by us, checksum and size right


_SRC = "void k(float* restrict a) {{ a[0] = a[0] * 2.0f + {c}f; }}\n"


def _reload(src: str, c: float) -> list:
  """compile_c(src) with an empty memory cache, run on [3.0] against NumPy; the runtime warnings it gave."""
  runtime._loaded.clear()
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    k = compile_c(src)["k"]
  a = np.array([3.0], np.float32)
  want = a * np.float32(2.0) + np.float32(c)
  runtime.call(k, [a])
  np.testing.assert_array_equal(a, want)
  return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


# ---------------------------------------------------------------------- planted libraries never run
@pytest.mark.parametrize("where", ["world-writable", "foreign-owned", "world-writable-parent"])
def test_planted_library_in_an_untrusted_directory_never_runs(cache, tmp_path, monkeypatch, where):
  if where == "foreign-owned" and os.geteuid() != 0: pytest.skip("chown to another user needs root")
  parent = tmp_path / "shared"
  cache_dir = parent / "cache"
  monkeypatch.setenv("MINITENSOR_CACHE_DIR", str(cache_dir))
  src = _SRC.format(c=1.5)
  compile_c(src)
  marker = tmp_path / "planted-code-ran"
  _plant(_entry(cache_dir), marker)
  if where == "world-writable": os.chmod(cache_dir, 0o777)
  elif where == "foreign-owned": os.chown(cache_dir, 65534, 65534)
  else: os.chmod(parent, 0o777)
  c0, h0 = stats.compiles, stats.disk_hits
  warned = _reload(src, 1.5)
  assert not marker.exists(), "the planted library was loaded"
  assert (stats.compiles - c0, stats.disk_hits - h0, len(warned)) == (1, 0, 1) and \
    "cache directory not used" in warned[0]
  assert ("owned by uid 65534" if where == "foreign-owned" else "writable by group or others") in warned[0]
  assert _reload(_SRC.format(c=2.5), 2.5) == []            # one warning per process


@pytest.mark.parametrize("damage", ["foreign-owned", "group-writable", "symlink"])
def test_planted_entry_file_is_rebuilt_not_loaded(cache, tmp_path, damage):
  """The directory is private but the entry file is not ours, writable by others or a link: never loaded."""
  if damage == "foreign-owned" and os.geteuid() != 0: pytest.skip("chown to another user needs root")
  src = _SRC.format(c=0.5)
  compile_c(src)
  so = _entry(cache)
  marker = tmp_path / "planted-code-ran"
  _plant(so, marker)
  if damage == "foreign-owned": os.chown(so, 65534, 65534)
  elif damage == "group-writable": os.chmod(so, 0o664)
  else:
    os.replace(so, so + ".real")
    os.symlink(so + ".real", so)
  c0 = stats.compiles
  assert _reload(src, 0.5) == [] and stats.compiles - c0 == 1
  assert not marker.exists() and diskcache.valid(so)


# ---------------------------------------------------------------------- entries that are not what they claim
def test_swapped_entries_rebuild_and_compute_their_own_kernel(cache):
  """Kernel A's .so and checksum copied over kernel B's: the checksum matches, the embedded key does not; the
  wrong library is closed again and B is built and loaded."""
  src_a, src_b = _SRC.format(c=1.0), _SRC.format(c=7.0)
  compile_c(src_a)
  (a,) = _files(cache, ".so")
  compile_c(src_b)
  (b,) = set(_files(cache, ".so")) - {a}
  for ext in (".so", ".sha256"): _replace(b[:-3] + ext, open(a[:-3] + ext, "rb").read())
  assert diskcache.valid(b)
  c0, h0 = stats.compiles, stats.disk_hits
  _reload(src_b, 7.0)
  assert (stats.compiles - c0, stats.disk_hits - h0) == (1, 0)
  _reload(src_a, 1.0)
  _reload(src_b, 7.0)
  assert (stats.compiles - c0, stats.disk_hits - h0) == (1, 2)      # both entries are right again


@pytest.mark.parametrize("cut", [0.5, 0.99])
def test_truncated_entry_with_matching_checksum_is_rebuilt(tmp_path, cut):
  """A short .so whose checksum file was rewritten to match: cut at half, the loader faults on the missing pages
  of a segment (SIGBUS, measured); cut at 99 %, only the section headers are gone and it would load. Both are
  rejected before dlopen and rebuilt (in a child process: a crash must fail the test, not kill pytest)."""
  cache_dir = tmp_path / "cache"
  _child(cache_dir, "c")
  so = _entry(cache_dir)
  data = open(so, "rb").read()
  data = data[:int(len(data) * cut)]
  with open(so, "wb") as f: f.write(data)
  with open(so[:-3] + ".sha256", "w") as f: f.write(f"{hashlib.sha256(data).hexdigest()} {len(data)}\n")
  assert not diskcache.valid(so)
  assert _child(cache_dir, "c") == (1, 0)
  assert diskcache.valid(so) and os.path.getsize(so) > len(data)


def test_entry_of_the_wrong_size_is_rebuilt(cache):
  x = np.linspace(0, 1, 6)
  np.asarray(mt.exp(mt.asarray(x)) + 3.0)
  so = _entry(cache)
  digest, size = open(so[:-3] + ".sha256").read().split()
  with open(so[:-3] + ".sha256", "w") as f: f.write(f"{digest} {int(size) + 1}\n")
  assert not diskcache.valid(so)


def test_key_embedded_in_every_library(cache):
  src = "void k(float* restrict a) { a[0] = 1.0f; }\n"
  key = runtime._key(src, runtime.FLAGS, runtime.compiler())
  lib = compile_c(src)["k"].lib
  assert runtime.native().string(lib, "mt_cache_key") == key.encode()


def test_key_includes_the_target_cpu(monkeypatch):
  src = "void k(float* restrict a) { a[0] = 1.0f; }\n"
  k0 = runtime._key(src, runtime.FLAGS, runtime.compiler())
  assert runtime.target_cpu() and ("flags=" in runtime.target_cpu() or "Features=" in runtime.target_cpu()
                                   or not os.path.exists("/proc/cpuinfo"))
  monkeypatch.setattr(runtime, "_cpu", ["another cpu"])
  assert runtime._key(src, runtime.FLAGS, runtime.compiler()) != k0


# ---------------------------------------------------------------------- directories
def test_created_levels_are_private(tmp_path, monkeypatch):
  monkeypatch.setenv("MINITENSOR_CACHE_DIR", str(tmp_path / "new" / "deeper" / "cache"))
  monkeypatch.delenv("MINITENSOR_NOCACHE", raising=False)
  monkeypatch.setattr(diskcache, "_fallback", [])
  old = os.umask(0o022)
  try: d = runtime.cache_dir()
  finally: os.umask(old)
  assert d.startswith(str(tmp_path)) and not diskcache._fallback
  p = d
  while p != str(tmp_path):
    assert os.stat(p).st_mode & 0o777 == 0o700, p
    p = os.path.dirname(p)


def test_sticky_world_writable_ancestor_is_accepted(tmp_path, monkeypatch):
  """Like /tmp: others may write the ancestor but not rename what is ours in it."""
  shared = tmp_path / "tmp"
  shared.mkdir()
  os.chmod(shared, 0o1777)
  monkeypatch.setenv("MINITENSOR_CACHE_DIR", str(shared / "cache"))
  monkeypatch.delenv("MINITENSOR_NOCACHE", raising=False)
  monkeypatch.setattr(diskcache, "_fallback", [])
  assert runtime.cache_dir().startswith(str(shared)) and not diskcache._fallback


def test_cache_subdirectory_that_is_a_file_falls_back_with_a_warning(cache):
  src = "void k(float* restrict a) { a[0] += 5.0f; }\n"
  key = runtime._key(src, runtime.FLAGS, runtime.compiler())
  (cache / f"v{runtime.VERSION}").mkdir(parents=True, exist_ok=True)   # (the key's compiler line is an entry)
  (cache / f"v{runtime.VERSION}" / key[:2]).write_text("not a directory")
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    k = compile_c(src)["k"]
    k2 = compile_c(src.replace("5.0f", "6.0f"))["k"]
  assert len([w for w in caught if issubclass(w.category, RuntimeWarning)]) == 1
  a = np.zeros(1, np.float32)
  runtime.call(k, [a]); runtime.call(k2, [a])
  assert a[0] == 11.0 and _files(diskcache._fallback[0], ".so")


def test_version_directory_that_is_a_file_falls_back(cache):
  cache.mkdir()
  (cache / f"v{runtime.VERSION}").write_text("not a directory")
  with pytest.warns(RuntimeWarning, match="cache directory not used"):
    d = runtime.cache_dir()
  assert d == diskcache._fallback[0]


# ---------------------------------------------------------------------- eviction and build directories
def test_eviction_spares_build_directories_and_the_new_entry(cache, monkeypatch):
  """Other processes' build directories (even with an old .so inside) are not entries: never evicted. Stale
  ones (over an hour old) are swept; the entry just built survives a bound it alone exceeds."""
  compile_c("void k(float* restrict a) { a[0] = 1.0f; }\n")
  shard = os.path.dirname(_entry(cache))
  live, stale = os.path.join(shard, ".build-live"), os.path.join(shard, ".build-stale")
  for d in (live, stale):
    os.mkdir(d)
    with open(os.path.join(d, "kernel.so"), "wb") as f: f.write(b"x" * 100)
    os.utime(os.path.join(d, "kernel.so"), (0, 0))      # the least recently used .so of all
  old = time.time() - 2 * diskcache.STALE_BUILD_SECONDS
  os.utime(stale, (old, old))
  monkeypatch.setenv("MINITENSOR_CACHE_BYTES", "1")
  compile_c("void k(float* restrict a) { a[0] = 2.0f; }\n")
  assert os.path.exists(os.path.join(live, "kernel.so")) and not os.path.exists(stale)
  entries = [f for f in _files(cache, ".so") if ".build-" not in f]
  assert len(entries) == 1 and diskcache.valid(entries[0])


def test_a_full_cache_is_not_walked_at_every_install(cache, monkeypatch):
  """Past its bound the cache is evicted to EVICT_TO of it, so the installs after an eviction only add to the byte
  count until the bound is reached again (evicting to just below the bound walked every entry at every install)."""
  root = diskcache.cache_dir()
  size, walks, n = 1000, [], 300
  real = diskcache._entries
  monkeypatch.setattr(diskcache, "_entries", lambda r: walks.append(r) or real(r))
  monkeypatch.setenv("MINITENSOR_CACHE_BYTES", str(100 * size))           # 100 entries
  for k in range(n):
    path = os.path.join(root, f"{k % 256:02x}", f"{k:032x}.plan")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    diskcache.install(path, b"x" * size)
  entries = _files(cache, ".plan")
  assert int(100 * diskcache.EVICT_TO) <= len(entries) <= 100
  assert f"{n - 1:032x}.plan" in {os.path.basename(e) for e in entries}           # the newest entry stays
  with open(os.path.join(root, "usage")) as f: assert int(f.read()) == size * len(entries)
  assert len(walks) <= 2 + (n - 100) // int(100 * (1 - diskcache.EVICT_TO))       # one walk per 10 installs


def _four_children(cache_dir, **env) -> None:
  """4 processes realizing the graphs a, b, c, d in four orders at once, each checking NumPy's values."""
  procs = [subprocess.Popen([sys.executable, "-c", _CHILD, g], env=_env(cache_dir, **env), cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE) for g in ("abcd", "bcda", "cdab", "dabc")]
  for p in procs:
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err


def test_usage_count_is_exact_after_concurrent_builds(tmp_path):
  """4 processes build overlapping sets of kernels (and their run plans) into one cache: the byte count kept in
  `usage` equals the size of the entries, the compilers' version lines, headers and the sources' digest included (a
  lost or doubled addition would show)."""
  cache_dir = tmp_path / "cache"
  _four_children(cache_dir)
  (usage,) = _files(cache_dir, "usage")
  sos, plans, ccs = _files(cache_dir, ".so"), _files(cache_dir, ".plan"), _files(cache_dir, ".cc")
  hs = _files(cache_dir, ".h")                   # (tcc's preprocessed headers: tcc.preprocessed_headers)
  digests = _files(cache_dir, ".digest")         # (the backend sources' digest: plans._backend_digest)
  assert len(sos) == 4 and len(plans) == 4 and len(ccs) <= 2 and len(hs) <= 1 and len(digests) == 1
  with open(usage) as f: assert int(f.read()) == sum(os.path.getsize(f) for f in sos + plans + ccs + hs + digests)


def test_one_entry_bound_loses_nothing_across_four_processes(tmp_path):
  """MINITENSOR_CACHE_BYTES=1: every install evicts every other entry, while 4 processes race to build and load
  the same kernels in different orders. Each realization still succeeds with NumPy's values."""
  cache_dir = tmp_path / "cache"
  _four_children(cache_dir, MINITENSOR_CACHE_BYTES="1")
  assert len(_files(cache_dir, ".so") + _files(cache_dir, ".plan")) == 1 and \
    not [f for f in _files(cache_dir) if ".build-" in f or ".tmp-" in f]


def test_cache_cleared_during_a_build_still_gives_the_result(cache, monkeypatch):
  """`python -m minitensor cache clear` between a compile and its install: the kernel is already loaded from its
  build directory, so the realization succeeds; only the entry is not stored. (The clear comes at the library's
  install, not at any lock: tcc's header text, made on a thread of its own, may be installed during the compile.)"""
  install, cleared = diskcache.install_library, []
  def clear_first(*args):
    cleared.append(args[0])
    shutil.rmtree(cache, ignore_errors=True)
    return install(*args)
  monkeypatch.setattr(diskcache, "install_library", clear_first)
  x = np.linspace(0, 1, 10)         # (a structure no other test of these files computes: it compiles here)
  np.testing.assert_allclose(np.asarray(mt.expm1(mt.log1p(mt.asarray(x)) * 0.5)), np.expm1(np.log1p(x) * 0.5),
                             rtol=1e-12)
  assert cleared and not _files(cache, ".so")     # (the next write, a plan or tcc's header text, makes the cache anew)


def test_interrupted_compile_leaves_no_build_directory(tmp_path):
  """Ctrl-C while the compiler runs: the compiler is killed and its build directory removed."""
  cache_dir, started = tmp_path / "cache", tmp_path / "started"
  slow_cc = tmp_path / "slow_cc"
  slow_cc.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && exec echo slow-cc\ntouch '{started}'\nexec sleep 60\n")
  slow_cc.chmod(0o755)
  code = "import numpy as np, minitensor as mt\nnp.asarray(mt.exp(mt.asarray(np.ones(4))))\n"
  p = subprocess.Popen([sys.executable, "-c", code], env=_env(cache_dir, MINITENSOR_CC=str(slow_cc)), cwd=REPO,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  deadline = time.time() + 120
  while not started.exists() and time.time() < deadline and p.poll() is None: time.sleep(0.02)
  assert started.exists() and [f for f in _files(cache_dir) if ".build-" in f]
  p.send_signal(2)
  _, err = p.communicate(timeout=60)
  assert p.returncode != 0 and "KeyboardInterrupt" in err
  assert not [os.path.join(dp, d) for dp, ds, _ in os.walk(cache_dir) for d in ds if d.startswith(".build-")]


def test_temporary_cache_is_removed_at_exit_but_not_by_a_forked_child(tmp_path):
  code = ("import os, numpy as np, minitensor as mt\nfrom minitensor.backend import diskcache\n"
          "np.asarray(mt.exp(mt.asarray(np.ones(3))))\nif os.fork() == 0: raise SystemExit(0)\nos.wait()\n"
          "assert os.listdir(diskcache._fallback[0])\nprint(diskcache._fallback[0])\n")
  p = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path / "cache", MINITENSOR_NOCACHE="1"), cwd=REPO,
                     capture_output=True, text=True, timeout=120)
  assert p.returncode == 0, p.stderr
  assert p.stdout.strip() and not os.path.exists(p.stdout.strip()) and not (tmp_path / "cache").exists()


def test_builtin_hashes_are_hashlibs():
  """The cache's SHA-256 and BLAKE2b (CPython's own modules, without OpenSSL) give hashlib's digests, whole and fed
  in parts, so entries written by either check under the other."""
  data = np.random.default_rng(0).bytes(100_003)
  assert diskcache.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
  h = diskcache.sha256()
  for k in range(0, len(data), 4096): h.update(data[k:k + 4096])
  assert h.hexdigest() == hashlib.sha256(data).hexdigest()
  assert diskcache.blake2b(data, digest_size=16).digest() == hashlib.blake2b(data, digest_size=16).digest()
