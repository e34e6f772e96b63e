"""runtime: C source -> shared object -> a callable on NumPy buffers.

    compile_c(src)      the kernels of a translation unit, compiled by the system C compiler into a shared
                        object and loaded with cffi.FFI().dlopen; cached in memory and on disk
    run_c(prog, bufs)   renders (if given a SINK), compiles, and calls one kernel on {slot: ndarray}

The disk cache: $MINITENSOR_CACHE_DIR, else $XDG_CACHE_HOME/minitensor, else ~/.cache/minitensor, holding
`v<version>/<key[:2]>/<key>.so` and `<key>.sha256`. The key hashes the source, the compiler's identity (path
and `--version`), the flags and minitensor's version. Entries are written to a temporary file and renamed
into place, the checksum last, so concurrent processes compiling the same kernel all succeed and an entry
is used only when its checksum matches: a truncated or corrupted file is rebuilt, never loaded. A directory
that cannot be written falls back to a temporary one (one warning). The size is bounded by
$MINITENSOR_CACHE_BYTES (default 1 GiB): the least recently used entries are evicted. MINITENSOR_NOCACHE=1
keeps compiled objects in a temporary directory for this process only.
"""
from __future__ import annotations
import hashlib, os, re, shutil, subprocess, tempfile, threading, time, warnings
from dataclasses import dataclass, field
from typing import Callable
import numpy as np
import cffi
from minitensor.backend.uop import UOp, Ops

VERSION = "0.1.0"


class CompileError(RuntimeError):
  """The C compiler rejected a kernel, or there is none: carries its message and where the source was saved."""
  def __init__(self, msg: str, source_path: str | None = None):
    super().__init__(msg + (f"\n(source saved at {source_path})" if source_path else ""))
    self.source_path = source_path


@dataclass
class Stats:
  """Counters for tests and inspection: compiler invocations, memory and disk cache hits, graph cache."""
  compiles: int = 0
  memory_hits: int = 0
  disk_hits: int = 0
  graph_hits: int = 0
  graph_misses: int = 0
  compile_seconds: float = 0.0
  def reset(self) -> None:
    for k in self.__dataclass_fields__: setattr(self, k, type(getattr(self, k))())


stats = Stats()


class Once:
  """A cache filled once per key by concurrent threads. The first caller of a missing key makes its value
  outside the lock, so values of different keys are made at the same time (their compilers run in
  parallel); later callers of that key wait for it rather than make it again (if making it failed, the next
  waiter tries). lookup(key) and store(key, value) run under the lock."""
  def __init__(self, lookup: Callable, store: Callable):
    self.lookup, self.store = lookup, store
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
      with self.lock: del self.busy[key]
      done.set()
# threads of a parallel kernel sleep instead of spinning between regions: on a loaded machine spinning
# threads steal the core the others need (set OMP_WAIT_POLICY yourself to override)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# no -fwrapv: it stops the compiler from analyzing (and vectorizing) index arithmetic; the renderer makes data
# integer overflow well defined itself. -fno-math-errno only drops errno writes (values are unchanged).
# -ffp-contract=off: a*b + c is rounded twice, as NumPy computes it (fused multiply-adds are written
# explicitly by the renderer where NumPy's own kernels fuse: the dot-product accumulations of matmul).
FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off", "-fopenmp", "-std=gnu99")


def compiler() -> str:
  """The C compiler: $MINITENSOR_CC, else cc, else gcc."""
  return os.environ.get("MINITENSOR_CC") or shutil.which("cc") or shutil.which("gcc") or "cc"


_identity: dict[str, str] = {}


def _compiler_identity(cc: str) -> str:
  if cc not in _identity:
    try: out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[:1]
    except (OSError, subprocess.SubprocessError): out = []
    _identity[cc] = f"{shutil.which(cc) or cc} {out[0] if out else ''}"
  return _identity[cc]


def _no_compiler(cc: str) -> CompileError:
  return CompileError(f"no C compiler: {cc!r} was not found. minitensor compiles its kernels with the system C "
                      f"compiler: install gcc or clang (e.g. `apt-get install gcc`), or set MINITENSOR_CC to one.")


_fallback: list[str] = []


def cache_dir() -> str:
  """This version's cache directory, created if needed; a temporary one if it cannot be written."""
  if os.environ.get("MINITENSOR_NOCACHE") == "1": return _temp_dir()
  d = os.environ.get("MINITENSOR_CACHE_DIR")
  if not d:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = os.path.join(base, "minitensor")
  d = os.path.join(d, f"v{VERSION}")
  try:
    os.makedirs(d, exist_ok=True)
    if os.access(d, os.W_OK | os.X_OK): return d
  except OSError: pass
  if not _fallback: warnings.warn(f"minitensor: cache directory {d} is not writable; using a temporary directory", RuntimeWarning, stacklevel=3)
  return _temp_dir()


def _temp_dir() -> str:
  if not _fallback: _fallback.append(tempfile.mkdtemp(prefix="minitensor-"))
  return _fallback[0]


@dataclass
class Kernel:
  """A compiled C function and the cffi handle that keeps its library loaded."""
  name: str
  src: str
  fn: object
  nargs: int
  lib: object = field(repr=False, default=None)


_ffi = cffi.FFI()
_loaded: dict[str, dict[str, Kernel]] = {}
_SIG = re.compile(r"^void (\w+)\(([^)]*)\)", re.M)


def _key(src: str, flags: tuple) -> str:
  h = hashlib.sha256()
  cc = compiler()
  for part in (VERSION, _compiler_identity(cc), " ".join(flags), src): h.update(part.encode()); h.update(b"\0")
  return h.hexdigest()[:32]


def _digest(path: str) -> str | None:
  try:
    with open(path, "rb") as f: return hashlib.sha256(f.read()).hexdigest()
  except OSError: return None


def _valid(so: str) -> bool:
  """The entry exists and its checksum matches (so it is complete and unaltered)."""
  try:
    with open(so[:-3] + ".sha256") as f: want = f.read().strip()
  except OSError: return False
  return want != "" and _digest(so) == want


def _atomic_write(path: str, data: bytes) -> None:
  fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
  with os.fdopen(fd, "wb") as f: f.write(data)
  os.replace(tmp, path)


def _build(src: str, so_path: str, flags: tuple) -> None:
  d = os.path.dirname(so_path)
  os.makedirs(d, exist_ok=True)
  # a private directory and fixed file names: the object's bytes depend only on the source, so processes
  # racing on one entry write identical files and the checksum matches whichever .so lands
  work = tempfile.mkdtemp(dir=d, prefix=".build-")
  c_path, tmp_so = os.path.join(work, "kernel.c"), os.path.join(work, "kernel.so")
  with open(c_path, "w") as f: f.write(src)
  cc = compiler()
  t = time.perf_counter()
  try:
    try: p = subprocess.run([cc, *flags, "-o", tmp_so, c_path, "-lm"], capture_output=True, text=True, cwd=work)
    except OSError: raise _no_compiler(cc) from None
    stats.compiles += 1
    stats.compile_seconds += time.perf_counter() - t
    if p.returncode != 0:
      kept = os.path.join(d, os.path.basename(so_path)[:-3] + ".failed.c")
      os.replace(c_path, kept)
      raise CompileError(f"{cc} failed:\n{p.stderr.strip()}", kept)
    digest = _digest(tmp_so)
    os.replace(tmp_so, so_path)
    _atomic_write(so_path[:-3] + ".sha256", (digest or "").encode())
  finally: shutil.rmtree(work, ignore_errors=True)
  _evict(os.path.dirname(d), keep=so_path)


def _evict(root: str, keep: str) -> None:
  """Keep the cache within $MINITENSOR_CACHE_BYTES after building `keep`: delete least recently used entries
  (never `keep`). The cache's byte count is kept in `root/usage`, which each build adds to; the directory is
  walked (and the count made exact) only when that count is missing or passes the bound, so a build does not
  stat every entry. Concurrent builds may lose an addition: the count is a lower bound, exact after a walk."""
  limit = int(os.environ.get("MINITENSOR_CACHE_BYTES", str(1 << 30)))
  usage = os.path.join(root, "usage")
  try:
    with open(usage) as f: total = int(f.read()) + os.path.getsize(keep)
  except (OSError, ValueError): total = None
  if total is None or total > limit:
    entries = []
    for dp, _, files in os.walk(root):
      for f in files:
        if f.endswith(".so"):
          p = os.path.join(dp, f)
          try: st = os.stat(p)
          except OSError: continue
          entries.append((st.st_mtime, st.st_size, p))
    total = sum(e[1] for e in entries)
    for _, size, p in sorted(entries):
      if total <= limit: break
      if p == keep: continue
      for q in (p, p[:-3] + ".sha256"):
        try: os.unlink(q)
        except OSError: pass
      total -= size
  try: _atomic_write(usage, str(total).encode())
  except OSError: pass


def _memory_hit(key: str) -> dict[str, Kernel] | None:
  if (ks := _loaded.get(key)) is not None: stats.memory_hits += 1
  return ks


def _keep(key: str, ks: dict[str, Kernel]) -> None: _loaded[key] = ks


_libraries = Once(_memory_hit, _keep)


def compile_c(src: str, flags: tuple = FLAGS) -> dict[str, Kernel]:
  """Compile (or fetch from the caches) a translation unit; its kernels by name."""
  key = _key(src, flags)
  return _libraries.get(key, lambda: _load(src, key, flags))


def _load(src: str, key: str, flags: tuple) -> dict[str, Kernel]:
  path = os.path.join(cache_dir(), key[:2], key + ".so")
  if _valid(path):
    stats.disk_hits += 1
    try: os.utime(path)                       # recently used: last to be evicted
    except OSError: pass
  else: _build(src, path, flags)
  # parameters as cffi sees them: every pointer a void* (buffers pass as from_buffer cdata), sizes int64_t
  sigs = [(name, ["void*" if "*" in p else "int64_t" for p in params.split(",") if p.strip()]) for name, params in _SIG.findall(src)]
  ffi = cffi.FFI()   # one FFI per library: kernels of different libraries may share a name
  ffi.cdef("\n".join(f"void {name}({', '.join(ps) or 'void'});" for name, ps in sigs))
  try: lib = ffi.dlopen(path)
  except OSError:                             # damaged after the check (or by another process): rebuild once
    _build(src, path, flags)
    lib = ffi.dlopen(path)
  return {name: Kernel(name, src, getattr(lib, name), len(ps), lib) for name, ps in sigs}


def call(k: Kernel, arrays: list[np.ndarray]) -> None:
  """Run k on contiguous ndarrays (one per parameter, in slot order)."""
  k.fn(*[_ffi.from_buffer(a, require_writable=False) for a in arrays])


def run_c(prog: UOp | str, buffers: dict[int, np.ndarray], name: str = "kernel") -> None:
  """Run one kernel on {slot: ndarray}. `prog` is a lowered SINK (rendered here) or C source defining `name`.
  Buffers must be C-contiguous, of the BUFFER's dtype and at least its size; they are used in place."""
  from minitensor.backend.render_c import render_c
  if isinstance(prog, UOp):
    nodes = prog.toposort()
    bufs = {u.arg.slot: u for u in nodes if u.op is Ops.BUFFER}
    written = {u.src[0].src[0].arg.slot for u in nodes if u.op is Ops.STORE and u.src[0].src[0].op is Ops.BUFFER}
    for s, b in bufs.items():
      if s not in buffers: raise ValueError(f"run_c: no array for buffer slot {s}")
      a = buffers[s]
      if not isinstance(a, np.ndarray) or not a.flags.c_contiguous or a.dtype != b.dtype.np or a.size < b.arg.shape[0]:
        raise ValueError(f"run_c: slot {s} needs a contiguous {b.dtype.name} array of {b.arg.shape[0]} elements, "
                         f"got {getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
      if s in written and not a.flags.writeable: raise ValueError(f"run_c: slot {s} is written but the array is read-only")
    slots = sorted(bufs)
    prog = render_c(prog, name)
  else: slots = sorted(buffers)
  call(compile_c(prog)[name], [buffers[s] for s in slots])
