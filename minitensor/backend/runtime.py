"""runtime: C source -> shared object -> a callable on NumPy buffers.

    compile_c(src)   cc -shared -> <cache>/<hash>.so, loaded with cffi.FFI().dlopen; cached in memory by
                     the hash of (source, compiler, flags, minitensor version) and on disk under the same name
    run_c(prog, bufs)   renders (if given a SINK), compiles, and calls the kernel on {slot: ndarray}

The disk cache lives in $MINITENSOR_CACHE_DIR, else $XDG_CACHE_HOME/minitensor, else ~/.cache/minitensor.
An entry is written to a temporary file in the same directory and renamed into place, so readers see either
nothing or a complete file; concurrent processes compiling the same kernel both succeed.
"""
from __future__ import annotations
import hashlib, os, re, shutil, subprocess, tempfile, threading
from dataclasses import dataclass, field
import numpy as np
import cffi
from minitensor.backend.uop import UOp, Ops
from minitensor.backend.dtype import dtypes

VERSION = "0.1.0"


class CompileError(RuntimeError):
  """The C compiler rejected a kernel: carries its message and where the source was saved."""
  def __init__(self, msg: str, source_path: str | None = None):
    super().__init__(msg + (f"\n(source saved at {source_path})" if source_path else ""))
    self.source_path = source_path


@dataclass
class Stats:
  """Counters for tests and inspection: compiler invocations, memory and disk cache hits."""
  compiles: int = 0
  memory_hits: int = 0
  disk_hits: int = 0
  graph_hits: int = 0
  graph_misses: int = 0
  compile_seconds: float = 0.0
  def reset(self) -> None:
    for k in self.__dataclass_fields__: setattr(self, k, type(getattr(self, k))())


stats = Stats()
_lock = threading.RLock()


def compiler() -> str:
  return os.environ.get("MINITENSOR_CC") or shutil.which("cc") or shutil.which("gcc") or "cc"


FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-fwrapv", "-fno-math-errno", "-fopenmp", "-std=gnu99")


def cache_dir() -> str:
  d = os.environ.get("MINITENSOR_CACHE_DIR")
  if not d:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = os.path.join(base, "minitensor")
  return os.path.join(d, f"v{VERSION}")


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
  for part in (VERSION, compiler(), " ".join(flags), src): h.update(part.encode()); h.update(b"\0")
  return h.hexdigest()[:32]


def _build(src: str, so_path: str, flags: tuple) -> None:
  os.makedirs(os.path.dirname(so_path), exist_ok=True)
  fd, tmp_c = tempfile.mkstemp(suffix=".c", dir=os.path.dirname(so_path))
  with os.fdopen(fd, "w") as f: f.write(src)
  tmp_so = tmp_c[:-2] + ".so"
  try:
    p = subprocess.run([compiler(), *flags, "-o", tmp_so, tmp_c, "-lm"], capture_output=True, text=True)
  except FileNotFoundError:
    os.unlink(tmp_c)
    raise CompileError(f"no C compiler: {compiler()!r} was not found. Install gcc or clang, or point MINITENSOR_CC at one.")
  stats.compiles += 1
  if p.returncode != 0:
    raise CompileError(f"{compiler()} failed:\n{p.stderr.strip()}", tmp_c)
  os.replace(tmp_so, so_path)
  os.unlink(tmp_c)


def compile_c(src: str, flags: tuple = FLAGS) -> dict[str, Kernel]:
  """Compile (or fetch from the caches) a translation unit; its kernels by name."""
  key = _key(src, flags)
  with _lock:
    if (ks := _loaded.get(key)) is not None:
      stats.memory_hits += 1
      return ks
    path = os.path.join(cache_dir(), key[:2], key + ".so")
    if os.path.exists(path): stats.disk_hits += 1
    else: _build(src, path, flags)
    sigs = [(name, len([p for p in params.split(",") if p.strip()])) for name, params in _SIG.findall(src)]
    ffi = cffi.FFI()   # one FFI per library: kernels of different libraries may share a name
    ffi.cdef("\n".join(f"void {name}({', '.join(['void*'] * n) or 'void'});" for name, n in sigs))
    lib = ffi.dlopen(path)
    ks = _loaded[key] = {name: Kernel(name, src, getattr(lib, name), n, lib) for name, n in sigs}
    return ks


def kernel_slots(sink: UOp) -> list[int]:
  return sorted({u.arg.slot for u in sink.toposort() if u.op is Ops.BUFFER})


def call(k: Kernel, arrays: list[np.ndarray]) -> None:
  """Run k on contiguous ndarrays (one per parameter, in slot order)."""
  k.fn(*[_ffi.cast("void*", a.ctypes.data) for a in arrays])


def run_c(prog: UOp | str, buffers: dict[int, np.ndarray], name: str = "kernel") -> None:
  """Run one kernel on {slot: ndarray}. `prog` is a lowered SINK (rendered here) or C source defining `name`.
  Buffers must be C-contiguous, of the BUFFER's dtype and at least its size; they are used in place."""
  from minitensor.backend.render_c import render_c
  if isinstance(prog, UOp):
    bufs = {u.arg.slot: u for u in prog.toposort() if u.op is Ops.BUFFER}
    for s, b in bufs.items():
      if s not in buffers: raise ValueError(f"run_c: no array for buffer slot {s}")
      a = buffers[s]
      if not isinstance(a, np.ndarray) or not a.flags.c_contiguous or a.dtype != b.dtype.np or a.size < b.arg.shape[0]:
        raise ValueError(f"run_c: slot {s} needs a contiguous {b.dtype.name} array of {b.arg.shape[0]} elements, "
                         f"got {getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
      if s in {u.src[0].src[0].arg.slot for u in prog.toposort() if u.op is Ops.STORE and u.src[0].src[0].op is Ops.BUFFER} \
         and not a.flags.writeable: raise ValueError(f"run_c: slot {s} is written but the array is read-only")
    slots = sorted(bufs)
    prog = render_c(prog, name)
  else:
    slots = sorted(buffers)
  k = compile_c(prog)[name]
  call(k, [buffers[s] for s in slots])
