"""lowerings: the one registry of kernel lowerings, and the Program each of them returns.

kernelize cuts the graph into kernels; each kernel's body (other kernels' outputs read from their buffers) is
lowered by the first entry of LOWERINGS that takes it. The entries, in order:

    entry       takes                                                lowers to
    attention   softmax(Q K^T) V over buffers (attention.fused)      one kernel, an online softmax over key blocks
    flat        elementwise over whole operands                      one loop over n = prod(shape), n an argument
    scan        SCAN                                                 scan.lower_scan: NumPy's sequential order
    gemm        a contraction worth blocking (gemm.plan), after the  a cache-blocked, packed, register-tiled GEMM
                loop nest it replaces asks for no cut
    loops       anything                                             rangeify.lower with opt.py's Opts (search.py)

A Program is all that realize, explain, tiers and plans read of a kernel: which entry made it, its lowered loop
program over local slots (what the cost model, `iterations` and equal-kernel sharing read), its size arguments,
the statements it executes, what the C compiler must support, the Opts actions applied, and its C, rendered by
its entry under the name the schedule gives it (`Program.render`). Nothing downstream looks inside an entry's own
plan (a Gemm, an Attention) or the C it produced.

What stays hand-written: the GEMM's micro-kernel and packing driver (gemm.py) and attention's blocked online softmax
(attention.py) are C templates, not loop programs: rangeify's accumulators cannot outlive the output loops (a GEMM
keeps a block of partial sums across K blocks; attention rescales its accumulators per key block), and both need
GCC vector types the loop renderer does not emit. Their operands are still read through rangeify's index maps, so
views, padding and gathers work unchanged.
"""
from __future__ import annotations
from typing import Callable, NamedTuple
from minitensor.backend.cost import Lowering, summarize
from minitensor.backend.dtype import dtypes
from minitensor.backend.linearize import iterations, operations, variables
from minitensor.backend.ops import TRANSCENDENTAL
from minitensor.backend.rangeify import lower
from minitensor.backend.ranges import Ctx, Opts
from minitensor.backend.render_c import render_function
from minitensor.backend.sizes import Sizes
from minitensor.backend.uop import ALU, Ops, UOp, prod, rewrite

# attention, gemm, search (with opt), scan and split are imported by the entries that use them: a small graph's
# symbolic kernels (a script's first realize) need none of them, and they took about 3 ms to import

__all__ = ["HAND_WRITTEN", "KernelBody", "LOWERINGS", "Lowered", "Program", "flat_elementwise", "lower_kernel"]


class Program(NamedTuple):
  """One kernel as the rest of the pipeline reads it (see the module docstring). sizes: a flat kernel's loop size,
  an argument after the buffers; vars: the graph sizes a symbolic kernel takes last; work: statements executed;
  needs: what the C compiler must support ("vector" types, "complex", "float16"); opts: the actions applied; plan:
  the entry's own plan, read by its renderer only."""
  kind: str
  sink: UOp
  sizes: tuple[int, ...] = ()
  vars: tuple[int, ...] = ()
  work: int = 0
  iterations: int = 0
  needs: frozenset[str] = frozenset()
  opts: tuple = ()
  plan: object = None

  def render(self, name: str, checked: bool = False) -> str:
    """The C function `name` of this kernel (checked: with checked mode's bounds tests), by its entry's renderer."""
    return _RENDER[self.kind](self, name, checked)


class KernelBody(NamedTuple):
  """What an entry lowers: the kernel's shaped body, its output BUFFER, whether to optimize (no in checked search
  and tests of plain lowerings), the symbolic sizes (each size of the graph >= 2 -> its VAR) or None, and whether
  the schedule is a flat one (every kernel one loop over its elements), whether to keep the symbolic lowering's
  operation order (kernelize.schedule's `exact`: no attention or GEMM kernel, opt.EXACT actions only), and the
  lanes of the ordered reduces of a small graph's symbolic program and of its specializations (rangeify's
  Ctx.ordered; 0: none)."""
  body: UOp
  out: UOp
  optimize: bool = True
  sizes: Sizes | None = None
  flat: bool = False
  exact: bool = False
  lanes: int = 0


class Lowered(NamedTuple):
  """An entry's result: the Program (its sink over local slots), the schedule slot of each local slot, the cost
  summary of a loop lowering (cost.summarize; None for a kernel with a schedule of its own), and the node of the
  body to materialize first because lowering it inline repeats work (kernelize cuts it and lowers again), or None."""
  program: Program
  slots: tuple[int, ...]
  summary: Lowering | None = None
  cut: UOp | None = None


class Entry(NamedTuple):
  name: str
  lower: Callable[[KernelBody], Lowered | None]


def lower_kernel(k: KernelBody) -> Lowered:
  """k lowered by the first entry of LOWERINGS that takes it (the last, loops, takes every kernel)."""
  for e in LOWERINGS:
    if (low := e.lower(k)) is not None: return low
  raise AssertionError("lowerings: the loops entry takes every kernel")


def _needs(sink: UOp, vector: bool = False) -> frozenset[str]:
  ds = {u.dtype for u in sink.toposort()}
  return frozenset((("vector",) if vector else ()) + (("complex",) if any(d.is_complex for d in ds) else ()) +
                   (("float16",) if dtypes.float16 in ds else ()))


def _program(kind: str, sink: UOp, **kw) -> tuple[Program, tuple[int, ...]]:
  """A Program of a loop program over schedule slots, renumbered to local slots (equal kernels share code)."""
  local, slots = sink.localize()
  return Program(kind, local, vars=variables(local), work=operations(local), iterations=iterations(local),
                 needs=_needs(local, kind == "gemm"), **kw), slots


# ---------------------------------------------------------------- the entries
def _attention(k: KernelBody) -> Lowered | None:
  if not k.optimize or k.exact or k.sizes is not None: return None
  from minitensor.backend import attention
  if (f := attention.fused(k.body, k.out)) is None: return None
  local, slots = f.localize()
  a = f.arg
  return Lowered(Program("attention", local, work=a.work, iterations=a.work, needs=_needs(local, True), plan=a), slots)


def _flat(k: KernelBody) -> Lowered | None:
  """Elementwise over whole operands: one loop over n; in a flat schedule every kernel (n its argument), else a
  large one (one compile for every shape with n elements), threaded."""
  if k.body.op is Ops.SCAN or not (k.flat or (k.optimize and k.sizes is None)) or \
      (f := flat_elementwise(k.body)) is None: return None
  if k.flat:
    ctx = Ctx(sizes=k.sizes)
    return _looped("flat", k, ctx, lower(f, k.out, ctx))
  p, slots = _program("flat", lower(f, k.out, Ctx(opts=Opts(thread=0))), sizes=(f.shape[0],))
  return Lowered(p, slots)


def _scan(k: KernelBody) -> Lowered | None:
  if k.body.op is not Ops.SCAN: return None
  from minitensor.backend.scan import lower_scan
  ctx = Ctx(sizes=k.sizes)
  return _looped("scan", k, ctx, lower_scan(k.body, k.out, ctx))


def _loops(k: KernelBody) -> Lowered:
  def make(share: bool) -> Ctx:
    if not k.optimize: opts = Opts()
    else:
      from minitensor.backend.search import opts_for
      opts = opts_for(k.body, k.exact, k.sizes is not None, k.lanes)
    return Ctx(sizes=k.sizes, share=share, ordered=k.lanes, f32_blocks=k.optimize and not k.exact, opts=opts)
  ctx = make(True)
  sink = lower(k.body, k.out, ctx)
  # what to materialize is decided on the lowering without shared reduce loops (Ctx.share): a value that three
  # reductions read is staged as before, and its evaluation leaves the reduction loop (`r ** -1.5` over contiguous
  # rows runs in lanes; inside a chain of FMAs it cannot: 35 us of pow against 155 for the kernel, N-body forces)
  seed = (c := make(False), lower(k.body, k.out, c)) if ctx.shares() else None
  return _looped("loops", k, ctx, sink, seed)


def _looped(kind: str, k: KernelBody, ctx: Ctx, sink: UOp, seed: tuple[Ctx, UOp] | None = None, **kw) -> Lowered:
  """A kernel lowered by loops: its cost summary (counted as lowered, before any index split, and without shared
  reduce loops: `seed`, the lowering that counts when ctx's shares loops) and the cut it asks for: a value its loops
  would compute more than once (_recomputed), else a contraction worth blocking that it reads through an epilogue
  (gemm.inner), materialized so that it becomes a GEMM kernel."""
  summary = summarize(*(seed or (ctx, sink)))
  cut = _recomputed(k.body, summary)
  if k.optimize:
    from minitensor.backend import gemm
    from minitensor.backend.split import split_loops
    if cut is None: cut = gemm.inner(k.body)
    sink = split_loops(sink)
  p, slots = _program(kind, sink, opts=ctx.opts.actions, **kw)
  return Lowered(p, slots, summary, cut)


def _gemm(k: KernelBody) -> Lowered | None:
  """A contraction worth blocking: the loop nest it replaces is lowered first (its cost summary and cuts are what the
  scheduler reads), and the GEMM replaces it when that nest asks for no cut."""
  if not k.optimize or k.exact or k.sizes is not None: return None
  from minitensor.backend import gemm
  if gemm.contraction(k.body) is None: return None
  low = _loops(k)
  if low.cut is not None or (g := gemm.plan(k.body, k.out, low.slots)) is None: return low
  return Lowered(Program("gemm", low.program.sink, work=low.program.work, iterations=low.program.iterations,
                         needs=_needs(low.program.sink, True), plan=g), low.slots, low.summary)


LOWERINGS: tuple[Entry, ...] = (Entry("attention", _attention), Entry("flat", _flat), Entry("scan", _scan),
                                Entry("gemm", _gemm), Entry("loops", _loops))

# the entries whose C is written in vector types by hand: no loop of theirs is left for -O3's vectorizer to improve
# (tiers.HAND_FLAGS)
HAND_WRITTEN = frozenset({"attention", "gemm"})

def _render_attention(p: Program, name: str, checked: bool) -> str:
  from minitensor.backend import attention
  return attention.render(p.plan, p.sink, name, checked)


def _render_gemm(p: Program, name: str, checked: bool) -> str:
  from minitensor.backend import gemm
  return gemm.render(p.plan, name, checked)


_RENDER: dict[str, Callable[[Program, str, bool], str]] = {
  "attention": _render_attention,
  "gemm": _render_gemm,
  **{kind: lambda p, name, checked: render_function(p.sink, name, checked, sized=bool(p.sizes))
     for kind in ("flat", "scan", "loops")},
}


# ---------------------------------------------------------------- what the entries decide by
RECOMPUTE_LIMIT = 4      # a value may be read at this many index maps before it is materialized (kernelize)
# an elementwise value with transcendentals may be computed this many times per element: 2 (was 4) materializes the
# pairwise forces' r ** -1.5, which three sibling reductions read (issue 30's N-body step: 330 -> 63 us, AMD EPYC Zen 5)
HEAVY_LIMIT = 2


def _recomputed(root: UOp, low: Lowering) -> UOp | None:
  """The node to materialize next in this kernel, or None: a REDUCE whose inline accumulators cost more than
  computing it once, else the outermost elementwise value with transcendentals that is computed more than
  HEAVY_LIMIT times per element."""
  for r, c in low.reduce_work.items():
    if c > prod(r.shape) * prod(r.src[0].shape[len(r.shape):]): return r
  heavy: set[UOp] = set()
  best = None
  for u in root.toposort():
    if u.op is Ops.REDUCE: continue
    if u.op in TRANSCENDENTAL or (u.op in ALU and any(s in heavy for s in u.src)): heavy.add(u)
    if u in heavy and u is not root and low.evaluations.get(u, 0) > HEAVY_LIMIT * prod(u.shape): best = u
  return best


def _scalar(u: UOp) -> bool:
  """A constant, or a one-element buffer (a constant passed as a kernel argument): broadcast, not walked."""
  return u.op is Ops.CONST or (u.op is Ops.BUFFER and u.shape == (1,))


def flat_elementwise(body: UOp) -> UOp | None:
  """body computed on its buffers read as (n,) arrays, when it is elementwise over operands read whole in their
  own order (every RESHAPE keeps that order; EXPAND only broadcasts a constant); else None. A body that is
  itself a broadcast constant (zeros, broadcast_to of one element) is that constant broadcast to (n,)."""
  n = prod(body.shape)
  if n < 2: return None
  try: flat = rewrite(body, _flat_node)
  except _NotFlat: return None
  if _scalar(flat): return flat.reshape((1,)).expand((n,))
  return flat if flat.shape == (n,) else None


class _NotFlat(Exception): pass


def _flat_node(u: UOp, src: tuple[UOp, ...]) -> UOp:
  if u.op in (Ops.CONST, Ops.BUFFER): return u
  if u.op is Ops.RESHAPE or (u.op is Ops.EXPAND and _scalar(src[0])): return src[0]
  if u.op not in ALU: raise _NotFlat
  m = prod(u.shape)
  return u.replace(src=tuple(x.reshape((1,)).expand((m,)) if _scalar(x) else x for x in src))
