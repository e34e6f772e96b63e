"""realize: shaped graphs over realized buffers -> ndarrays.

The frontend's realized data are BUFFER leaves whose slot is a process-unique buffer id (`buffer_of`).
realize(outputs) keys the compiled-schedule cache on the graph's structure with those leaves abstracted to
their position, dtype and size (`structure`: no data). A hit runs the compiled kernels on the new buffers
without kernelizing, lowering, rendering or compiling anything; a miss renumbers the leaves 0..n-1
(`normalize`) and compiles the schedule of that graph.

Graphs that only move data of one buffer (views, element reads) are answered by NumPy views and never
compile: `int(x[3])`, `x.tolist()` and `repr(x)` of a realized tensor cost no compiler call.
"""
from __future__ import annotations
import itertools, logging, os, threading, time, weakref
from collections import OrderedDict
from dataclasses import dataclass, field
import numpy as np
from minitensor.backend.uop import UOp, Ops, ParamArg, MOVEMENT, FLOAT_ARG, prod, _argkey
from minitensor.backend.dtype import dtypes
from minitensor.backend.kernelize import schedule, Schedule
from minitensor.backend.linearize import operations
from minitensor.backend.render_c import PRELUDE, render_function
from minitensor.backend import tiers
from minitensor.backend.runtime import compile_c, Kernel, Once, stats, ffi


def _from_buffer(*args, **kw):
  """cffi's from_buffer; binds itself at the first call (cffi is imported by the first compile, not at import)."""
  global _from_buffer
  _from_buffer = ffi().from_buffer
  return _from_buffer(*args, **kw)

_ids = itertools.count(1 << 20)        # far from the small slots of hand-written kernels


def buffer_of(a: np.ndarray) -> UOp:
  """A fresh BUFFER leaf holding the C-contiguous ndarray `a` (the leaf keeps it alive)."""
  a = np.ascontiguousarray(a)
  u = UOp(Ops.BUFFER, (), ParamArg(next(_ids), dtypes.from_numpy(a.dtype), (a.size,)))
  u.data = a
  return u


def array_of(u: UOp) -> np.ndarray:
  """The ndarray behind a realized BUFFER leaf."""
  return u.data


_borrowed: dict[int, weakref.ref] = {}


def borrow(a: np.ndarray) -> np.ndarray:
  """Mark a as a user's memory wrapped without a copy (`asarray(a, copy=False)`): results are never views of it."""
  _borrowed[id(a)] = weakref.ref(a, lambda _, k=id(a): _borrowed.pop(k, None))
  return a


def is_borrowed(a: np.ndarray) -> bool:
  return a is not None and (r := _borrowed.get(id(a))) is not None and r() is a


DEBUG = int(os.environ.get("MINITENSOR_DEBUG", "0") or 0)
log = logging.getLogger("minitensor")
if DEBUG and not log.handlers:
  log.addHandler(logging.StreamHandler())
  log.setLevel(logging.DEBUG)


@dataclass
class Compiled:
  """A schedule with its kernels compiled (at `tier`, tiers.py): run it on a list of input arrays. At tier 0 the
  run time is accumulated; past tiers.HOT_SECONDS the tier-1 compile starts on a background thread, and its
  functions replace `fns` in one assignment."""
  sched: Schedule
  fns: list[tuple[Kernel, tuple[int, ...], tuple[int, ...]]]     # (kernel, buffer slots, size arguments)
  compile_seconds: float = 0.0
  runs: int = 0
  checked: bool = False
  tier: int = 1
  src: str = ""
  names: dict = field(default_factory=dict)     # each kernel's C function name
  elapsed: float = 0.0                          # run time at tier 0
  upgrade: threading.Thread | None = None

  def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
    s = self.sched
    bufs = list(inputs) + [np.empty(n, d.np) for n, d in s.buffers]
    t = time.perf_counter() if self.tier == 0 else 0.0
    if DEBUG or self.checked: self._run_slow(bufs)
    else:
      for k, slots, sizes in self.fns: k.fn(*[_from_buffer(bufs[i], require_writable=False) for i in slots], *sizes)
    if self.tier == 0:
      self.elapsed += time.perf_counter() - t
      if self.elapsed > tiers.HOT_SECONDS and self.upgrade is None and tiers.mode() == "auto": self._tier_up()
    self.runs += 1
    return [bufs[o] for o in s.outputs]

  def _tier_up(self) -> None:
    """Compile at tier 1 on a background thread; swap the functions in when done (a failed compile keeps tier 0)."""
    def work() -> None:
      cc, flags = tiers.toolchain(1, False)
      try: fns = _functions(self.sched, self.names, compile_c(self.src, flags, cc))
      except Exception as e:                   # noqa: BLE001  (the tier-0 code keeps working)
        log.warning(f"minitensor: the tier-1 compile failed, staying at tier 0: {e}")
        return
      self.fns, self.tier = fns, 1
    self.upgrade = threading.Thread(target=work, name="minitensor-tier1", daemon=True)
    self.upgrade.start()

  def _run_slow(self, bufs: list[np.ndarray]) -> None:
    """The kernels one by one: timed and logged (MINITENSOR_DEBUG), bounds-checked (MINITENSOR_CHECK)."""
    origin = f"tier {self.tier}, " + (f"compiled in {self.compile_seconds * 1e3:.1f} ms" if self.runs == 0 else "cache hit")
    err = np.zeros(3, np.int64)
    for (k, slots, sizes), spec in zip(self.fns, self.sched.kernels):
      args = [_from_buffer(bufs[i], require_writable=False) for i in slots] + list(sizes) + ([_from_buffer(err)] if self.checked else [])
      t = time.perf_counter()
      k.fn(*args)
      dt = time.perf_counter() - t
      if err[0]:
        what = f"buffer data{err[1]} (schedule buffer {slots[err[1]]}, size {bufs[slots[err[1]]].size})" if err[1] >= 0 else f"accumulator acc{-1 - err[1]}"
        raise IndexError(f"checked mode: kernel {k.name} computing {spec.ast.shape} {spec.ast.dtype.name} accessed index {err[2]} of {what}")
      if DEBUG:
        nbytes = sum(bufs[i].nbytes for i in slots)
        log.debug(f"{k.name:4s} {str(spec.ast.shape):18s} {spec.ast.dtype.name:8s} {dt * 1e6:9.1f} us "
                  f"{nbytes / max(dt, 1e-9) / 1e9:7.2f} GB/s  {origin}")


VIEW_COPY_LIMIT = 1 << 16      # larger non-contiguous views are copied by a compiled kernel (faster than NumPy)
_cache: OrderedDict = OrderedDict()
CACHE_SIZE = 4096


def _graph_hit(key) -> Compiled | None:
  if (prog := _cache.get(key)) is not None:
    stats.graph_hits += 1
    _cache.move_to_end(key)
  return prog


def _keep(key, prog: Compiled) -> None:
  stats.graph_misses += 1
  _cache[key] = prog
  if len(_cache) > CACHE_SIZE: _cache.popitem(last=False)


_schedules = Once(_graph_hit, _keep)     # compiled once per graph; different graphs compile in parallel


def settle(timeout: float | None = None) -> None:
  """Wait for the tier-1 compiles running in the background (benchmarks measure the steady state after it)."""
  for c in list(_cache.values()):
    if c.upgrade is not None: c.upgrade.join(timeout)


def compile_schedule(outputs: tuple[UOp, ...], n_inputs: int) -> Compiled:
  """Kernelize, lower, render and compile (all kernels in one translation unit)."""
  t = time.perf_counter()
  checked = os.environ.get("MINITENSOR_CHECK") == "1"
  sched = schedule(list(outputs), n_inputs)
  if not sched.kernels: return Compiled(sched, [])
  # kernels with the same local program (the pieces of a long chain cut by the kernelizer) share one function
  names: dict[tuple[UOp, bool], str] = {}
  for k in sched.kernels: names.setdefault((k.sink, bool(k.sizes)), k.name)
  src = PRELUDE + "\n".join(render_function(sink, name, checked, sized) for (sink, sized), name in names.items())
  if DEBUG >= 2: log.debug(src[len(PRELUDE):])
  tier = tiers.choose(_work(sched))
  cc, flags = tiers.toolchain(tier, tiers.tcc_lacks(src[len(PRELUDE):]))
  fns = _functions(sched, names, compile_c(src, flags, cc))
  return Compiled(sched, fns, time.perf_counter() - t, checked=checked, tier=tier, src=src, names=names)


def _functions(sched: Schedule, names: dict, lib: dict[str, Kernel]) -> list:
  """(kernel, buffer slots, size arguments) of every kernel of the schedule, from a compiled library."""
  return [(lib[names[k.sink, bool(k.sizes)]], k.slots, _extra(k)) for k in sched.kernels]


def _work(sched: Schedule) -> int:
  """The schedule's predicted work: the statements its kernels execute (at the shapes they were compiled for)."""
  return sum(operations(k.sink) for k in sched.kernels)


def _extra(k) -> tuple:
  """The arguments after the buffers: a size-generic kernel's argument array and loop sizes."""
  return ((_from_buffer(np.array(k.params, np.int64), require_writable=False),) if k.params else ()) + k.sizes


def normalize(outputs: list[UOp]) -> tuple[tuple[UOp, ...], list[np.ndarray]]:
  """The outputs with realized leaves renumbered 0..n-1 in the order `structure` lists them, and the arrays of
  those leaves (the graph a schedule is compiled for, on a cache miss)."""
  leaves = structure(outputs)[1]
  return _renumber(outputs, leaves), [b.data for b in leaves]


def _renumber(outputs: list[UOp], leaves: list[UOp]) -> tuple[UOp, ...]:
  slots = {u: UOp(Ops.BUFFER, (), ParamArg(k, u.arg.dtype, u.arg.shape)) if u.op is Ops.BUFFER else
           UOp(Ops.BUFFER, (), ParamArg(k, u.dtype, (prod(u.shape),))).reshape(u.shape) for k, u in enumerate(leaves)}
  return tuple(o.substitute(slots) for o in outputs)


def structure(outputs: list[UOp]) -> tuple[tuple, list[UOp]]:
  """A hashable key of the outputs' graph with realized leaves abstracted to (position, dtype, size), and the
  leaves in that order: equal keys mean the same computation on other data. A node whose value was realized
  before (it holds `data`) is a leaf too: its graph is not computed again. Builds no nodes (the hot path)."""
  pos: dict[UOp, int] = {}
  leaves: list[UOp] = []
  key: list = []
  for o in outputs:
    stack = [o]
    while stack:
      u = stack[-1]
      if u in pos: stack.pop(); continue
      known = u.data is not None
      todo = [s for s in u.src if s not in pos] if not known else None
      if todo: stack.extend(reversed(todo)); continue
      stack.pop()
      if known:
        key.append((Ops.BUFFER, u.dtype, u.shape, len(leaves)))
        leaves.append(u)
      else: key.append((u.op, u.dtype, _argkey(u.arg) if u.op in FLOAT_ARG else u.arg, tuple([pos[x] for x in u.src])))
      pos[u] = len(key) - 1
  key.append(tuple([pos[o] for o in outputs]))
  return tuple(key), leaves


def realize(outputs: list[UOp]) -> list[np.ndarray]:
  """The values of shaped graphs (leaves: BUFFERs from buffer_of, CONSTs) as contiguous ndarrays."""
  views = [_numpy_view(o) for o in outputs]
  if all(v is not None and (v.size <= VIEW_COPY_LIMIT or v.flags.c_contiguous) for v in views):
    # (ascontiguousarray would make 0-d arrays 1-d); a view of a user's memory is copied: results never alias it
    user = [is_borrowed(_leaf(o)) for o in outputs]
    res = [np.array(v, order="C", copy=True) if u else np.asarray(v, order="C") for v, u in zip(views, user)]
    borrowed = any(user)
  else:
    skey, leaves = structure(outputs)
    key = (skey, os.environ.get("MINITENSOR_CHECK") == "1", tiers.mode())
    prog = _schedules.get(key, lambda: compile_schedule(_renumber(outputs, leaves), len(leaves)))
    res = [r.reshape(o.shape) for r, o in zip(prog([b.data for b in leaves]), outputs)]
    borrowed = any(is_borrowed(b.data) for b in leaves)
  # the nodes keep their values (hash-consing shares them with every graph that computes the same thing), unless
  # they read a user's memory, which may change after this realization
  if not borrowed:
    for o, r in zip(outputs, res):
      if o.op is not Ops.BUFFER and _base(o).op is not Ops.CONST: o.data = r     # (nor broadcast constants)
  return res


def _base(u: UOp) -> UOp:
  """The node whose value a graph of movement ops moves (a realized one, or the first that is not a movement)."""
  while u.op in MOVEMENT and u.data is None: u = u.src[0]
  return u


def _leaf(u: UOp) -> np.ndarray | None: return _base(u).data


ELEMENT_READ_WHOLE = 1 << 22


def realize_base(u: UOp) -> None:
  """Before an element read of u: when u only moves a computed value b of at most ELEMENT_READ_WHOLE elements,
  realize b whole, so reading its other elements later costs no compile (a loop over t[i, j] reads one buffer)."""
  b = _base(u)
  if b is not u and b.data is None and b.op not in (Ops.BUFFER, Ops.CONST) and prod(b.shape) <= ELEMENT_READ_WHOLE:
    realize([b])


def _numpy_view(u: UOp) -> np.ndarray | None:
  """u as a NumPy view when u only moves the data of one realized value (or of a constant); else None."""
  moves = []
  while u.data is None and u.op in (Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.SHRINK, Ops.FLIP, Ops.PAD):
    moves.append(u)
    u = u.src[0]
  if u.data is not None: x = u.data
  elif u.op is Ops.CONST: x = np.array(u.arg, dtype=u.dtype.np)
  else: return None
  for m in reversed(moves):
    if m.op is Ops.PAD:
      if x.size > VIEW_COPY_LIMIT: return None
      x = np.pad(x, m.arg[0], constant_values=m.arg[1])
    elif m.op is Ops.RESHAPE: x = x.reshape(m.arg)
    elif m.op is Ops.EXPAND: x = np.broadcast_to(x, m.arg)
    elif m.op is Ops.PERMUTE: x = x.transpose(m.arg)
    elif m.op is Ops.FLIP: x = np.flip(x, m.arg)
    else: x = x[tuple(slice(b, e) for b, e in m.arg)]
  return x
