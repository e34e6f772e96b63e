"""runtime: C source -> shared object -> a callable on NumPy buffers.

    compile_c(src)      the kernels of a translation unit, compiled by the system C compiler into a shared
                        object and loaded with cffi's C backend; cached in memory and on disk
    call(k, arrays)     runs one compiled kernel on contiguous ndarrays (debug.run_c: one kernel from a SINK)

The disk cache: $MINITENSOR_CACHE_DIR, else $XDG_CACHE_HOME/minitensor, else ~/.cache/minitensor, holding
`v<version>/<key[:2]>/<key>.so` and `<key>.sha256` (the object's digest and size), and the run plans that
find them without lowering a graph (`<key>.plan`, plans.py). The key hashes the source,
the compiler's identity (path and `--version`), the flags, the target CPU (kernels are built -march=native) and
minitensor's version. The threat model is in the README; the rules that enforce it:

  directories  levels minitensor creates are made 0700; the cache directory and the levels below it are used
               only when owned by this user and not writable by group or others, every ancestor only when owned
               by this user or root and not writable by others unless sticky (/tmp). Otherwise, or when a level
               cannot be made (a file in its place), one warning and a private temporary directory.
  entries      loaded only when the file is a regular file owned by this user, not writable by others, of the
               recorded size and checksum, and a complete ELF object (a short file would SIGBUS in the loader).
               Each library embeds its key (`mt_cache_key`), compared after loading and before any call: a
               mismatch (another entry's file in its place) closes it and rebuilds the entry.
  builds       compile in a private `.build-*` directory and load from there, then move into place under the
               cache's lock (`.lock`, flock): the checksum last, the byte count (`usage`) updated and, over
               $MINITENSOR_CACHE_BYTES (default 1 GiB), the least recently used completed entries evicted, never
               a build directory nor the entry just built. A build directory is removed however its build ends;
               those older than an hour (a killed process) are swept.

MINITENSOR_COMPILE_TIMEOUT (seconds, default 120) bounds a compile: the compiler's process group is killed and a
CompileError names the variable (an interrupt kills it too). MINITENSOR_NOCACHE=1 keeps compiled objects in a
temporary directory for this process only (removed at exit).

fork: GNU OpenMP's thread pool does not survive fork(), a parallel region in the child would wait for it
forever. Every rendered kernel's parallel loops run only `if(!mt_serial)`, a global of its library that the
runtime sets in a forked child (os.register_at_fork), so there they run single-threaded; the Once caches'
locks and pending entries are made anew in the child too.
"""
from __future__ import annotations
import atexit
import contextlib
import fcntl
import os
import platform
import re
import shutil
import stat
import struct
import tempfile
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Callable, Iterator
import numpy as np
from minitensor.backend.machine import machine

# cffi, subprocess and hashlib are imported where a kernel is compiled or loaded: `import minitensor` stays cheap

VERSION = "0.1.0"


class CompileError(RuntimeError):
  """The C compiler rejected a kernel, or there is none: carries its message and where the source was saved."""
  def __init__(self, msg: str, source_path: str | None = None):
    super().__init__(msg + (f"\n(source saved at {source_path})" if source_path else ""))
    self.source_path = source_path


@dataclass
class Stats:
  """Counters for tests and inspection: compiler invocations, memory and disk cache hits, graph cache, plans."""
  compiles: int = 0
  memory_hits: int = 0
  disk_hits: int = 0
  graph_hits: int = 0
  graph_misses: int = 0
  plan_hits: int = 0               # programs found as plans on disk (plans.py): nothing lowered
  replays: int = 0                 # graph hits run by a realize plan kept for the graph's sources (replay.Bound)
  compile_seconds: float = 0.0
  def reset(self) -> None:
    for k in self.__dataclass_fields__: setattr(self, k, type(getattr(self, k))())


stats = Stats()


class Once:
  """A cache filled once per key by concurrent threads. The first caller of a missing key makes its value
  outside the lock, so values of different keys are made at the same time (their compilers run in
  parallel); later callers of that key wait for it rather than make it again (if making it failed, the next
  waiter tries). lookup(key) and store(key, value) run under the lock. In a forked child the lock and the
  pending keys are made anew: the threads that held them do not exist there."""
  instances: weakref.WeakSet = weakref.WeakSet()

  def __init__(self, lookup: Callable, store: Callable):
    self.lookup, self.store = lookup, store
    self.reset()
    Once.instances.add(self)

  def reset(self) -> None:
    self.lock = threading.Lock()
    self.busy: dict = {}

  def get(self, key, make: Callable):
    while True:
      with self.lock:
        if (v := self.lookup(key)) is not None: return v
        if (done := self.busy.get(key)) is None:
          done = self.busy[key] = threading.Event()
          break
      done.wait()
    try:
      v = make()
      with self.lock: self.store(key, v)
      return v
    finally:
      with self.lock:
        if self.busy.get(key) is done: del self.busy[key]
      done.set()


_serial = False          # True in a forked child: kernels run single-threaded there
_threaded: list = []     # every loaded library with an mt_serial switch


def _after_fork_in_child() -> None:
  global _serial, _fallback_lock
  _serial = True
  _fallback_lock = threading.Lock()
  for lib in _threaded: _set_serial(lib)
  for o in list(Once.instances): o.reset()


os.register_at_fork(after_in_child=_after_fork_in_child)
# idle threads of a parallel kernel spin about a millisecond, then sleep: waking a sleeping worker costs 0.1-0.5 ms in
# a VM (OMP_WAIT_POLICY=PASSIVE made W3 1.4-2.1 ms against 1.0-1.2 with the spin, column sums 1.0-1.6 against 0.6-1.2,
# AMD EPYC Zen 3), while an unbounded spin (libgomp's ACTIVE, or libomp's 200 ms) steals the core NumPy or the next
# process needs. libgomp counts pause loops (30000: 1.0 ms of CPU on Zen 3), libomp milliseconds. Setting
# OMP_WAIT_POLICY, GOMP_SPINCOUNT or KMP_BLOCKTIME yourself overrides this.
if "OMP_WAIT_POLICY" not in os.environ:
  os.environ.setdefault("GOMP_SPINCOUNT", "30000")
  os.environ.setdefault("KMP_BLOCKTIME", "1")
# no -fwrapv: it stops the compiler from analyzing (and vectorizing) index arithmetic; the renderer makes data
# integer overflow well defined itself. -fno-math-errno only drops errno writes (values are unchanged).
# -ffp-contract=off: a*b + c is rounded twice, as NumPy computes it (fused multiply-adds are written
# explicitly by the renderer where NumPy's own kernels fuse: the dot-product accumulations of matmul).
# -mprefer-vector-width (machine.py): the vector width opt.py sized its register tiles for.
FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off", "-fopenmp",
         "-std=gnu99") + machine().flags()
# added to gcc's -O3 builds only (clang and tcc do not know them); figures in benchmarks/RESULTS.md, "-O3 compile time".
# peeled-insns 150 (default 200): after unroll-and-jam, complete unrolling of reduction loops with literal trip counts
# (softmax of (100, 100)) made 0.6-1.0 s compiles of a 60 ms kernel; no-version-loops-for-strides: no second copy of
# every loop over a runtime stride, assuming it is 1. Neither changes the machine code of any benchmark workload.
GCC_O3_FLAGS = ("--param=max-completely-peeled-insns=150", "-fno-version-loops-for-strides")


def compiler() -> str:
  """The C compiler: $MINITENSOR_CC, else cc, else gcc."""
  return os.environ.get("MINITENSOR_CC") or shutil.which("cc") or shutil.which("gcc") or "cc"


_identity: dict[str, str] = {}


def _compiler_identity(cc: str) -> str:
  if cc not in _identity:
    import subprocess
    try: out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[:1]
    except (OSError, subprocess.SubprocessError): out = []
    _identity[cc] = f"{shutil.which(cc) or cc} {out[0] if out else ''}"
  return _identity[cc]


_CPU_FIELDS = {"vendor_id", "cpu family", "model", "model name", "flags", "Features", "CPU implementer",
               "CPU architecture", "CPU variant", "CPU part"}
_cpu: list[str] = []


def target_cpu() -> str:
  """The CPU that -march=native builds for, as the cache key needs it: the model and feature flags of the first
  processor in /proc/cpuinfo (read once; about 0.1 ms), else the platform's machine and processor names."""
  if not _cpu:
    fields = []
    try:
      with open("/proc/cpuinfo") as f:
        for line in f:
          if not line.strip():
            if fields: break
            continue
          k, _, v = line.partition(":")
          if k.strip() in _CPU_FIELDS: fields.append(f"{k.strip()}={v.strip()}")
    except OSError: pass
    _cpu.append(";".join(fields) or f"{platform.machine()} {platform.processor()}")
  return _cpu[0]


def _no_compiler(cc: str) -> CompileError:
  return CompileError(f"no C compiler: {cc!r} was not found. minitensor compiles its kernels with the system C "
                      f"compiler: install gcc or clang (e.g. `apt-get install gcc`), or set MINITENSOR_CC to one.")


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
_fallback_lock = threading.Lock()


def _temp_dir(why: str | None = None) -> str:
  """This process's private temporary cache directory, made on first use and removed at exit. `why` the cache
  directory was not used: said in one warning per process (the first use)."""
  with _fallback_lock:
    if first := not _fallback:
      _fallback.append(tempfile.mkdtemp(prefix="minitensor-"))
      atexit.register(_remove_temp, _fallback[0], os.getpid())
  if first and why:
    warnings.warn(f"minitensor: {why}; kernels are cached in a private temporary directory instead",
                  RuntimeWarning, stacklevel=4)
  return _fallback[0]


def _remove_temp(d: str, pid: int) -> None:
  if os.getpid() == pid: shutil.rmtree(d, ignore_errors=True)     # not from a forked child's exit


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


def cache_dir() -> str:
  """This version's cache directory, created (0700) where missing; a private temporary directory when it cannot
  be made or written, or is not trusted (see the module docstring)."""
  if os.environ.get("MINITENSOR_NOCACHE") == "1": return _temp_dir()
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
    try: os.mkdir(d, 0o700)
    except FileExistsError: pass
    why = _distrust(d, True)
  except OSError as e: why = f"{d} cannot be made ({e.strerror})"
  if why is None: return d
  d = os.path.join(_temp_dir(f"cache directory not used: {why}"), key[:2])
  os.makedirs(d, exist_ok=True)
  return d


@dataclass
class Kernel:
  """A compiled C function and the cffi handle that keeps its library loaded."""
  name: str
  src: str
  fn: object
  nargs: int
  lib: object = field(repr=False, default=None)


class Native:
  """cffi's C backend (`_cffi_backend`) and the few C types kernels need. A kernel's parameters are pointers and
  int64_t, known without parsing C, so the backend's type constructors suffice: cffi.FFI() would import pycparser,
  which costs about 70 ms at a process's first kernel (more than finding and loading the kernel itself)."""

  def __init__(self) -> None:
    import _cffi_backend as backend
    self.backend = backend
    self.void = backend.new_void_type()
    self.ptr = backend.new_pointer_type(self.void)
    self.i64 = backend.new_primitive_type("int64_t")
    self.int = backend.new_primitive_type("int")
    self.chars = backend.new_array_type(backend.new_pointer_type(backend.new_primitive_type("char")), None)
    self._fn_types: dict[tuple[str, ...], object] = {}

  def fn_type(self, params: tuple[str, ...]):
    """The type of `void f(params)`, each parameter "void*" or "int64_t"."""
    if (t := self._fn_types.get(params)) is None:
      t = self._fn_types[params] = self.backend.new_function_type(
        tuple(self.ptr if p == "void*" else self.i64 for p in params), self.void, False)
    return t

  def from_buffer(self, a, require_writable: bool = False):
    """A pointer argument to the memory of a (an ndarray or another buffer), without a copy."""
    return self.backend.from_buffer(self.chars, a, require_writable)

  def string(self, lib, name: str) -> bytes:
    """The NUL-terminated char array `name` exported by lib (KeyError when it exports none)."""
    return self.backend.string(lib.read_variable(self.chars, name))


_native: list[Native] = []


def native() -> Native:
  """The process's Native (cffi's backend is imported at the first kernel load, not by `import minitensor`)."""
  if not _native: _native.append(Native())
  return _native[0]


def _set_serial(lib) -> None: lib.write_variable(native().int, "mt_serial", 1)


_loaded: dict[str, dict[str, Kernel]] = {}
_SIG = re.compile(r"^void (\w+)\(([^)]*)\)", re.M)


def _tuned(flags: tuple, cc: str) -> tuple:
  """The flags cc is run with: GCC_O3_FLAGS added to an -O3 build by GCC, whose --version line reads
  `NAME (VENDOR) X.Y...` (clang's and tcc's do not)."""
  line = _compiler_identity(cc)
  gcc = "clang" not in line and re.search(r"\) \d+\.\d+", line) is not None
  return flags + GCC_O3_FLAGS if gcc and "-O3" in flags else flags


def _key(src: str, flags: tuple, cc: str) -> str:
  import hashlib
  h = hashlib.sha256()
  for part in (VERSION, _compiler_identity(cc), target_cpu(), " ".join(_tuned(flags, cc)), src):
    h.update(part.encode())
    h.update(b"\0")
  return h.hexdigest()[:32]


def _elf_complete(data: bytes) -> bool:
  """data is a 64-bit ELF object whose header tables and segments all lie inside it (the loader maps segments
  by their recorded sizes: a truncated library would fault when it touches the missing pages)."""
  if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] not in (1, 2): return False
  e = "<" if data[5] == 1 else ">"
  phoff, shoff = struct.unpack_from(e + "QQ", data, 32)
  phsize, phnum, shsize, shnum = struct.unpack_from(e + "HHHH", data, 54)
  if phsize < 56 or phoff + phsize * phnum > len(data) or shoff + shsize * shnum > len(data): return False
  return all(off + size <= len(data) for off, size in
             (struct.unpack_from(e + "8xQ16xQ", data, phoff + k * phsize) for k in range(phnum)))


def _valid(so: str) -> bool:
  """The entry may be loaded: a regular file (not a link) owned by this user and writable by no one else, of
  the size and checksum its `.sha256` records, a complete ELF object. Checked before dlopen runs any of it."""
  import hashlib
  try:
    with open(so[:-3] + ".sha256") as f: want, size = f.read().split()
    fd = os.open(so, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
  except (OSError, ValueError): return False
  with os.fdopen(fd, "rb") as f:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022: return False
    if str(st.st_size) != size: return False
    data = f.read()
  return len(data) == st.st_size and hashlib.sha256(data).hexdigest() == want and _elf_complete(data)


OPENMP_RUNTIMES = ("libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so")
_openmp_pinned: list = []


def _pin_openmp() -> None:
  """Keep the OpenMP runtime a kernel library brought in mapped until the process ends (RTLD_NODELETE on the loaded
  copy). Kernel libraries are unloaded while the interpreter shuts down; the last one took libgomp with it from
  under its idle worker threads (a segfault at exit with OMP_WAIT_POLICY=ACTIVE, 4 runs of 4)."""
  if _openmp_pinned: return
  import ctypes  # (cffi's load_library crashes on a RTLD_NOLOAD miss: dlerror() is NULL then)
  for name in OPENMP_RUNTIMES:
    try: _openmp_pinned.append(ctypes.CDLL(name, mode=os.RTLD_NOW | os.RTLD_NOLOAD | os.RTLD_NODELETE))
    except OSError: continue
    return


def _open(path: str, key: str):
  """The library at path if it loads and embeds `key`; else None (a wrong one is closed again)."""
  try: lib = native().backend.load_library(path, os.RTLD_NOW)
  except OSError: return None
  try:
    if native().string(lib, "mt_cache_key").decode() == key:
      _pin_openmp()
      return lib
  except (KeyError, UnicodeDecodeError): pass
  lib.close_lib()
  return None


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
  fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
  try:
    with os.fdopen(fd, "wb") as f: f.write(data)
    os.replace(tmp, path)
  except BaseException:
    with contextlib.suppress(OSError): os.unlink(tmp)
    raise


STALE_BUILD_SECONDS = 3600


def _sweep(d: str) -> None:
  """Remove build directories in d older than an hour (left by a process that was killed)."""
  now = time.time()
  with contextlib.suppress(OSError), os.scandir(d) as it:
    for e in it:
      if not e.name.startswith(".build-") or not e.is_dir(follow_symlinks=False): continue
      if now - e.stat(follow_symlinks=False).st_mtime > STALE_BUILD_SECONDS: shutil.rmtree(e.path, ignore_errors=True)


def compile_timeout() -> float:
  """$MINITENSOR_COMPILE_TIMEOUT: seconds a compiler may run before it is stopped (default 120). Anything but a
  positive finite number raises ValueError naming the variable."""
  s = os.environ.get("MINITENSOR_COMPILE_TIMEOUT", "").strip()
  if not s: return 120.0
  try: t = float(s)
  except ValueError: t = float("nan")
  if not 0 < t < float("inf"):
    raise ValueError(f"MINITENSOR_COMPILE_TIMEOUT={s!r} is not a positive number of seconds (e.g. 120 or 2.5)")
  return t


def _run_compiler(cmd: list[str], cwd: str):
  """Run the compiler in its own process group (the driver's children too: cc1, as, ld), stopped as a whole at
  compile_timeout() (subprocess.TimeoutExpired) or when this thread is interrupted (Ctrl-C); the finished
  subprocess.CompletedProcess."""
  import signal
  import subprocess
  p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
  try: out, err = p.communicate(timeout=compile_timeout())
  except BaseException:
    # the whole group: a child left running would also keep the pipes open, and communicate() waits for them
    with contextlib.suppress(OSError): os.killpg(p.pid, signal.SIGKILL)
    p.communicate()
    raise
  return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def _build(src: str, key: str, path: str, flags: tuple, limit: int, cc: str):
  """Compile src (with its key embedded) with cc in a private build directory, load it from there, move it into
  the cache at path; the loaded library."""
  import hashlib
  import subprocess
  d = os.path.dirname(path)
  _sweep(d)
  work = tempfile.mkdtemp(dir=d, prefix=".build-")
  try:
    with open(os.path.join(work, "kernel.c"), "w") as f: f.write(f'{src}\nconst char mt_cache_key[] = "{key}";\n')
    t = time.perf_counter()
    # relative names: the object's bytes depend only on the source, whichever process builds it
    try: p = _run_compiler([cc, *_tuned(flags, cc), "-o", "kernel.so", "kernel.c", "-lm"], work)
    except OSError: raise _no_compiler(cc) from None
    except subprocess.TimeoutExpired as e:
      kept = os.path.join(d, key + ".failed.c")
      with open(kept, "w") as f: f.write(src)
      raise CompileError(f"{cc} did not finish within {e.timeout:g} s and was stopped (MINITENSOR_COMPILE_TIMEOUT; "
                         f"set it higher for a very large kernel)", kept) from None
    stats.compiles += 1
    stats.compile_seconds += time.perf_counter() - t
    so = os.path.join(work, "kernel.so")
    if p.returncode != 0 or not os.path.isfile(so):
      kept = os.path.join(d, key + ".failed.c")
      with open(kept, "w") as f: f.write(src)
      if p.returncode != 0: raise CompileError(f"{cc} failed:\n{p.stderr.strip()}", kept)
      said = f": {p.stderr.strip()}" if p.stderr.strip() else ""
      raise CompileError(f"{cc} exited with status 0 but wrote no shared object{said}", kept)
    os.chmod(so, 0o600)
    if (lib := _open(so, key)) is None:
      raise CompileError(f"{cc} built a shared object that does not load as kernel {key}")
    with open(so, "rb") as f: data = f.read()
    def place() -> None:
      os.replace(so, path)
      _atomic_write(path[:-3] + ".sha256", f"{hashlib.sha256(data).hexdigest()} {len(data)}\n".encode())
    # the library is loaded already: an entry that cannot be stored (the cache cleared meanwhile, a full disk)
    # only costs a later compile
    with contextlib.suppress(OSError): _install(path, len(data), place, limit)
    return lib
  finally: shutil.rmtree(work, ignore_errors=True)


def _install(path: str, size: int, place: Callable[[], None], limit: int) -> None:
  """Under the cache's lock: put an entry of `size` bytes at path (place()), count it, evict past `limit`."""
  root = os.path.dirname(os.path.dirname(path))
  with _locked(root):
    try: old = os.stat(path).st_size
    except OSError: old = 0
    place()
    _evict(root, path, size - old, limit)


def install(path: str, data: bytes) -> None:
  """Write a small cache entry (a run plan, plans.py) atomically, counted and evicted with the libraries."""
  _install(path, len(data), lambda: _atomic_write(path, data), cache_limit())


def _entries(root: str) -> Iterator[tuple[float, int, str]]:
  """(mtime, size, path) of the completed entries under root: `<shard>/<key>.so`, `.plan` and `.tune` only, never
  anything inside a build directory. Stale build directories met on the way are swept."""
  with os.scandir(root) as shards:
    for s in shards:
      if len(s.name) != 2 or s.name.startswith(".") or not s.is_dir(follow_symlinks=False): continue
      _sweep(s.path)
      with os.scandir(s.path) as it:
        for e in it:
          if e.name.endswith((".so", ".plan", ".tune")) and not e.name.startswith(".") and \
              e.is_file(follow_symlinks=False):
            with contextlib.suppress(OSError):
              st = e.stat(follow_symlinks=False)
              yield st.st_mtime, st.st_size, e.path


def _evict(root: str, keep: str, added: int, limit: int) -> None:
  """Under the cache's lock, after installing `keep` (which changed the cache's size by `added` bytes): keep the
  cache within `limit` by deleting least recently used completed entries (never `keep`). The byte count lives
  in root/usage; the directory is walked (and the count made exact) only when it is missing or over the bound,
  so a build does not stat every entry."""
  usage = os.path.join(root, "usage")
  try:
    with open(usage) as f: total = int(f.read()) + added
  except (OSError, ValueError): total = None
  if total is None or total > limit:
    entries = sorted(_entries(root))
    total = sum(e[1] for e in entries)
    for _, size, p in entries:
      if total <= limit: break
      if p == keep: continue
      for q in (p, p[:-3] + ".sha256") if p.endswith(".so") else (p,):
        with contextlib.suppress(OSError): os.unlink(q)
      total -= size
  with contextlib.suppress(OSError): _atomic_write(usage, str(total).encode())


def _memory_hit(key: str) -> dict[str, Kernel] | None:
  if (ks := _loaded.get(key)) is not None: stats.memory_hits += 1
  return ks


def _keep(key: str, ks: dict[str, Kernel]) -> None: _loaded[key] = ks


_libraries = Once(_memory_hit, _keep)


Signatures = dict[str, tuple[str, ...]]      # function name -> its parameters, each "void*" or "int64_t"


def compile_c(src: str, flags: tuple = FLAGS, cc: str | None = None, signatures: Signatures | None = None
              ) -> dict[str, Kernel]:
  """Compile (or fetch from the caches) a translation unit with cc (default: compiler()); its kernels by name.
  signatures: the functions to load and their parameters, as the lowering that wrote src knows them (realize's
  Plan); without them (a hand-written source) they are read from the C's `void name(...)` lines."""
  cc = cc or compiler()
  key = _key(src, flags, cc)
  return _libraries.get(key, lambda: _load(src, key, flags, cc, signatures))


def _load(src: str, key: str, flags: tuple, cc: str, signatures: Signatures | None) -> dict[str, Kernel]:
  limit = cache_limit()                       # a bad MINITENSOR_CACHE_BYTES fails before any compile
  compile_timeout()                           # and so does a bad MINITENSOR_COMPILE_TIMEOUT
  path = os.path.join(entry_dir(key), key + ".so")
  # parameters as the caller passes them: every pointer a void* (buffers pass as from_buffer cdata), sizes int64_t
  sigs = list(signatures.items()) if signatures is not None else \
    [(name, tuple("void*" if "*" in p else "int64_t" for p in params.split(",") if p.strip()))
     for name, params in _SIG.findall(src)]
  if _valid(path) and (lib := _open(path, key)) is not None:
    stats.disk_hits += 1
    with contextlib.suppress(OSError): os.utime(path)      # recently used: last to be evicted
  else: lib = _build(src, key, path, flags, limit, cc)
  try: lib.read_variable(native().int, "mt_serial")     # every rendered kernel's library has the switch
  except KeyError: pass
  else:
    _threaded.append(lib)
    if _serial: _set_serial(lib)
  try: fns = {name: lib.load_function(native().fn_type(ps), name) for name, ps in sigs}
  except AttributeError as e: raise KeyError(f"compile_c: {e}") from None     # a function the source lacks
  return {name: Kernel(name, src, fns[name], len(ps), lib) for name, ps in sigs}


def call(k: Kernel, arrays: list[np.ndarray]) -> None:
  """Run k on contiguous ndarrays (one per parameter, in slot order)."""
  k.fn(*[native().from_buffer(a) for a in arrays])
