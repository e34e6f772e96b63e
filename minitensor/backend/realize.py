"""realize: shaped graphs over realized buffers -> ndarrays.

The frontend's realized data are BUFFER leaves whose slot is a process-unique buffer id (`buffer_of`).
realize(outputs) keys the compiled-program cache on the graph's structure (`structure`: no data), in which realized
leaves are abstracted to their position and dtype, Python scalars to kernel arguments (`lifted`), and, when every
value is small, the sizes to tokens that say only which sizes are equal (symbolic sizes: one program serves every
graph of the key; the sizes are passed when it runs: keys.py). A graph of fresh nodes whose structure was met before
finds that program by its nodes' tree ids (keys.find), without the walk. A hit runs the program on the new buffers
without kernelizing, lowering, rendering or compiling anything. A miss looks for the key's run plan on disk
(plans.py; then only the library is loaded), else renumbers the leaves 0..n-1 (`_renumber`), kernelizes and lowers
(`schedule_of`), renders and compiles, and stores the plan. `Plan` and `Call` are the contract between lowering and
running: the C source, its tier, and per kernel its function, buffers and size arguments.

A graph realized again over the same source nodes (`np.asarray(t + u)` in a loop: a fresh root, the same t and u)
runs its `replay.Bound` plan from the fourth time on, without a walk (the dispatch cost W9 of DESIGN.md). A bound
plan lives as long as its sources, and declines when a node it would compute has been realized since (that value
is read, as a new walk would). A plan's intermediate buffers come from buffers.py's pool, and its outputs are lent
from it (they return when the caller drops them).

Graphs that only move data of one buffer (views, element reads) are answered by NumPy views (numpy_views.py)
and never compile: `int(x[3])`, `x.tolist()` and `repr(x)` of a realized tensor cost no compiler call.
"""
from __future__ import annotations
import math
import os
import threading
import time
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, NamedTuple
import numpy as np
from minitensor.backend import buffers, fpstatus, keys, plans, replay, tcc, tiers
from minitensor.backend.canonical import canonical
from minitensor.backend.keys import structure  # noqa: F401 (this module's API)
from minitensor.backend.leaves import (  # noqa: F401 (this module's API)
  Unbound,
  any_borrowed,
  array_of,
  borrow,
  buffer_of,
  is_borrowed,
  lifted,
)
from minitensor.backend.numpy_views import VIEW_COPY_LIMIT, base_of, leaf_of, numpy_view
from minitensor.backend.plans import Call, Plan
from minitensor.backend.prelude import PRELUDE
from minitensor.backend.runtime import UNIT_BREAK, CompileError, Kernel, Once, compile_units, log, native, stats
from minitensor.backend.runtime import pointer as _pointer
from minitensor.backend.sizes import Sizes, extend
from minitensor.backend.uop import FLOAT_ARG, Ops, ParamArg, UOp, argkey, prod

if TYPE_CHECKING:
  from minitensor.backend.kernelize import Schedule
  from minitensor.backend.lowerings import Program


def _from_buffer(a):
  """A kernel's pointer argument to a's memory (cffi's backend is imported at the first kernel load)."""
  return native().from_buffer(a)


DEBUG = int(os.environ.get("MINITENSOR_DEBUG", "0") or 0)
FRAMES = 16                  # the sizes whose run arguments a program keeps (Compiled._frame)
_POINTER: tuple = ()         # runtime.pointer(), once a program has run
_BUFFER, _CONST = Ops.BUFFER, Ops.CONST   # (read per realization: an Enum member through Ops costs 90 ns, uop.py)


def _pointers() -> tuple:
  global _POINTER
  _POINTER = _pointer()
  return _POINTER


class Compiled:
  """A plan with its kernels loaded (at `plan.tier`, tiers.py): run it on a list of input arrays. At tier 0 the
  run time is accumulated; once tiers.hot says so the tier-1 compile starts on a background thread, and its
  functions replace `fns` in one assignment (and the stored plan says tier 1 from then on)."""

  def __init__(self, plan: Plan, n_inputs: int, fns: list, compile_seconds: float = 0.0, *, checked: bool = False,
               tier: int = 1, disk_key: str | None = None, work: int = 0, stages: dict | None = None):
    self.plan, self.n_inputs, self.compile_seconds, self.checked = plan, n_inputs, compile_seconds, checked
    self.fns: list[tuple[Kernel, tuple[int, ...], tuple, tuple[int, ...]]] = fns   # (kernel, slots, arguments, vars)
    self.tier, self.disk_key, self.work = tier, disk_key, work   # disk_key: where the plan is stored (plans.py)
    self.runs = 0
    self.elapsed = 0.0                                   # run time at tier 0 (work: predicted statements executed)
    self.upgrade: threading.Thread | None = None
    self.frames: dict = {}                               # sizes -> what a run with them needs (_frame)
    self.scalar: list | None = None                      # tier-0 functions confirming a tier-1 INVALID flag (flags)
    # a symbolic program's specializations (specialize): its sizes -> the program for them (None while it compiles,
    # False when that failed); `streak` runs in a row took `streak_time` seconds with the sizes `last`; `want`: sizes
    # hot enough to specialize (realize starts it)
    self.specializable = False
    self.special: dict = {}
    self.last: tuple = ()
    self.streak, self.streak_time = 0, 0.0
    self.want: tuple | None = None
    # the first call's seconds per stage: key, plan (the disk's plan looked up), import (of the lowering stages, by a
    # process's first compile), kernelize (finding the kernels), lower (each kernel), render, compile (the C
    # compiler), load (the library found or installed, dlopen), run; MINITENSOR_DEBUG logs them
    self.stages: dict = {} if stages is None else stages

  def __call__(self, inputs: list[np.ndarray], sizes: tuple[int, ...] = ()) -> list[np.ndarray]:
    """The outputs of the plan on `inputs`; sizes: the values of the graph's size tokens (a symbolic plan)."""
    if (frame := self.frames.get(sizes)) is None: frame = self._frame(len(inputs), sizes)
    allocs, args, full, temps = frame
    bufs = list(inputs)      # (an output is lent from buffers' pool, an intermediate taken and given back)
    for count, d, out in allocs: bufs.append(buffers.result(count, d) if out else buffers.take(count, d))
    timed = self.tier != 1 or self.specializable        # (ran reads the time of these runs only)
    t = time.perf_counter() if timed else 0.0
    fp = fpstatus.FLAGS.word
    fb, chars = _POINTER or _pointers()
    if DEBUG or self.checked: self._run_slow(bufs, full, fp)
    else:
      for (k, slots, _, _), ints in zip(self.fns, args): k.fn(*[fb(chars, bufs[i], False) for i in slots], *ints, fp)
    if timed: self.ran(t, sizes)
    else: self.runs += 1
    if temps: buffers.give([bufs[i] for i in temps])
    if fp[0]: self.flags(fp, [fb(chars, a, False) for a in inputs], full)
    return [bufs[o] for o in self.plan.outputs]

  def _frame(self, n_inputs: int, sizes: tuple[int, ...]) -> tuple:
    """What a run with `sizes` needs besides its arrays, kept per sizes (a loop repeats them): each buffer's element
    count, numpy dtype and whether it is an output; each kernel's integer arguments; the sizes with the derived ones
    (sizes.extend); the slots of the intermediates (given back to the pool after the run)."""
    p = self.plan
    outs = set(p.outputs)
    allocs = tuple((n * math.prod([sizes[v] for v in vs]) if vs else n, np.dtype(d), n_inputs + k in outs)
                   for k, (n, vs, d) in enumerate(p.buffers))
    full = extend(sizes, p.derived) if p.derived else sizes
    args = tuple(c.sizes + tuple([full[v] for v in c.vars]) for c in p.calls)
    temps = tuple(n_inputs + k for k, a in enumerate(allocs) if not a[2])
    if len(self.frames) >= FRAMES: self.frames.clear()
    frame = self.frames[sizes] = (allocs, args, full, temps)
    return frame

  def flags(self, fp, inputs: list, sizes: tuple[int, ...]) -> None:
    """Report the floating-point flags a run left in fp (fpstatus.report; inputs: its input pointers; sizes: the
    graph's sizes and the derived ones, sizes.extend). Tier 1's vectorized code raises flags where NumPy does not:
    those it raises only there are dropped (fpstatus.spurious), those it may raise (fpstatus.confirmable) are
    taken from the plan's tier-0 code (scalar, quiet compares, libm) run on the same inputs instead, unless
    np.errstate ignores them."""
    if self.tier == 1: fp[0] &= ~fpstatus.spurious(self.plan.src)
    if self.tier == 1 and (check := fp[0] & fpstatus.confirmable(self.plan.src) & ~fpstatus.ignored()):
      if self.scalar is None: self.scalar = _functions(self.plan, 0, self.checked)
      fb, chars = _pointer()
      ptrs = list(inputs) + [fb(chars, np.empty(n * math.prod([sizes[v] for v in vs]), d), False)
                             for n, vs, d in self.plan.buffers]
      err = [_from_buffer(np.zeros(3, np.int64))] if self.checked else []
      rest, fp[0] = fp[0] & ~check, 0
      for k, slots, extra, vs in self.scalar: k.fn(*[ptrs[i] for i in slots], *extra, *[sizes[v] for v in vs], *err, fp)
      fp[0] = rest | (fp[0] & check)
    if fp[0]: fpstatus.report(fp, self.plan.src)

  def ran(self, t: float, sizes: tuple[int, ...] = ()) -> None:
    """Count a run with `sizes` that started at perf_counter() t. At tier 0 its time counts towards the tier-1
    compile; in a specializable program, runs with the same sizes in a row count towards their specialization
    instead (`want`, which realize starts), and the tier-1 compile waits until the sizes have changed."""
    self.runs += 1
    if self.tier == 1 and not self.specializable: return          # (the steady state of most programs)
    dt = time.perf_counter() - t
    if self.tier == 0: self.elapsed += dt
    if self.specializable:
      if sizes != self.last: self.last, self.streak, self.streak_time = sizes, 0, 0.0
      self.streak += 1
      self.streak_time += dt
      if tiers.hot(self.streak, self.streak_time) and sizes not in self.special and \
          len(self.special) < tiers.MAX_SPECIAL and self.want is None:
        self.want = sizes
        return
      # every run had these sizes and their specialization is on its way: no tier-1 compile of this one
      if self.streak == self.runs and self.special.get(sizes, False) is not False: return
    if self.tier == 0 and self.upgrade is None and (self.runs >= tiers.HOT_RUNS or self.elapsed > tiers.HOT_SECONDS) \
        and tiers.hot(self.runs, self.elapsed) and (m := modes(strict=False)) is not None and m.tier == "auto":
      self._tier_up()

  def _tier_up(self) -> None:
    """Compile at tier 1 on a background thread; swap the functions in when done (a failed compile keeps tier 0)."""
    def work() -> None:
      try: fns = _functions(self.plan, 1, self.checked)
      except Exception as e:                   # noqa: BLE001  (the tier-0 code keeps working)
        log().warning(f"minitensor: the tier-1 compile failed, staying at tier 0: {e}")
        return
      self.fns, self.tier = fns, 1
      if self.disk_key is not None: plans.store(self.disk_key, self.plan._replace(tier=1).to_json())
    self.upgrade = threading.Thread(target=work, name="minitensor-tier1", daemon=True)
    self.upgrade.start()

  def _run_slow(self, bufs: list[np.ndarray], sizes: tuple[int, ...], fp) -> None:
    """The kernels one by one: timed and logged (MINITENSOR_DEBUG), bounds-checked (MINITENSOR_CHECK)."""
    origin = f"tier {self.tier}, " + (f"compiled in {self.compile_seconds * 1e3:.1f} ms" if self.runs == 0
                                      else "cache hit")
    err = np.zeros(3, np.int64)
    for (k, slots, extra, vs), c in zip(self.fns, self.plan.calls):
      args = [_from_buffer(bufs[i]) for i in slots] + list(extra) + [sizes[v] for v in vs]
      if self.checked: args.append(_from_buffer(err))
      args.append(fp)
      t = time.perf_counter()
      k.fn(*args)
      dt = time.perf_counter() - t
      if err[0]:
        what = (f"buffer data{err[1]} (schedule buffer {slots[err[1]]}, size {bufs[slots[err[1]]].size})"
                if err[1] >= 0 else f"accumulator acc{-1 - err[1]}")
        raise IndexError(f"checked mode: kernel {k.name} computing {c.shape} {c.dtype} accessed index {err[2]} "
                         f"of {what}")
      if DEBUG:
        nbytes = sum(bufs[i].nbytes for i in slots)
        log().debug(f"{k.name:4s} {str(c.shape):18s} {c.dtype:8s} {dt * 1e6:9.1f} us "
                  f"{nbytes / max(dt, 1e-9) / 1e9:7.2f} GB/s  {origin}")


_cache: OrderedDict = OrderedDict()
# programs kept in memory, least recently used dropped: each holds its loaded library (runtime keeps 256 more), so
# this bounds the libraries a loop over many distinct graphs keeps mapped; a dropped program comes back from its
# plan and library on disk (no lowering, no compile)
CACHE_SIZE = 1024


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
  """Wait for the tier-1 compiles and specializations running in the background (benchmarks measure the steady
  state after them)."""
  for c in list(_cache.values()):
    if c.upgrade is not None: c.upgrade.join(timeout)
  for w in list(_specializing): w.join(timeout)


class Mode(NamedTuple):
  """The environment's modes for building a program (read by modes once per change of the environment)."""
  checked: bool           # MINITENSOR_CHECK=1: every load and store tests its index
  tier: str               # MINITENSOR_TIER: "0", "1" or "auto"


class ProgramKey(NamedTuple):
  """The key of a compiled program in the memory cache and (as plans.plan_key) on disk: the graph's structure
  (`structure`), the modes, in checked mode the graph's sizes and input shapes (a checked kernel is lowered as
  the plain one is, the same arithmetic, but its guards name its buffers' sizes), whether it is the exact
  specialization of a symbolic program (specialize) and then the lanes of that program's ordered reduces
  (Plan.lanes), and whether it is the symbolic program of a large graph (`polymorphic`: its sizes range up to
  LARGE_MAX)."""
  structure: tuple
  mode: Mode
  concrete: tuple = ()
  exact: bool = False
  large: bool = False
  lanes: int = 0

  @property
  def flat(self) -> bool:
    """Whether the structure is a flat one: every kernel one loop over the outputs' elements (`structure`)."""
    return self.structure[0] == "flat"


def program(key: ProgramKey, outputs: list[UOp], leaves: list[UOp], sizes: tuple[int, ...] = ()) -> Compiled:
  """The compiled program of a graph: from its plan on disk when there is one (no lowering), else kernelized,
  lowered, rendered and compiled, and its plan stored. A small graph's symbolic program of loops in the automatic
  tier mode is specializable (`specialize`)."""
  prog = _program(key, outputs, leaves, sizes)
  prog.specializable = bool(sizes) and not (key.flat or key.large or key.mode.checked) and key.mode.tier == "auto"
  if prog.tier == 0 and prog.upgrade is None and tiers.eager(prog.work): prog._tier_up()    # (large work)
  return prog


def _program(key: ProgramKey, outputs: list[UOp], leaves: list[UOp], sizes: tuple[int, ...]) -> Compiled:
  t = time.perf_counter()
  disk = plans.plan_key(key)
  stored = plans.load(disk)
  stages = {"plan": time.perf_counter() - t}
  if stored is not None:
    try:
      plan = Plan.from_json(stored)
      fns = _functions(plan, plan.tier, key.mode.checked, stages)
    except (ValueError, KeyError, CompileError): pass      # a damaged plan: lowered again and rewritten below
    else:
      stats.plan_hits += 1
      if DEBUG >= 2: log().debug(plan.src)
      return Compiled(plan, len(leaves), fns, time.perf_counter() - t, checked=key.mode.checked, tier=plan.tier,
                      disk_key=disk, stages=stages)
  prog = compile_schedule(_renumber(outputs, leaves), len(leaves), sizes, flat=key.flat, exact=key.exact,
                          large=key.large, lanes=key.lanes)
  prog.stages = {**stages, **prog.stages}
  if DEBUG >= 2: log().debug(prog.plan.src)
  prog.disk_key = disk
  plans.store(disk, prog.plan.to_json())
  return prog


def compile_schedule(outputs: tuple[UOp, ...], n_inputs: int, sizes: tuple[int, ...] = (),
                     flat: bool = False, exact: bool = False, large: bool = False, lanes: int = 0) -> Compiled:
  """Kernelize, lower, render and compile (all kernels in one translation unit). sizes: the graph's sizes of a
  symbolic structure key, lowered as VARs (each in [2, SYMBOLIC_MAX]); the program serves every graph of that key.
  flat: the key is a flat one (every kernel one loop over sizes[0] elements). exact: a symbolic program's
  specialization (kernelize.schedule's `exact`, its ordered reduces in `lanes`), compiled at tier 1 (it is made in
  the background). large: the
  symbolic program of a large graph (VARs up to LARGE_MAX), which starts at tier 0 whatever its work (it is compiled
  in the foreground of a loop that changes shapes; program() starts its tier-1 compile at once when the work is
  large: tiers.eager)."""
  t = time.perf_counter()
  checked = os.environ.get("MINITENSOR_CHECK") == "1"
  import minitensor.backend.kernelize  # noqa: F401  (the lowering stages: a process's first compile imports them)
  from minitensor.backend.lowerings import HAND_WRITTEN
  imported = time.perf_counter()
  sched = schedule_of(outputs, n_inputs, sizes, flat, exact, large, lanes)
  scheduled = time.perf_counter() - t      # (kernelize: finding the kernels; lower: lowering each)
  stages = {"import": imported - t, "kernelize": scheduled - (imported - t) - sched.lower_seconds,
            "lower": sched.lower_seconds}
  # kernels with the same Program (the pieces of a long chain cut by the kernelizer) share one function
  names: dict[Program, str] = {}
  for k in sched.kernels: names.setdefault(k.program, k.name)
  src = UNIT_BREAK.join(fpstatus.instrument(p.render(name, checked), name, p.sink, p.kind != "attention")
                  for p, name in names.items())
  calls = tuple(Call(names[k.program], k.slots, k.program.sizes, k.ast.shape, k.ast.dtype.name, k.program.vars)
                for k in sched.kernels)
  work = sum(k.program.work for k in sched.kernels)
  tier = 1 if exact or not calls else tiers.choose(0 if large else work)
  bufs = tuple(_buffer_size(shape, n_el, sizes) + (d.name,) for shape, (n_el, d) in zip(sched.shapes, sched.buffers))
  needs = tuple(sorted(frozenset().union(*(p.needs for p in names))))
  # a foreground tier-1 build of hand-vectorized kernels is made at -O2 (tiers.HAND_FLAGS); a background one (a
  # specialization, a tier-0 program's move to tier 1) keeps -O3, its compile time hidden
  hand = tier == 1 and not exact and \
    tiers.hand_written(work, sum(k.program.work for k in sched.kernels if k.program.kind in HAND_WRITTEN))
  plan = Plan(src, tier, calls, bufs, sched.outputs, needs, sched.derived, sched.lanes, hand)
  stages["render"] = time.perf_counter() - t - scheduled
  return Compiled(plan, n_inputs, _functions(plan, tier, checked, stages), time.perf_counter() - t, checked=checked,
                  tier=tier, work=work, stages=stages)


def schedule_of(outputs: tuple[UOp, ...], n_inputs: int, sizes: tuple[int, ...], flat: bool,
                exact: bool = False, large: bool = False, lanes: int = 0) -> Schedule:
  """The schedule of renumbered outputs: symbolic over `sizes` (each a VAR in [2, SYMBOLIC_MAX], or LARGE_MAX for a
  large graph's) when given. A large graph's symbolic program is optimized (opt.py's actions at symbolic sizes, with
  tails); a small one's is not (it serves sizes from 2 up, and its hot sizes get specializations)."""
  # the lowering stages are imported by the first compile (a run from the caches needs none of them)
  from minitensor.backend.kernelize import schedule
  symbolic = Sizes(sizes, LARGE_MAX if large else keys.SYMBOLIC_MAX) if sizes else None
  return schedule(list(outputs), n_inputs, optimize=large or not sizes, sizes=symbolic, flat=flat, exact=exact,
                  lanes=lanes)


def scheduled(outputs: list[UOp]) -> tuple[Schedule, list[np.ndarray]]:
  """The schedule realize(outputs) runs (symbolic where it would be) and its input arrays: what `explain` shows."""
  outputs = canonical_graph(outputs)
  skey, leaves, sizes = structure(outputs)
  key = ProgramKey(skey, modes())
  if not sizes and (poly := polymorphic(outputs, key)) is not None: key, sizes = poly
  return schedule_of(_renumber(outputs, leaves), len(leaves), sizes, key.flat, large=key.large), arrays_of(leaves)


def _buffer_size(shape: tuple[int, ...], n: int, sizes: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
  """A schedule buffer's element count as (constant, graph sizes whose product it multiplies) for the plan."""
  if not sizes or n < 2: return n, ()
  if all(v < 2 or v in sizes for v in shape):
    return math.prod([v for v in shape if v < 2]), tuple(sizes.index(v) for v in shape if v >= 2)
  return 1, (sizes.index(n),)            # a flat key: every buffer has the one size


def _functions(plan: Plan, tier: int, checked: bool = False, stages: dict | None = None) -> list:
  """(kernel, buffer slots, arguments after the buffers, graph sizes) of every call of the plan, its library
  compiled (or found in the caches) at `tier`. Each function's parameters follow from its call: the buffers,
  then the loop size of a flat kernel and the graph sizes (int64_t), then checked mode's error buffer, then the
  floating-point flags word (fpstatus.py). stages: where the seconds of compile and load are added."""
  if not plan.calls: return []
  t, compiling = time.perf_counter(), stats.compile_seconds
  cc, flags = tiers.toolchain(tier, tiers.tcc_lacks(plan.needs), plan.hand)
  err = ("void*",) if checked else ()
  sigs = {c.fn: ("void*",) * len(c.slots) + ("int64_t",) * (len(c.sizes) + len(c.vars)) + err + ("void*",)
          for c in plan.calls}
  lib = compile_units(PRELUDE, plan.src, flags, cc, sigs)
  if stages is not None:          # (a background tier-1 compile's seconds may count too: a first call's figures)
    stages["compile"] = compiled = stats.compile_seconds - compiling
    stages["load"] = max(time.perf_counter() - t - compiled, 0.0)
  return [(lib[c.fn], c.slots, c.sizes, c.vars) for c in plan.calls]


def normalize(outputs: list[UOp]) -> tuple[tuple[UOp, ...], list[np.ndarray]]:
  """The outputs with realized leaves renumbered 0..n-1 in the order `structure` lists them, and the arrays of
  those leaves (the graph a schedule is compiled for, on a cache miss)."""
  leaves = structure(outputs)[1]
  return _renumber(outputs, leaves), arrays_of(leaves)


def arrays_of(leaves: list[UOp]) -> list[np.ndarray]:
  """The input arrays of a schedule: each realized leaf's data, each lifted constant as a one-element array."""
  return [b.data if b.data is not None else np.array((b.arg,), b.dtype.np) for b in leaves]   # (np.full: 3x)


def _renumber(outputs: list[UOp], leaves: list[UOp]) -> tuple[UOp, ...]:
  slots = {u: UOp(Ops.BUFFER, (), ParamArg(k, u.arg.dtype, u.arg.shape)) if u.op is Ops.BUFFER else
           UOp(Ops.BUFFER, (), ParamArg(k, u.dtype, (prod(u.shape),))).reshape(u.shape) for k, u in enumerate(leaves)}
  return tuple(o.substitute(slots) for o in outputs)


LARGE_MAX = 1 << 40       # sizes a symbolic program of a large graph serves (its VARs' bound)
_first_shape: OrderedDict = OrderedDict()     # symbolic key of a large graph -> the concrete key it was first seen with


def polymorphic(outputs: list[UOp], key: ProgramKey) -> tuple[ProgramKey, tuple[int, ...]] | None:
  """The symbolic program's key and the sizes for a large graph (keyed concretely) whose own sizes have no program
  yet, in memory or on disk: one program serves every shape of its structure, so a loop over a mask's count, a
  write's position or a growing slice, or a softmax over batches of changing sizes compiles nothing new after
  its first shape. The program is optimized at the sizes it is first seen at (opt.py's actions, with tails where a
  factor does not divide) and has no specializations: a shape's results never change while it runs. None (the
  graph is compiled for its sizes) where its sizes choose kernels a symbolic schedule cannot make
  (kernelize.sized_choices: a GEMM, attention; for the first shape of its structure also a split reduction, a pad,
  a search), for a graph elementwise over whole operands (its one loop already takes any size) and in checked
  mode."""
  if key.mode.checked or key in _cache: return None
  if (known := _served.get(key)) is not None:
    _served.move_to_end(key)
    return known
  if (r := keys.walk(outputs, True, LARGE_MAX)) is None or r[0][0] == "flat" or not r[2]: return None
  skey, _, sizes = r
  first = _first_shape.setdefault(skey, key) == key
  if len(_first_shape) > CACHE_SIZE: _first_shape.popitem(last=False)
  # (only the first shape of a structure is compiled for its sizes, so only its plan may be on disk: a loop whose
  # mask count changes every step reads no file per step)
  if first and plans.load(plans.plan_key(key)) is not None: return None
  from minitensor.backend.kernelize import sized_choices  # (a lowering stage: imported at the first compile)
  if sized_choices(outputs, first): return None
  _served[key] = out = (ProgramKey(skey, key.mode, large=True), sizes)
  if len(_served) > CACHE_SIZE: _served.popitem(last=False)
  return out


_served: OrderedDict = OrderedDict()      # concrete key of a large graph -> the symbolic program's key and its sizes


def realize(outputs: list[UOp]) -> list[np.ndarray]:
  """The values of shaped graphs (leaves: BUFFERs from buffer_of, CONSTs) as contiguous ndarrays."""
  sig = csig = None
  if len(outputs) == 1 and (o := outputs[0]).data is None and o.src and (m := modes(strict=False)) is not None:
    if not (m.checked or DEBUG):
      sig = (m.tier, o.op, argkey(o.arg) if o.op in FLOAT_ARG else o.arg, o.dtype, *map(id, o.src))
      if (b := replay.bound.get(sig)) is not None and (r := b.run(o)) is not None: return r
      # (a plan whose numbers are arguments: `p * i` over a loop's i)
      if (csig := replay.constant_sig(sig, o)) is not None and (b := replay.bound.get(csig)) is not None and \
          (r := b.run(o)) is not None: return r
  views = [numpy_view(o) for o in outputs]
  if all(v is not None and (v.size <= VIEW_COPY_LIMIT or v.flags.c_contiguous) for v in views):
    # (ascontiguousarray would make 0-d arrays 1-d); a view of a user's memory is copied: results never alias it
    user = [is_borrowed(leaf_of(o)) for o in outputs]
    res = [np.array(v, order="C", copy=True) if u else np.asarray(v, order="C") for v, u in zip(views, user)]
    borrowed = any(user)
  else:
    mode = modes()
    t = time.perf_counter()
    k, hit = keys.find(outputs, mode)
    if hit is not None:
      prog, leaves, sizes = hit
      stats.graph_hits += 1
    else:
      prog, leaves, sizes = lookup(outputs, mode)
      if k is not None: keys.keep(k, prog, leaves, sizes)
    inputs = arrays_of(leaves)
    prog, sizes = chosen(prog, sizes, mode, lambda: (canonical_graph(outputs), leaves))
    first = prog.runs == 0 and "run" not in prog.stages
    if first: prog.stages["key"] = max(time.perf_counter() - t - sum(prog.stages.values()), 0.0)
    if fpstatus.QUIET: fpstatus.realizing(outputs)       # (operations built under np.errstate: fpstatus.note_quiet)
    t = time.perf_counter()
    res = [r.reshape(o.shape) for r, o in zip(prog(inputs, sizes), outputs)]
    if first: _first_call(prog, time.perf_counter() - t)
    if fpstatus.QUIET: fpstatus.realizing(None)
    borrowed = any_borrowed(leaves)
    if sig is not None and prog.plan.outputs[0] >= len(inputs):    # (not a value that is an input's array)
      keep = not borrowed and base_of(o).op is not _CONST
      replay.remember(sig, o, prog, leaves, inputs, sizes, keep)
      if csig is not None: replay.remember(csig, o, prog, leaves, inputs, sizes, keep)
  # the nodes keep their values (hash-consing shares them with every graph that computes the same thing), unless
  # they read a user's memory, which may change after this realization
  if not borrowed:
    for o, r in zip(outputs, res):
      if o.op is not _BUFFER and base_of(o).op is not _CONST:     # (nor broadcast constants)
        keys.realized(o)
        o.data = r
  return res


STAGES = ("key", "plan", "import", "kernelize", "lower", "render", "compile", "load", "run")


def _first_call(prog: Compiled, run: float) -> None:
  """Record the first run's seconds in prog.stages, log the first call's stages (MINITENSOR_DEBUG), and start the
  work its build left for after the result (tcc.start_headers)."""
  prog.stages["run"] = run
  tcc.start_headers()
  if DEBUG:
    parts = ", ".join(f"{s} {prog.stages[s] * 1e3:.2f} ms" for s in STAGES if s in prog.stages)
    log().debug(f"minitensor: first call of a program ({len(prog.plan.calls)} kernel(s), tier {prog.tier}): {parts}")


def lookup(outputs: list[UOp], mode: Mode) -> tuple[Compiled, list[UOp], tuple[int, ...]]:
  """The program computing the graphs `outputs` in `mode` (from memory, from its plan on disk, or compiled now),
  the graph's leaves in the order of the program's inputs, and the sizes to run it with."""
  outputs = canonical_graph(outputs)
  skey, leaves, sizes = structure(outputs)
  key = ProgramKey(skey, mode, (sizes, tuple(b.shape for b in leaves)) if mode.checked else ())
  if not sizes and (poly := polymorphic(outputs, key)) is not None: key, sizes = poly
  return _schedules.get(key, lambda: program(key, outputs, leaves, sizes)), leaves, sizes


def canonical_graph(outputs: list[UOp]) -> list[UOp]:
  """The graph realize keys and lowers for `outputs`: their canonical form when every value is small enough for a
  symbolic program (canonical.py; large graphs keep the shapes their kernels are tuned at)."""
  return canonical(outputs, keys.SYMBOLIC_MAX)


def chosen(prog: Compiled, sizes: tuple[int, ...], mode: Mode, graph) -> tuple[Compiled, tuple[int, ...]]:
  """The program to run now, and its sizes: symbolic `prog`'s specialization to these sizes when it has one
  compiled, else prog (starting that specialization when prog wants it: graph() gives the graph being run and its
  leaves)."""
  if prog.special and (sp := prog.special.get(sizes)): return sp, ()
  if prog.want is not None: specialize(prog, *graph(), sizes, mode)
  return prog, sizes


def specialize(prog: Compiled, outputs: list[UOp], leaves: list[UOp], sizes: tuple[int, ...], mode: Mode) -> None:
  """Start compiling the specialization of symbolic program `prog` to the sizes it wants (`Compiled.want`) on a
  background thread, when the graph `outputs` has those `sizes` (else the wish is dropped: its run of the same
  sizes was broken): the graph's program for its concrete sizes, optimized for them but with the symbolic
  lowering's operation order (kernelize.schedule's `exact`), so a loop's results do not change when it arrives.
  Until then (and if its compile fails) the symbolic program runs."""
  wanted, prog.want = prog.want, None
  if wanted != sizes: return
  concrete, same, _ = keys.walk(outputs, False)
  if len(same) != len(leaves) or any(a is not b for a, b in zip(same, leaves)): return
  prog.special[sizes] = None                                         # (pending: not wanted again)
  key = ProgramKey(concrete, mode, exact=True, lanes=prog.plan.lanes)
  def work() -> None:
    try: prog.special[sizes] = program(key, outputs, leaves)
    except Exception as e:                   # noqa: BLE001  (the symbolic program keeps working)
      prog.special[sizes] = False
      log().warning(f"minitensor: a specialization failed to compile, the symbolic program runs: {e}")
  w = threading.Thread(target=work, name="minitensor-specialize", daemon=True)
  _specializing.add(w)
  w.start()


_specializing: weakref.WeakSet = weakref.WeakSet()       # the specializations compiling (settle waits for them)


_ENV = os.environ._data if os.name == "posix" else None      # bytes -> bytes: read without encoding and decoding
_MODES: dict[tuple, Mode] = {}


def modes(strict: bool = True) -> Mode | None:
  """The Mode of the environment now (tests and users change it between calls), without decoding
  os.environ on every realization. An invalid MINITENSOR_TIER raises ValueError, or gives None unless strict (it
  is an error where a program is needed, not for a view)."""
  raw = (_ENV.get(b"MINITENSOR_CHECK"), _ENV.get(b"MINITENSOR_TIER")) if _ENV is not None else None
  if (m := _MODES.get(raw)) is None:
    try: m = Mode(os.environ.get("MINITENSOR_CHECK") == "1", tiers.mode())
    except ValueError:
      if strict: raise
      return None
    if raw is not None: _MODES[raw] = m
  return m


ELEMENT_READ_WHOLE = 1 << 22


def realize_base(u: UOp) -> None:
  """Before an element read of u: when u only moves a computed value b of at most ELEMENT_READ_WHOLE elements,
  realize b whole, so reading its other elements later costs no compile (a loop over t[i, j] reads one buffer)."""
  b = base_of(u)
  if b is not u and b.data is None and b.op not in (Ops.BUFFER, Ops.CONST) and prod(b.shape) <= ELEMENT_READ_WHOLE:
    realize([b])
