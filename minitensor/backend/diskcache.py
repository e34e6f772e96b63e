"""diskcache: where compiled kernels and run plans live on disk, and when an entry may be trusted.

    cache_dir()                 this version's cache directory (a private temporary one when it is not trusted)
    entry_dir(key)              the directory (shard) holding key's entry
    valid(so)                   the library at so may be loaded (the `entries` rule below, checked before dlopen)
    read_private(path)          an entry file's bytes when its owner, mode and type are trusted (run plans too)
    elf_complete(data)          data is a whole ELF object (checked before a fresh build is loaded too)
    build_dir(shard)            a private build directory for one compile, removed however the build ends
    install_library(path, ...)  a built library moved into its entry, counted, the cache evicted to its bound
    install(path, data)         the same for a small entry (a run plan, plans.py; a search result, search.py)

$MINITENSOR_CACHE_DIR, else $XDG_CACHE_HOME/minitensor, else ~/.cache/minitensor, holding
`v<version>/<key[:2]>/<key>.so` and `<key>.sha256` (the object's digest and size), and the run plans that
find them without lowering a graph (`<key>.plan`, plans.py), keep a search's result (`<key>.tune`, search.py), a
compiler's version line (`<key>.cc`, runtime.py), tcc's preprocessed system headers (`<key>.h`, runtime.py) or the
digest of the backend's sources (`<key>.digest`, plans.py).
Keys are made by the writers (runtime's also hashes VERSION). The threat model is in the README; the rules that
enforce it:

  directories  levels minitensor creates are made 0700; the cache directory and the levels below it are used
               only when owned by this user and not writable by group or others, every ancestor only when owned
               by this user or root and not writable by others unless sticky (/tmp). Otherwise, or when a level
               cannot be made (a file in its place), one warning and a private temporary directory.
  entries      loaded only when the file is a regular file owned by this user, not writable by others, of the
               recorded size and checksum, and a complete ELF object (a short file would SIGBUS in the loader).
               Each library also embeds its key (`mt_cache_key`), which runtime compares after loading and
               before any call: a mismatch (another entry's file in its place) closes it and rebuilds the entry.
               Run plans and tuning records are read under the same file rules (read_private) and carry their
               own checksum and key (plans.py).
  builds       compile in a private `.build-*` directory and load from there, then move into place under the
               cache's lock (`.lock`, flock): the checksum last, the byte count (`usage`) updated and, over
               $MINITENSOR_CACHE_BYTES (default 1 GiB), the least recently used completed entries evicted, never
               a build directory nor the entry just built. A build directory is removed however its build ends;
               those older than an hour (a killed process) are swept.

  full disk    a build that fails for want of space (ENOSPC, EDQUOT, a compiler saying so, or one that failed with
               under FULL_BYTES free) raises Full; the runtime then builds in the private temporary directory, and
               so does every later build of this process (one warning, as for an unusable directory).

MINITENSOR_NOCACHE=1 keeps compiled objects in a temporary directory for this process only (removed at exit).
"""
from __future__ import annotations
import atexit
import contextlib
import errno
import fcntl
import os
import re
import stat
import struct
import threading
import time
import warnings
from typing import Callable, Iterator


def _builtin_hash(module: str, name: str):
  """hashlib's `name` from CPython's own module, else hashlib's: `import hashlib` loads OpenSSL first (_hashlib,
  about 2.6 ms of a script's first realize, Sapphire Rapids), and a kernel's few kilobytes hash as fast either way."""
  import importlib
  for m in module.split():
    try: return getattr(importlib.import_module(m), name)
    except ImportError: pass
  import hashlib
  return getattr(hashlib, name)


sha256 = _builtin_hash("_sha2 _sha256", "sha256")         # (_sha2 from CPython 3.12 on)
blake2b = _builtin_hash("_blake2", "blake2b")


VERSION = "0.1.0"

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "kib": 1 << 10, "mib": 1 << 20,
          "gib": 1 << 30, "tib": 1 << 40, "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12}


def cache_limit() -> int:
  """$MINITENSOR_CACHE_BYTES (default 1 GiB): an integer with an optional suffix, K/M/G/T and KiB/MiB/GiB/TiB
  binary, KB/MB/GB/TB decimal (case-insensitive). Anything else raises ValueError naming the variable."""
  s = os.environ.get("MINITENSOR_CACHE_BYTES", "").strip()
  if not s: return 1 << 30
  m = re.fullmatch(r"(\d+)\s*([a-zA-Z]*)", s)
  if m is None or m[2].lower() not in _UNITS:
    raise ValueError(f"MINITENSOR_CACHE_BYTES={s!r} is not a size: expected a number of bytes with an optional "
                     f"suffix K, M, G, T, KiB, MiB, GiB, TiB (binary) or KB, MB, GB, TB (decimal), e.g. 512M")
  return int(m[1]) * _UNITS[m[2].lower()]


_fallback: list[str] = []
_removed: list[str] = []      # the temporary directory, once it is removed at exit
_fallback_lock = threading.Lock()


def _new_lock_in_child() -> None:
  global _fallback_lock
  _fallback_lock = threading.Lock()     # a thread that held it in the parent does not exist in a forked child


os.register_at_fork(after_in_child=_new_lock_in_child)


def _temp_dir(why: str | None = None) -> str:
  """This process's private temporary cache directory, made on first use and removed at exit. `why` the cache
  directory was not used: said in one warning per process (the first use)."""
  with _fallback_lock:
    if _removed: raise FileNotFoundError(errno.ENOENT, "the temporary kernel cache is removed", _removed[0])
    if first := not _fallback:
      import tempfile  # (imported where a cache is written: a process reading its kernels needs none)
      _fallback.append(tempfile.mkdtemp(prefix="minitensor-"))
      atexit.register(_remove_temp, _fallback[0], os.getpid())
  if first and why:
    warnings.warn(f"minitensor: {why}; kernels are cached in a private temporary directory instead",
                  RuntimeWarning, stacklevel=4)
  return _fallback[0]


def _remove_temp(d: str, pid: int) -> None:
  """At exit (not a forked child's): remove d, again while a daemon thread still writing there (tcc's headers, a
  background compile) makes an entry in it; _temp_dir gives it to nobody from now on."""
  if os.getpid() != pid: return
  with _fallback_lock: _removed.append(d)
  for _ in range(100):
    remove_tree(d)
    if not os.path.exists(d): return
    time.sleep(0.01)


def _mkdir_private(d: str) -> None:
  """Create d and its missing parents, each 0700 (os.makedirs gives parents the default mode)."""
  if os.path.isdir(d): return
  parent = os.path.dirname(d)
  if parent != d: _mkdir_private(parent)
  try: os.mkdir(d, 0o700)
  except FileExistsError: pass


def _distrust(d: str, own: bool) -> str | None:
  """Why the directory d must not hold libraries this process loads, or None. own: a cache level (this user's,
  writable by no one else); else an ancestor (this user's or root's, writable by others only if sticky)."""
  st = os.lstat(d)
  mode = stat.S_IMODE(st.st_mode)
  if not stat.S_ISDIR(st.st_mode): return f"{d} is not a directory"
  if st.st_uid != os.geteuid() and (own or st.st_uid != 0): return f"{d} is owned by uid {st.st_uid}"
  if mode & 0o022 and (own or not mode & stat.S_ISVTX): return f"{d} is writable by group or others (mode {mode:o})"
  return None


class Full(OSError):
  """A cache write failed for want of space (ENOSPC, EDQUOT): the build is to be repeated in a temporary directory."""


FULL_BYTES = 1 << 20      # a compile that fails with less than this free on its filesystem is taken for a full disk
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_full: list[str] = []     # the cache directory that ran out of space (this process builds in its temporary one since)


def out_of_space(d: str, e: OSError | None = None, said: str = "") -> bool:
  """Whether a failure writing in d (the OSError e, or a compiler's message `said`) is a full disk or quota: the
  error's errno, the message naming it, or less than FULL_BYTES left on d's filesystem."""
  if e is not None and e.errno in _FULL_ERRNOS: return True
  if any(os.strerror(n) in said for n in _FULL_ERRNOS): return True
  try: st = os.statvfs(d)
  except OSError: return False
  return st.f_bavail * st.f_frsize < FULL_BYTES


def full(d: str) -> None:
  """Record that the cache directory holding d ran out of space: cache_dir() is the temporary directory from now on
  (one warning)."""
  if not _full: _full.append(d)
  _temp_dir(f"cache directory not used: no space left in {d}")


def cache_dir() -> str:
  """This version's cache directory, created (0700) where missing; a private temporary directory when it cannot
  be made or written, is not trusted (see the module docstring), or ran out of space in this process."""
  if os.environ.get("MINITENSOR_NOCACHE") == "1" or _full: return _temp_dir()
  root = os.environ.get("MINITENSOR_CACHE_DIR")
  if not root:
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    root = os.path.join(xdg, "minitensor")
  root = os.path.realpath(root)
  d = os.path.join(root, f"v{VERSION}")
  try:
    _mkdir_private(d)
    parts = root.split(os.sep)
    ancestors = [os.sep.join(parts[:k]) or os.sep for k in range(1, len(parts))]
    why = next(filter(None, [_distrust(a, False) for a in ancestors] + [_distrust(x, True) for x in (root, d)]), None)
    if why is None and not os.access(d, os.W_OK | os.X_OK): why = f"{d} is not writable"
  except OSError as e: why = f"{d} cannot be made ({e.strerror})"
  return d if why is None else _temp_dir(f"cache directory not used: {why}")


def entry_dir(key: str) -> str:
  """The directory holding `key`'s entry: its shard of cache_dir(), else (a file in its place, another owner)
  the same shard of the temporary directory."""
  d = os.path.join(cache_dir(), key[:2])
  try:
    try: why = _distrust(d, True)
    except FileNotFoundError:         # (made when missing: a failed mkdir per entry cost as much as the check)
      with contextlib.suppress(FileExistsError): os.mkdir(d, 0o700)
      why = _distrust(d, True)
  except OSError as e: why = f"{d} cannot be made ({e.strerror})"
  if why is None: return d
  d = os.path.join(_temp_dir(f"cache directory not used: {why}"), key[:2])
  os.makedirs(d, exist_ok=True)
  return d


def stamp(path: str) -> str | None:
  """The identity of the file at path (its real path, inode, size and modification time), or None when it is not
  there: a compiler's or a header's, in the keys of what was made from it (an upgrade replaces the file)."""
  try:
    st = os.stat(real := os.path.realpath(path))
    return f"{real} {st.st_ino} {st.st_size} {st.st_mtime_ns}"
  except OSError: return None


def elf_complete(data: bytes) -> bool:
  """data is a 64-bit ELF object whose header tables and segments all lie inside it (the loader maps segments
  by their recorded sizes: a truncated library would fault when it touches the missing pages)."""
  if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] not in (1, 2): return False
  e = "<" if data[5] == 1 else ">"
  phoff, shoff = struct.unpack_from(e + "QQ", data, 32)
  phsize, phnum, shsize, shnum = struct.unpack_from(e + "HHHH", data, 54)
  if phsize < 56 or phoff + phsize * phnum > len(data) or shoff + shsize * shnum > len(data): return False
  return all(off + size <= len(data) for off, size in
             (struct.unpack_from(e + "8xQ16xQ", data, phoff + k * phsize) for k in range(phnum)))


def read_private(path: str) -> bytes | None:
  """The bytes of the entry at path when it is a regular file (not a link) owned by this user and writable by no
  one else; None otherwise or when it cannot be read (the `entries` rule's file checks)."""
  try: fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
  except OSError: return None
  with os.fdopen(fd, "rb") as f:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022: return None
    try: data = f.read()
    except OSError: return None
  return data if len(data) == st.st_size else None


def valid(so: str) -> bool:
  """The entry may be loaded: a regular file (not a link) owned by this user and writable by no one else, of
  the size and checksum its `.sha256` records, a complete ELF object. Checked before dlopen runs any of it."""
  try:
    with open(so[:-3] + ".sha256") as f: want, size = f.read().split()
  except (OSError, ValueError): return False
  if (data := read_private(so)) is None or str(len(data)) != size: return False
  return sha256(data).hexdigest() == want and elf_complete(data)


@contextlib.contextmanager
def _locked(root: str) -> Iterator[None]:
  """The cache's lock (flock on root/.lock): installs, the byte count and eviction happen under it."""
  fd = os.open(os.path.join(root, ".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX)
    yield
  finally:
    fcntl.flock(fd, fcntl.LOCK_UN)   # explicitly: a forked child's copy of fd must not keep it held
    os.close(fd)


def _atomic_write(path: str, data: bytes) -> None:
  fd, tmp = fresh(os.path.dirname(path), ".tmp-", _new_file)
  try:
    with os.fdopen(fd, "wb") as f: f.write(data)
    os.replace(tmp, path)
  except BaseException:
    with contextlib.suppress(OSError): os.unlink(tmp)
    raise


# tempfile and shutil (with random, bz2 and lzma) took about 4 ms of a script's first realize: what the cache needs of
# them is here
def fresh(parent: str, prefix: str, make: Callable[[str], object]):
  """make(path) of an unused path in parent named prefix + 12 random hex digits, as tempfile's mkstemp and mkdtemp: a
  name taken meanwhile (FileExistsError) is drawn again."""
  for _ in range(100):
    try: return make(os.path.join(parent, prefix + os.urandom(6).hex()))
    except FileExistsError: continue
  raise FileExistsError(errno.EEXIST, "no unused name found", os.path.join(parent, prefix))


def _new_file(path: str) -> tuple[int, str]:
  return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600), path


def _new_dir(path: str) -> str:
  os.mkdir(path, 0o700)
  return path


def remove_tree(d: str) -> None:
  """shutil.rmtree(d, ignore_errors=True), without shutil for a directory of files (a build's)."""
  try:
    with os.scandir(d) as it:
      for e in it:
        if e.is_dir(follow_symlinks=False): raise IsADirectoryError(e.path)
        os.unlink(e.path)
    os.rmdir(d)
  except OSError:
    import shutil
    shutil.rmtree(d, ignore_errors=True)


def which(name: str) -> str | None:
  """shutil.which(name): the executable file `name` names, itself when it has a directory part, else the first one
  on PATH."""
  found = lambda p: os.access(p, os.X_OK) and not os.path.isdir(p)     # noqa: E731
  if os.path.dirname(name): return name if found(name) else None
  dirs = os.environ.get("PATH", os.defpath).split(os.pathsep)
  return next((p for d in dirs if d and found(p := os.path.join(d, name))), None)


STALE_BUILD_SECONDS = 3600


def _sweep(d: str) -> None:
  """Remove build directories in d older than an hour (left by a process that was killed)."""
  now = time.time()
  with contextlib.suppress(OSError), os.scandir(d) as it:
    for e in it:
      if not e.name.startswith(".build-") or not e.is_dir(follow_symlinks=False): continue
      if now - e.stat(follow_symlinks=False).st_mtime > STALE_BUILD_SECONDS: remove_tree(e.path)


@contextlib.contextmanager
def build_dir(shard: str) -> Iterator[str]:
  """A private `.build-*` directory in shard for one build, removed however the build ends; stale ones are swept
  first."""
  _sweep(shard)
  work = fresh(shard, ".build-", _new_dir)
  try: yield work
  finally: remove_tree(work)


def _install(path: str, size: int, place: Callable[[], None], limit: int) -> None:
  """Under the cache's lock: put an entry of `size` bytes at path (place()), count it, evict past `limit`."""
  root = os.path.dirname(os.path.dirname(path))
  with _locked(root):
    try: old = os.stat(path).st_size
    except OSError: old = 0
    place()
    _evict(root, path, size - old, limit)


def install_library(path: str, so: str, data: bytes, limit: int) -> None:
  """Under the cache's lock: move the built library so (whose bytes are data) to its entry path, its checksum
  written last, counted, the cache evicted past `limit`."""
  def place() -> None:
    os.replace(so, path)
    _atomic_write(path[:-3] + ".sha256", f"{sha256(data).hexdigest()} {len(data)}\n".encode())
  _install(path, len(data), place, limit)


def install(path: str, data: bytes) -> None:
  """Write a small cache entry (a run plan, plans.py) atomically, counted and evicted with the libraries."""
  _install(path, len(data), lambda: _atomic_write(path, data), cache_limit())


def _entries(root: str) -> Iterator[tuple[float, int, str]]:
  """(mtime, size, path) of the completed entries under root: `<shard>/<key>.so`, `.plan`, `.tune`, `.cc`, `.h`,
  `.digest` only, never anything inside a build directory. Stale build directories met on the way are swept."""
  with os.scandir(root) as shards:
    for s in shards:
      if len(s.name) != 2 or s.name.startswith(".") or not s.is_dir(follow_symlinks=False): continue
      _sweep(s.path)
      with os.scandir(s.path) as it:
        for e in it:
          if e.name.endswith((".so", ".plan", ".tune", ".cc", ".h", ".digest")) and not e.name.startswith(".") and \
              e.is_file(follow_symlinks=False):
            with contextlib.suppress(OSError):
              st = e.stat(follow_symlinks=False)
              yield st.st_mtime, st.st_size, e.path


EVICT_TO = 0.9      # an eviction goes down to this fraction of the bound (_evict)


def _evict(root: str, keep: str, added: int, limit: int) -> None:
  """Under the cache's lock, after installing `keep` (which changed the cache's size by `added` bytes): keep the
  cache within `limit` by deleting least recently used completed entries (never `keep`). The byte count lives
  in root/usage; the directory is walked (and the count made exact) only when it is missing or over the bound,
  so a build does not stat every entry. Past the bound, entries go until the cache is at EVICT_TO of it: evicting
  just below the bound made every later install walk the whole directory again (a full 1 GiB cache of 344,000
  files took seconds per install, every other process waiting on the lock)."""
  usage = os.path.join(root, "usage")
  try:
    with open(usage) as f: total = int(f.read()) + added
  except (OSError, ValueError): total = None
  if total is None or total > limit:
    entries = sorted(_entries(root))
    total = sum(e[1] for e in entries)
    goal = int(limit * EVICT_TO) if total > limit else limit
    for _, size, p in entries:
      if total <= goal: break
      if p == keep: continue
      for q in (p, p[:-3] + ".sha256") if p.endswith(".so") else (p,):
        with contextlib.suppress(OSError): os.unlink(q)
      total -= size
  with contextlib.suppress(OSError): _atomic_write(usage, str(total).encode())


