"""search: a beam search over Opts actions, timed on this machine, remembered per (kernel structure, CPU).

opts_for(body) gives the Opts of a kernel lowered for its concrete sizes (kernelize._lower_kernel):

    1. its tuning record, when this CPU has one (plans.py: `<key>.tune`, keyed by kernel_key, the target CPU and
       the backend's digest): the actions a search chose, replayed with opt.apply_opt
    2. else, with MINITENSOR_SEARCH=N (N >= 1), the winner of a beam search of width N, stored as its record
    3. else the heuristic's (opt.heuristic)

The search starts from two action lists, the heuristic's and the empty one. Each round extends every list of the
beam by one action of `actions(info)` (those apply_opt refuses are skipped, and so are lists building Opts timed
before), compiles the new candidates at tier 1 in parallel (a thread pool running the C compiler), then times
them one at a time on random inputs of the kernel's buffers (the median of RUNS runs after a warm one). A
candidate whose output is not the default lowering's (Opts(); allclose at the dtype's tolerance, exact for
integers and bools) or that does not compile is dropped. The best N of everything timed form the next beam; the
search stops when a round improves the best time by less than MIN_GAIN, when no candidate is left, or at the
time budget (MINITENSOR_SEARCH_BUDGET seconds per kernel, default BUDGET). Then the best N and the heuristic are
timed again, taking turns (CONFIRM times each): the winner must beat the heuristic by MIN_GAIN there, or the
heuristic's actions are kept (a moment of load on the machine must not crown a candidate; these runs come after
the budget, at most about a second per kernel each). A kernel whose
heuristic lowering does more than twice its minimal loop work (one the kernelizer will cut and lower again) is not
searched.

Records and timings are for this machine: `python -m minitensor tune SCRIPT` runs a script with the search on
and prints what it found (`tuned`, this process's searched kernels and the records it used).
"""
from __future__ import annotations
import os
import time
from typing import NamedTuple
import numpy as np
from minitensor.backend import plans
from minitensor.backend.linearize import iterations
from minitensor.backend.machine import machine
from minitensor.backend.opt import EXACT, KernelInfo, Opt, OptOps, OptRefused, apply_opt, build, heuristic
from minitensor.backend.prelude import PRELUDE
from minitensor.backend.rangeify import lower
from minitensor.backend.ranges import Ctx, Opts
from minitensor.backend.render_c import render_function
from minitensor.backend.runtime import FLAGS, CompileError, compile_c, compiler, log, native
from minitensor.backend.uop import Ops, UOp, buf, prod

BUDGET = 60.0          # seconds of search per kernel, by default
RUNS = 5               # timed runs per candidate (their median)
MIN_GAIN = 0.02        # a round must beat the best time by this fraction to go on (and a winner the heuristic)
CONFIRM = 3            # turns of the final comparison
_TOL = {2: 1e-2, 4: 1e-4, 8: 1e-10}     # rtol by float item size (complex: by the size of a part)


class Tuned(NamedTuple):
  """A kernel whose Opts came from a search in this process (searched) or from its tuning record."""
  what: str
  before: float              # seconds: the heuristic's Opts
  after: float               # seconds: the chosen Opts
  actions: tuple[Opt, ...]
  searched: bool


tuned: list[Tuned] = []


def budget() -> float:
  """MINITENSOR_SEARCH_BUDGET: seconds of search per kernel (default BUDGET); ValueError for anything but a
  positive number."""
  s = os.environ.get("MINITENSOR_SEARCH_BUDGET", "").strip()
  if not s: return BUDGET
  try: t = float(s)
  except ValueError: t = float("nan")
  if not 0 < t < float("inf"):
    raise ValueError(f"MINITENSOR_SEARCH_BUDGET={s!r} is not a positive number of seconds (e.g. 30)")
  return t


def kernel_key(body: UOp) -> str:
  """The structural key of a kernel's shaped body: the nodes' own digest (UOp.key) with buffers renumbered."""
  return body.localize()[0].key.hex()


def describe(body: UOp, info: KernelInfo) -> str:
  """A kernel as `tune` lists it: its shape, dtype and innermost reduced size."""
  red = f", reduce {info.reduce_inner[0]}" if info.reduce_inner else ""
  return f"{tuple(body.shape)} {body.dtype.name}{red}"


def opts_for(body: UOp, exact: bool = False, symbolic: bool = False, lanes: int = 0) -> Opts:
  """The Opts of the kernel computing shaped `body` at its concrete sizes (see the module docstring); exact: the
  heuristic's actions that keep the plain lowering's operation order (opt.EXACT) with its ordered reduces in `lanes`
  (rangeify's Ctx.ordered), no records, no search; symbolic: the heuristic's actions for a kernel lowered with
  symbolic sizes (chosen at body's sizes, applied with tails where a factor does not divide), no records, no search."""
  info = KernelInfo.of(body, symbolic)
  if exact or symbolic:
    return build([a for a in heuristic(body, info, exact, lanes) if a.op in EXACT or not exact], info)
  key = plans.tune_key(kernel_key(body))
  if (rec := _record(key, info)) is not None:
    acts, before, after = rec
    tuned.append(Tuned(describe(body, info), before, after, acts, False))
    return build(list(acts), info)
  heur = heuristic(body, info)
  width = plans.search_width()
  if not width or os.environ.get("MINITENSOR_CHECK") == "1": return build(heur, info)
  found = beam_search(body, info, heur, width, budget())
  if found is None: return build(heur, info)
  acts, before, after = found
  tuned.append(Tuned(describe(body, info), before, after, acts, True))
  plans.store(key, {"format": plans.TUNE_FORMAT, "what": describe(body, info), "before": before, "after": after,
                    "actions": [[a.op.name, a.axis, a.arg] for a in acts]}, ".tune")
  return build(list(acts), info)


def _record(key: str, info: KernelInfo) -> tuple[tuple[Opt, ...], float, float] | None:
  """The actions and times of the tuning record under key, or None when there is none or it is damaged, of
  another format, or its actions do not apply to this kernel."""
  d = plans.load(key, ".tune")
  try:
    if d is None or d.get("format") != plans.TUNE_FORMAT: return None
    acts = tuple(Opt(OptOps[a[0]], a[1], a[2]) for a in d["actions"]
                 if len(a) == 3 and type(a[1]) is int and type(a[2]) is int)
    if len(acts) != len(d["actions"]): return None
    before, after = float(d["before"]), float(d["after"])
    build(list(acts), info)
  except (KeyError, TypeError, ValueError, IndexError): return None     # (OptRefused is a ValueError)
  return acts, before, after


def actions(info: KernelInfo) -> list[Opt]:
  """The actions a search tries on each list (apply_opt refuses those that do not fit)."""
  lanes = machine().lanes(info.itemsize)
  out = [Opt(OptOps.UNROLL, 0, f) for f in (lanes // 2, lanes, 2 * lanes) if f > 1]
  out += [Opt(OptOps.LOCAL, 0, b) for b in (4, 16, 64)]
  out += [Opt(OptOps.JAM, 0, j) for j in (2, 4, 8)]
  for ax, n in enumerate(info.shape):
    if n < 2: continue
    out += [Opt(OptOps.UPCAST, ax, f) for f in (2, 4, 8)]
    out += [Opt(OptOps.VECTOR, ax, f) for f in (lanes, 2 * lanes, 4 * lanes, 8 * lanes)]
    out += [Opt(OptOps.TILE, ax, f) for f in (16, 32, 64)]
    out += [Opt(OptOps.BLOCK, ax, f) for f in (64, 128, 256)]
    out.append(Opt(OptOps.THREAD, ax, 0))
  return out


def _okey(o: Opts) -> tuple:
  return (tuple(sorted(o.upcast.items())), o.thread, o.unroll, tuple(sorted(o.tile.items())),
          tuple(sorted(o.vector.items())), o.local, tuple(sorted(o.block.items())), o.jam)


def _random(b: UOp, rng: np.random.Generator) -> np.ndarray:
  """Random contents for a BUFFER: normal floats, small integers, booleans."""
  d, n = b.dtype, b.arg.shape[0]
  if d.is_bool: return rng.random(n) < 0.5
  if d.is_complex: return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(d.np)
  if d.is_float: return rng.standard_normal(n).astype(d.np)
  return rng.integers(0 if d.is_unsigned else -8, 9, n).astype(d.np)


def same(got: np.ndarray, want: np.ndarray) -> bool:
  """got equals the default lowering's want: exactly for integers and bools, else allclose at the dtype's
  tolerance, relative to want's largest finite magnitude (reductions in another order round differently)."""
  if want.dtype.kind not in "fc": return np.array_equal(got, want)
  rtol = _TOL[want.dtype.itemsize // (2 if want.dtype.kind == "c" else 1)]
  fin = np.abs(want[np.isfinite(want)])
  scale = max(1.0, float(fin.max())) if fin.size else 1.0
  return bool(np.allclose(got, want, rtol=rtol, atol=rtol * scale, equal_nan=True))


class Bench:
  """A kernel's body lowered with given Opts, compiled at tier 1 and run on fixed random inputs."""

  def __init__(self, body: UOp, seed: int = 0):
    self.body = body.localize()[0]
    ins = sorted({u for u in self.body.toposort() if u.op is Ops.BUFFER}, key=lambda b: b.arg.slot)
    rng = np.random.default_rng(seed)
    n = max(prod(body.shape), 1)
    self.bufs = [_random(b, rng) for b in ins] + [np.zeros(n, body.dtype.np)]
    self.out = buf(len(ins), n, body.dtype)

  def source(self, opts: Opts) -> tuple[str, list[int]]:
    """The C function `tune` of the body lowered with opts, and the slots of its parameters."""
    sink = lower(self.body, self.out, Ctx(opts=opts))
    return render_function(sink, "tune"), sorted({u.arg.slot for u in sink.toposort() if u.op is Ops.BUFFER})

  @staticmethod
  def compile(src: str, slots: list[int]):
    """The compiled kernel of a source (at tier 1) with the slots of its parameters."""
    return compile_c(PRELUDE + src, FLAGS, compiler(), {"tune": ("void*",) * len(slots)})["tune"], slots

  def run(self, kernel, runs: int = RUNS, limit: float = 1.0) -> tuple[np.ndarray, float]:
    """The output of a compiled kernel and the median of up to `runs` timed runs (fewer past `limit` seconds)."""
    k, slots = kernel
    n = native()
    self.bufs[-1][:] = 0
    args = [n.from_buffer(self.bufs[s]) for s in slots]
    k.fn(*args)
    out = self.bufs[-1].copy()
    if not runs: return out, 0.0
    ts: list[float] = []
    end = time.perf_counter() + limit
    while len(ts) < runs and (not ts or time.perf_counter() < end):
      t = time.perf_counter()
      k.fn(*args)
      ts.append(time.perf_counter() - t)
    return out, float(np.median(ts))


def _minimal_work(body: UOp) -> int:
  """Loop iterations of the kernel computed once: its outputs plus, per reduce, its elements times its loop."""
  red = [u for u in body.toposort() if u.op is Ops.REDUCE and u.arg[1] > 0]
  return prod(body.shape) + sum(prod(u.shape) * prod(u.src[0].shape[len(u.shape):]) for u in red)


def beam_search(body: UOp, info: KernelInfo, heur: list[Opt], width: int, seconds: float
                ) -> tuple[tuple[Opt, ...], float, float] | None:
  """The best actions found for the kernel (see the module docstring), the heuristic's time and theirs; None when
  the kernel is not searched or the heuristic's candidate cannot be timed."""
  deadline = time.perf_counter() + seconds
  if iterations(lower(body, buf(1 << 30, max(prod(body.shape), 1), body.dtype), Ctx(opts=build(heur, info)))) \
      > 2 * _minimal_work(body): return None
  bench = Bench(body)
  try: want = bench.run(bench.compile(*bench.source(Opts())), runs=0)[0]
  except CompileError: return None
  timed: dict[tuple, tuple[float, tuple[Opt, ...]]] = {}
  kernels: dict[tuple, object] = {}            # the compiled candidates, for the final comparison
  seen: set = set()              # the Opts and the sources lowered so far (equal sources are timed once)
  from concurrent.futures import ThreadPoolExecutor  # (imported by a search only)
  pool = ThreadPoolExecutor(max(machine().cores, 1), thread_name_prefix="minitensor-search")

  def evaluate(cands: list[tuple[tuple[Opt, ...], Opts]]) -> None:
    """Compile the candidates' new sources in parallel; once all are built, time them one at a time (a compiler
    running beside a timed kernel would slow it). A time of inf: the candidate was dropped."""
    jobs = []
    for acts, o in cands:
      if jobs and time.perf_counter() > deadline: break       # (lowering a candidate takes time too)
      seen.add(_okey(o))
      src, slots = bench.source(o)
      if src in seen: continue
      seen.add(src)
      jobs.append((acts, o, pool.submit(bench.compile, src, slots)))
    built = []
    for acts, o, f in jobs:
      if time.perf_counter() > deadline and f.cancel(): continue
      try: built.append((acts, o, f.result()))
      except CompileError: timed[_okey(o)] = (float("inf"), acts)
    for acts, o, kernel in built:
      if time.perf_counter() > deadline and timed: break
      got, t = bench.run(kernel)
      timed[_okey(o)] = (t if same(got, want) else float("inf"), acts)
      kernels[_okey(o)] = kernel
      log().debug(f"search {describe(body, info)}: {t * 1e6:10.1f} us {list(acts)}")

  try:
    heur_opts = build(heur, info)
    evaluate([(tuple(heur), heur_opts), ((), Opts())])
    if timed.get(_okey(heur_opts), (float("inf"),))[0] == float("inf"): return None
    best = min(t for t, _ in timed.values())
    while time.perf_counter() < deadline:
      beam = sorted((v for v in timed.values() if v[0] < float("inf")), key=lambda v: v[0])[:width]
      cands: dict[tuple, tuple[tuple[Opt, ...], Opts]] = {}
      for _, acts in beam:
        o = build(list(acts), info)
        for a in actions(info):
          try: new = apply_opt(o, a, info)
          except OptRefused: continue
          if (k := _okey(new)) not in seen and k not in cands: cands[k] = (acts + (a,), new)
      if not cands: break
      evaluate(list(cands.values()))
      now = min(t for t, _ in timed.values())
      if now > best * (1 - MIN_GAIN): break
      best = now
  finally: pool.shutdown(wait=True, cancel_futures=True)
  # the best few and the heuristic timed again, taking turns (a busy moment must not crown a candidate); the
  # winner has to beat the heuristic by MIN_GAIN there too
  final = [k for k, v in sorted(timed.items(), key=lambda kv: kv[1][0]) if v[0] < float("inf")][:width]
  final = list(dict.fromkeys([_okey(heur_opts)] + final))
  again: dict[tuple, list[float]] = {k: [] for k in final}
  for _ in range(CONFIRM):
    for k in final: again[k].append(bench.run(kernels[k])[1])
  med = {k: float(np.median(ts)) for k, ts in again.items()}
  best_key = min(final, key=lambda k: med[k])
  if med[best_key] > med[final[0]] * (1 - MIN_GAIN): best_key = final[0]
  log().debug(f"search {describe(body, info)}: confirmed {med[final[0]] * 1e6:.1f} us -> {med[best_key] * 1e6:.1f} us "
            f"{list(timed[best_key][1])}")
  return timed[best_key][1], med[final[0]], med[best_key]
