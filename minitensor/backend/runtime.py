"""runtime: C source -> shared object -> a callable on NumPy buffers.

    compile_c(src)      the kernels of a translation unit, compiled by the system C compiler into a shared
                        object and loaded with cffi's C backend; cached in memory and on disk (diskcache.py)
    call(k, arrays)     runs one compiled kernel on contiguous ndarrays (debug.run_c: one kernel from a SINK)

The key of a translation unit hashes the source, the compiler's identity (path and `--version`), the flags, the
target CPU (kernels are built -march=native) and minitensor's version; it names the entry in the disk cache
(diskcache.py: its directories, which entries may be loaded, how builds are installed and evicted). Each library
embeds its key (`mt_cache_key`), compared after loading and before any call: a mismatch (another entry's file in its
place) closes it and rebuilds the entry. A build compiles in a private build directory of the cache and loads the
library from there before installing it, so a library that cannot be stored still runs.

MINITENSOR_COMPILE_TIMEOUT (seconds, default 120) bounds a compile: the compiler's process group is killed and a
CompileError names the variable (an interrupt kills it too).

fork: GNU OpenMP's thread pool does not survive fork(), a parallel region in the child would wait for it
forever. Every rendered kernel's parallel loops run only `if(!mt_serial)`, a global of its library that the
runtime sets in a forked child (os.register_at_fork), so there they run single-threaded; the Once caches'
locks and pending entries are made anew in the child too.
"""
from __future__ import annotations
import contextlib
import os
import platform
import re
import threading
import time
import weakref
from typing import Callable
import numpy as np
from minitensor.backend import diskcache, linking, spawn, tcc
from minitensor.backend.diskcache import VERSION, cache_dir, cache_limit, entry_dir, install, which  # noqa: F401
from minitensor.backend.machine import machine

# cffi is imported where a kernel is loaded: `import minitensor` stays cheap
# cache_dir, install: diskcache's, re-exported here for plans.py and `python -m minitensor cache`


class CompileError(RuntimeError):
  """The C compiler rejected a kernel, or there is none: carries its message and where the source was saved."""
  def __init__(self, msg: str, source_path: str | None = None):
    super().__init__(msg + (f"\n(source saved at {source_path})" if source_path else ""))
    self.source_path = source_path


class Stats:
  """Counters for tests and inspection: compiler invocations, memory and disk cache hits, graph cache, plans
  (plan_hits: programs found as plans on disk, plans.py: nothing lowered; replays: graph hits run by a realize plan
  kept for the graph's sources, replay.Bound), and the seconds spent in the C compiler."""
  __slots__ = ("compiles", "memory_hits", "disk_hits", "graph_hits", "graph_misses", "plan_hits", "replays",
               "compile_seconds")

  def __init__(self) -> None: self.reset()

  def reset(self) -> None:
    for k in self.__slots__: setattr(self, k, 0)
    self.compile_seconds = 0.0

  def __repr__(self) -> str: return "Stats(" + ", ".join(f"{k}={getattr(self, k)}" for k in self.__slots__) + ")"


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


_serial = False                         # True in a forked child: kernels run single-threaded there
_threaded: weakref.WeakSet = weakref.WeakSet()   # the live kernels whose library has an mt_serial switch


def _after_fork_in_child() -> None:
  global _serial
  _serial = True
  for k in list(_threaded): _set_serial(k.lib)
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
# -mprefer-vector-width (machine.py): the vector width opt.py sized its register tiles for. -pipe: the compiler's
# stages hand the assembly on through pipes, not files (a small kernel at -O1: 60 -> 52 ms, AMD EPYC Zen 4).
FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off", "-fopenmp",
         "-std=gnu99", "-pipe") + machine().flags()
# added to gcc's -O3 builds only (clang and tcc do not know them; RESULTS.md, "-O3 compile time"). peeled-insns 150
# (default 200): after unroll-and-jam, complete unrolling of reduction loops with literal trip counts (softmax of (100,
# 100)) made 0.6-1.0 s compiles of a 60 ms kernel; no-version-loops-for-strides: no second copy of every loop over a
# runtime stride, assuming it is 1. Neither changes the machine code of any benchmark workload.
GCC_O3_FLAGS = ("--param=max-completely-peeled-insns=150", "-fno-version-loops-for-strides")
# added to gcc's OpenMP builds: a gcc configured with offload targets (Debian's: nvptx, amdgcn) otherwise looks for
# their compilers in every such build, compile and link (a small kernel at -O1: 25 -> 22 ms of cc1 alone, Zen 4)
GCC_OPENMP_FLAGS = ("-foffload=disable",)
LOOPS_O3 = "-DMT_LOOPS_O3"    # an -O2 build whose loop kernels ask for -O3 (PRELUDE's MT_LOOPS): tiers.HAND_FLAGS


def compiler() -> str:
  """The C compiler: $MINITENSOR_CC, else cc, else gcc."""
  return os.environ.get("MINITENSOR_CC") or which("cc") or which("gcc") or "cc"


_identity: dict[str, str] = {}
_versions: dict[str, str] = {}


def _compiler_identity(cc: str) -> str:
  """cc's path and the stamp of its binary (real path, inode, size, modification time): part of every cache key,
  so an upgrade (a new binary) misses the entries the old one built. Read from the file system: a first realize
  spawns no compiler for it (`--version` is asked only by _tuned, for an -O3 build)."""
  if (ident := _identity.get(cc)) is None:
    path = which(cc) or cc
    _identity[cc] = ident = f"{path} {diskcache.stamp(path) or ''}"
  return ident


def _version_line(cc: str) -> str:
  """The first line of cc's `--version`. It is kept on disk per compiler binary (diskcache.stamp), so a process does not
  spawn the compiler for it again (about 2 ms each): an upgrade replaces the binary and asks again."""
  if cc in _versions: return _versions[cc]
  entry = None
  if (stamp := diskcache.stamp(which(cc) or cc)) is not None:
    key = diskcache.sha256(f"compiler {VERSION} {stamp}".encode()).hexdigest()[:32]
    entry = os.path.join(entry_dir(key), key + ".cc")
    if (data := diskcache.read_private(entry)) is not None and data.startswith(stamp.encode() + b"\n"):
      _versions[cc] = data[len(stamp) + 1:].decode(errors="replace")
      return _versions[cc]
  try: out = spawn.run([cc, "--version"], 30.0).stdout.splitlines()[:1]
  except (OSError, spawn.Timeout): out = []
  line = out[0] if out else ""
  if entry is not None and out:
    with contextlib.suppress(OSError): install(entry, f"{stamp}\n{line}".encode())
  _versions[cc] = line
  return line


def log():
  """The `minitensor` logger (logging is imported at the first message: a script's first realize stays cheap);
  MINITENSOR_DEBUG=1 gives it a handler on stderr at level DEBUG."""
  import logging
  lg = logging.getLogger("minitensor")
  if os.environ.get("MINITENSOR_DEBUG", "0") not in ("", "0") and not lg.handlers:
    lg.addHandler(logging.StreamHandler())
    lg.setLevel(logging.DEBUG)
  return lg


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


class Kernel:
  """A compiled C function and the cffi handle that keeps its library loaded (compared by identity)."""
  __slots__ = ("name", "src", "fn", "nargs", "lib", "__weakref__")     # (runtime._threaded holds them weakly)

  def __init__(self, name: str, src: str, fn, nargs: int, lib=None):
    self.name, self.src, self.fn, self.nargs, self.lib = name, src, fn, nargs, lib

  def __repr__(self) -> str: return f"Kernel(name={self.name!r}, nargs={self.nargs})"


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


def pointer() -> tuple:
  """(cffi's from_buffer, the char[] type): f(chars, a, False) is a kernel's pointer argument to a's memory, for
  the hot paths that call it per buffer without Native.from_buffer's extra call (realize, replay)."""
  n = native()
  return n.backend.from_buffer, n.chars


def _set_serial(lib) -> None: lib.write_variable(native().int, "mt_serial", 1)


# libraries by key, least recently used first: at most LOADED_LIMIT are kept for later compile_c calls. One dropped
# from here is closed (cffi's library object dlcloses when it is freed) once no Kernel holds it: a program that
# still runs it (realize's Compiled) keeps it loaded.
LOADED_LIMIT = 256
_loaded: dict[str, dict[str, Kernel]] = {}
_SIG = re.compile(r"^(?:MT_LOOPS )?void (\w+)\(([^)]*)\)", re.M)      # (MT_LOOPS: PRELUDE's mark of a loop kernel)


def _tuned(flags: tuple, cc: str) -> tuple:
  """The flags cc is run with: for GCC, whose --version line reads `NAME (VENDOR) X.Y...` (clang's and tcc's do not),
  GCC_OPENMP_FLAGS added to a build with -fopenmp and GCC_O3_FLAGS to an -O3 build (or one with LOOPS_O3)."""
  o3, omp = "-O3" in flags or LOOPS_O3 in flags, "-fopenmp" in flags
  if not (o3 or omp): return flags
  line = _version_line(cc)
  if "clang" in line or re.search(r"\) \d+\.\d+", line) is None: return flags
  return flags + (GCC_OPENMP_FLAGS if omp else ()) + (GCC_O3_FLAGS if o3 else ())


def _key(src: str, flags: tuple, cc: str) -> str:
  h = diskcache.sha256()
  for part in (VERSION, _compiler_identity(cc), target_cpu(), " ".join(_tuned(flags, cc)), src):
    h.update(part.encode())
    h.update(b"\0")
  return h.hexdigest()[:32]


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


def _open(path: str, key: str, flags: tuple):
  """The library at path (built with `flags`) if it loads and embeds `key`; else None (a wrong one is closed
  again)."""
  try: lib = native().backend.load_library(path, os.RTLD_NOW)
  except OSError: return None
  try:
    if native().string(lib, "mt_cache_key").decode() == key:
      if "-fopenmp" in flags: _pin_openmp()     # (four failed dlopens for each tier-0 library otherwise)
      return lib
  except (KeyError, UnicodeDecodeError): pass
  lib.close_lib()
  return None


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


def _run_compiler(cmd: list[str], work: str):
  """Run the compiler on files in directory `work` (named by absolute paths in cmd; its output names them relative
  to it), in its own process group (with the driver's children: cc1, as, ld), stopped as a whole at compile_timeout()
  (spawn.Timeout) or by an interrupt (Ctrl-C); the finished run (spawn.Finished)."""
  return spawn.run(cmd, compile_timeout(), os.path.join(work, ""))


def _build(src: str, key: str, path: str, flags: tuple, limit: int, cc: str):
  """Compile src (with its key embedded) with cc in a private build directory, load it from there, move it into
  the cache at path; the loaded library. A build that fails for want of space (diskcache.out_of_space) is made
  again in the private temporary directory, where every later build of the process goes too."""
  try: return _build_in(src, key, path, flags, limit, cc)
  except diskcache.Full as e:
    diskcache.full(os.path.dirname(path))
    fallback = os.path.join(entry_dir(key), key + ".so")
    if fallback == path: raise CompileError(f"cannot compile a kernel: {e}") from None
  try: return _build_in(src, key, fallback, flags, limit, cc)
  except diskcache.Full as e: raise CompileError(f"cannot compile a kernel: {e} (nor in the cache directory)") from None


def _failed(d: str, key: str, src: str, msg: str, said: str = "") -> Exception:
  """The error of a failed build in shard d: diskcache.Full when it ran out of space, else a CompileError with the
  source kept beside the entry (when it can be written)."""
  if diskcache.out_of_space(d, said=said): return diskcache.Full(f"no space left in {d}: {msg}")
  kept = os.path.join(d, key + ".failed.c")
  try:
    with open(kept, "w") as f: f.write(src)
  except OSError: kept = None
  return CompileError(msg, kept)


def _build_in(src: str, key: str, path: str, flags: tuple, limit: int, cc: str):
  d = os.path.dirname(path)
  try:
    with diskcache.build_dir(d) as work:
      so, c = os.path.join(work, "kernel.so"), os.path.join(work, "kernel.c")
      with open(c, "w") as f:
        f.write(f'{(head := tcc.preprocessed_headers(cc, False))}{src}\nconst char mt_cache_key[] = "{key}";\n')
      lib = None
      try:
        data, said = _compile(cc, flags, so, c, work, d, key, src, link := linking.link(cc, flags))
        lib = _open(so, key, flags)
      except CompileError as e:
        if link == linking.USUAL or isinstance(e.__cause__, spawn.Timeout): raise
      tcc.built(cc, bool(head))
      if lib is None and link != linking.USUAL:      # (linking.py: built or loaded as usual, else it fails as usual)
        data, said = _compile(cc, flags, so, c, work, d, key, src, linking.USUAL)
        if (lib := _open(so, key, flags)) is not None: linking.usual_only(cc)
      if lib is None:
        raise _failed(d, key, src, f"{cc} built a shared object that does not load as kernel {key}", said)
      # the library is loaded already: an entry that cannot be stored (the cache cleared meanwhile, a full disk)
      # only costs a later compile
      with contextlib.suppress(OSError): diskcache.install_library(path, so, data, limit)
      return lib
  except diskcache.Full: raise
  except OSError as e:
    if diskcache.out_of_space(d, e): raise diskcache.Full(f"no space left in {d}: {e}") from None
    raise


def _compile(cc: str, flags: tuple, so: str, c: str, work: str, d: str, key: str, src: str, link: tuple):
  """Run cc on c into so (in the build directory `work` of shard d) with these link arguments; the object's bytes
  and the compiler's messages, once they are a complete shared object (else the build's error)."""
  t = time.perf_counter()
  # (gcc and tcc record a source's base name only: the object's bytes depend on the source, not the directory)
  try: p = _run_compiler([cc, *_tuned(flags, cc), "-o", so, c, *link], work)
  except OSError: raise _no_compiler(cc) from None
  except spawn.Timeout as e:
    raise _failed(d, key, src, f"{cc} did not finish within {e.timeout:g} s and was stopped "
                  f"(MINITENSOR_COMPILE_TIMEOUT; set it higher for a very large kernel)") from e
  stats.compiles += 1
  stats.compile_seconds += time.perf_counter() - t
  said = p.stderr.strip()
  if p.returncode != 0: raise _failed(d, key, src, f"{cc} failed:\n{said}", said)
  if not os.path.isfile(so):
    raise _failed(d, key, src, f"{cc} exited with status 0 but wrote no shared object" +
                  (f": {said}" if said else ""), said)
  os.chmod(so, 0o600)
  with open(so, "rb") as f: data = f.read()
  if not diskcache.elf_complete(data):           # (a short object would SIGBUS in dlopen)
    raise _failed(d, key, src, f"{cc} exited with status 0 but wrote an incomplete shared object "
                  f"({len(data)} bytes)", said)
  return data, said


def _memory_hit(key: str) -> dict[str, Kernel] | None:
  if (ks := _loaded.pop(key, None)) is not None:
    stats.memory_hits += 1
    _loaded[key] = ks                       # the most recently used
  return ks


def _keep(key: str, ks: dict[str, Kernel]) -> None:
  _loaded[key] = ks
  while len(_loaded) > LOADED_LIMIT: del _loaded[next(iter(_loaded))]


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


UNIT_BREAK = "\n/* mt: unit */\n"   # between self-contained pieces of a source (a schedule's kernels: compile_units)
PARALLEL_SOURCE = 16_000           # characters of C from which those pieces compile as several units at once


def compile_units(prelude: str, src: str, flags: tuple, cc: str, signatures: Signatures) -> dict[str, Kernel]:
  """compile_c of prelude + src, where src is pieces of C joined by UNIT_BREAK, each complete after the prelude
  (a kernel with its guarded helpers): one translation unit, or, for a long source on a machine with cores to spare,
  one unit per core, balanced by length, compiled at the same time (each its own cache entry). The 30 kernels of
  benchmarks/bench_loops.py's jitted training step took 682 ms at -O3 as one unit (AMD EPYC Zen 5, 2 cores)."""
  pieces = src.split(UNIT_BREAK)
  n = min(machine().cores, len(pieces))
  if n < 2 or len(src) < PARALLEL_SOURCE: return compile_c(prelude + src, flags, cc, signatures)
  groups: list[list[int]] = [[] for _ in range(n)]
  sizes = [0] * n
  for k in sorted(range(len(pieces)), key=lambda k: -len(pieces[k])):     # the longest first, to the lightest unit
    g = sizes.index(min(sizes))
    groups[g].append(k)
    sizes[g] += len(pieces[k])
  units = [UNIT_BREAK.join(pieces[k] for k in sorted(g)) for g in groups]
  results: list = [None] * n
  def build(i: int) -> None:
    names = {name for name, _ in _SIG.findall(units[i])}
    try: results[i] = compile_c(prelude + units[i], flags, cc, {f: p for f, p in signatures.items() if f in names})
    except BaseException as e: results[i] = e            # noqa: BLE001  (raised below, in the caller's thread)
  threads = [threading.Thread(target=build, args=(i,), name="minitensor-compile") for i in range(1, n)]
  for t in threads: t.start()
  build(0)
  for t in threads: t.join()
  kernels: dict[str, Kernel] = {}
  for r in results:
    if isinstance(r, BaseException): raise r
    kernels.update(r)
  return kernels


def _load(src: str, key: str, flags: tuple, cc: str, signatures: Signatures | None) -> dict[str, Kernel]:
  limit = cache_limit()                       # a bad MINITENSOR_CACHE_BYTES fails before any compile
  compile_timeout()                           # and so does a bad MINITENSOR_COMPILE_TIMEOUT
  path = os.path.join(entry_dir(key), key + ".so")
  # parameters as the caller passes them: every pointer a void* (buffers pass as from_buffer cdata), sizes int64_t
  sigs = list(signatures.items()) if signatures is not None else \
    [(name, tuple("void*" if "*" in p else "int64_t" for p in params.split(",") if p.strip()))
     for name, params in _SIG.findall(src)]
  if diskcache.valid(path) and (lib := _open(path, key, flags)) is not None:
    stats.disk_hits += 1
    with contextlib.suppress(OSError): os.utime(path)      # recently used: last to be evicted
  else: lib = _build(src, key, path, flags, limit, cc)
  try: fns = {name: lib.load_function(native().fn_type(ps), name) for name, ps in sigs}
  except AttributeError as e: raise KeyError(f"compile_c: {e}") from None     # a function the source lacks
  kernels = {name: Kernel(name, src, fns[name], len(ps), lib) for name, ps in sigs}
  try: lib.read_variable(native().int, "mt_serial")     # every rendered kernel's library has the switch
  except KeyError: pass
  else:
    _threaded.update(kernels.values())
    if _serial: _set_serial(lib)
  return kernels


def call(k: Kernel, arrays: list[np.ndarray]) -> None:
  """Run k on contiguous ndarrays (one per parameter, in slot order)."""
  k.fn(*[native().from_buffer(a) for a in arrays])
