"""kernelize: cut a shaped graph into kernels, so no work is repeated and everything else is fused.

Lowering a whole graph as one loop nest is always correct, but rangeify evaluates a node once per index it
is asked for. A REDUCE's accumulator lives in every loop its index mentions (and the loops around those),
so a reduce read at indices that vary over another loop is recomputed in every iteration of that loop:
(A @ B) @ C lowered inline costs N^4 multiply-adds instead of 2 N^3.

The cost model is the loop-iteration count. For a REDUCE u lowered inline,

    inline(u)   = sum over its accumulators of  prod(sizes of the loops around the accumulator) * prod(reduce axes)
    staged(u)   = prod(u.shape) * prod(reduce axes)          (computed once into a buffer, then loaded)

and u is materialized (cut into a kernel of its own) when inline(u) > staged(u): some element is computed
more than once. The same count, for an elementwise value containing transcendental functions, is the number
of times it is evaluated (the loops around each place rangeify put it); above HEAVY_LIMIT times its
element count it is materialized too (softmax(Q K^T) @ V: the exponentials would be recomputed per column
of V); so is such a value that two kernels would each compute (the force components of an N-body step, each
its own kernel, all reading r ** -1.5). A REDUCE reached from two outputs of one realize is materialized too (shared
work is done once), an output used by another output is loaded from its buffer, STAGE marks a cut explicitly, and a SCAN
is always a kernel of its own (scan.py). A value read at more than RECOMPUTE_LIMIT index maps is materialized
before lowering (fanout_cuts: stencils of stencils), and an expression deeper than MAX_DEPTH operations is cut
every MAX_DEPTH levels (no C compiler sees a chain of 100,000 operations as one expression; equal pieces share
one compiled function). Everything else fuses: elementwise chains, a reduce with its producers and consumers,
softmax and layernorm
along the last axis (their reductions become sibling loops inside the row loop, where each runs once per row).

Both counts come from the lowering's public summary (cost.summarize: a Lowering, per REDUCE the iterations of its
accumulators, per ALU node its evaluations); the kernel's lowering entry (lowerings.py, the registry every kernel is
lowered by: attention, flat, scan, gemm, loops) reads it and names the node to cut. Each kernel is lowered once per
body: after a cut, only the kernels containing the cut node are lowered again.

schedule(outputs) returns the kernels in dependency order, each a Program over kernel-local buffer slots (with the
Opts opt.py chooses), plus the intermediate buffers to allocate.

Sizes: a graph of small values is lowered with symbolic sizes (schedule's `sizes`: VARs, arguments of the C
functions), so one compile serves every graph of its structure (realize.structure). A larger graph is lowered
for its shapes, tuned by opt.py; an elementwise kernel over whole operands (lowerings.flat_elementwise) is still lowered
as one loop over n = prod(shape) with n an argument, so large elementwise kernels compile once for every shape and rank.
"""
from __future__ import annotations
import time
from typing import NamedTuple
from minitensor.backend import plans
from minitensor.backend.lowerings import RECOMPUTE_LIMIT, KernelBody, Program, lower_kernel
from minitensor.backend.ops import TRANSCENDENTAL
from minitensor.backend.reduce_rule import across_rows
from minitensor.backend.sizes import Sizes, order_lanes
from minitensor.backend.uop import ALU, Ops, UOp, buf, prod, rewrite


# (gemm, attention and opt are imported where a concrete graph is optimized: a small graph's symbolic schedule needs
# none of them, lowerings.py)
def _gemm():
  from minitensor.backend import gemm
  return gemm


def stage_operands(outputs: list[UOp]) -> list[UOp]:
  """attention.stage_operands."""
  from minitensor.backend.attention import stage_operands as stage
  return stage(outputs)


class KernelSpec(NamedTuple):
  """One kernel: its Program (lowerings.py: the lowered program over local slots 0..n-1, its size arguments, how it
  renders), the shaped root it computes (for inspection), and the schedule buffer of each local slot."""
  name: str
  ast: UOp
  program: Program
  slots: tuple[int, ...]      # local slot k reads/writes schedule buffer slots[k]
  out: int                    # the schedule buffer it writes

  @property
  def sink(self) -> UOp: return self.program.sink


class Schedule(NamedTuple):
  """Kernels in run order over schedule buffers: inputs 0..n_inputs-1, then one buffer per staged node."""
  kernels: tuple[KernelSpec, ...]
  n_inputs: int
  buffers: tuple[tuple[int, object], ...]     # (size, DType) of every schedule buffer after the inputs
  outputs: tuple[int, ...]                    # the schedule buffer of each output
  shapes: tuple[tuple[int, ...], ...] = ()    # the shape of every schedule buffer after the inputs
  derived: tuple[tuple[int, int, int], ...] = ()   # the sizes its kernels take derived from the graph's (sizes.py)
  lanes: int = 0                              # the lanes of its ordered reduces (sizes.order_lanes; 0: none)
  lower_seconds: float = 0.0                  # of the seconds `schedule` took, those spent lowering its kernels


def fanout_cuts(outputs: list[UOp]) -> list[UOp]:
  """The computed nodes read at more than RECOMPUTE_LIMIT index maps, to be materialized before any lowering.

  rangeify evaluates a node once per distinct index it is read at. An elementwise parent reads its sources at its
  own index; a movement, a reduce or a gather reads them at a new one. In a stencil of a stencil (an in-place
  update loop: u[1:-1] = u[2:] + u[:-2] + ...) every level multiplies the maps, so fused inline the work grows
  exponentially with the depth; lowering would show it only after doing it. Maps are counted here on the shaped
  graph, consumers first; a node over the limit is cut, and its sources count from one map again."""
  order = UOp(Ops.SINK, tuple(outputs)).toposort()
  maps: dict[UOp, set] = {o: {0} for o in outputs}
  fresh = iter(range(1, 1 << 62))
  cuts: list[UOp] = []
  for u in reversed(order):
    m = maps.get(u)
    if m is None: continue
    if len(m) > RECOMPUTE_LIMIT and (u.op in ALU or u.op is Ops.REDUCE):
      cuts.append(u)
      m = {next(fresh)}
    same = u.op in ALU or u.op is Ops.STAGE
    for x in u.src:
      maps.setdefault(x, set()).update(m if same else {next(fresh) for _ in m})
  return cuts


# Measured (AMD EPYC Zen 3, 2 cores, gcc -O3, one kernel computing an alternating float32 add/multiply chain):
# the first realize costs 1.0 ms per operation at depth 256, 0.9 at 512, 1.2 at 1,024 and 1.5 at 4,096 (gcc is
# superlinear in the depth of one expression), with a fixed ~150 ms per compile below that; the run time of a
# 2,048-op chain over 2^18 elements did not change measurably whether cut every 32 operations or not at all
# (60-73 ms, within the noise: one more pass over the data per cut is cheap next to the arithmetic).
MAX_DEPTH = 256


def _deep_cuts(nodes: list[UOp], staged: set[UOp]) -> list[UOp]:
  """Nodes to materialize so that no kernel computes an expression deeper than MAX_DEPTH operations (a
  chain of 100,000 additions becomes ~400 kernels, not one C expression 100,000 deep). Depth counts the
  operations that become C code: ALU nodes, reduces and pads, a STACK as its tree of selects."""
  depth: dict[UOp, int] = {}
  cuts: list[UOp] = []
  for u in nodes:
    w = 1 if u.op in ALU or u.op in (Ops.REDUCE, Ops.PAD) else len(u.src).bit_length() if u.op is Ops.STACK else 0
    d = w + max((depth[s] for s in u.src), default=0)
    if d >= MAX_DEPTH and w and u not in staged: cuts.append(u); d = 0
    depth[u] = 0 if u in staged else d
  return cuts


SPLIT_MIN = 1 << 16     # a reduction to one value over this many elements runs in two stages
SPLIT_PARTS = 64
PART_LANES = 16           # a partial's length is a multiple of this where it can be (_parts)
# a reduction across the rows of at least this many elements (a column sum) runs in two stages, COLUMN_PARTS blocks
# of rows and then the partials: each thread streams whole rows of its blocks instead of a column strip of every
# row. (4096, 1024) float32 column sums (AMD EPYC Zen 3, 2 threads, best of 30, C harness): 0.39-0.41 ms in two row
# blocks against 0.49-0.59 ms in two column blocks
COLUMN_MIN = 1 << 20
COLUMN_PARTS = 16


def unmerged(outputs: list[UOp]) -> list[UOp]:
  """The graphs with every elementwise op over values reshaped from one shape of more axes computed in that shape
  and reshaped after it, and every chain of reshapes as one: the same values, but a loop over a merged shape reads
  each of those sources at an unravelled index (a division and a remainder per element at a symbolic size, no
  lanes), where in their own shape it reads them in order. A boolean mask that holds everywhere reads `r[m]` as
  r flattened, so `r[m] = r[m] ** -1.5` computed its powers over a flat loop dividing its index by r's row length
  (an N-body step's staged powers at (100, 100): 41 -> 35 us). Broadcast scalars (a lifted constant) and flat
  buffers (an input, read at the index of the wider shape) go along."""
  return list(rewrite(UOp(Ops.SINK, tuple(outputs)), _unmerge).src)


def _unmerge(u: UOp, src: tuple[UOp, ...]) -> UOp | None:
  if u.op is Ops.RESHAPE and src[0].op is Ops.RESHAPE: return src[0].src[0].reshape(u.shape)
  if u.op not in ALU: return None
  shape = None
  for s in src:
    if s.op is Ops.RESHAPE:
      if shape is None: shape = s.src[0].shape
      elif s.src[0].shape != shape: return None
    elif s.op is not Ops.BUFFER and (s.op is not Ops.EXPAND or prod(s.src[0].shape) != 1): return None
  if shape is None or len(shape) <= len(u.shape): return None
  ones = (1,) * len(shape)
  return u.replace(src=tuple([s.src[0] if s.op is Ops.RESHAPE else s.reshape(shape) if s.op is Ops.BUFFER else
                              s.src[0].reshape(ones).expand(shape) for s in src])).reshape(u.shape)


def split_reduces(outputs: list[UOp]) -> list[UOp]:
  """Every REDUCE to a single value over R >= SPLIT_MIN elements as two: C partial reductions of R/C
  consecutive elements (staged: a kernel whose C outputs the threads share, each reduced in vector lanes),
  then one over the C partials. A REDUCE over one axis that runs across the rows of its source (a column sum
  of at least COLUMN_MIN elements) likewise, unless it is a contraction worth a GEMM (x.T @ g): COLUMN_PARTS
  partial reductions over blocks of consecutive rows, staged with the blocks outermost, then one over the partials.
  The terms still combine in an order fixed by the graph (the same bits on any number of threads), in two levels
  (a smaller rounding error for sums)."""
  return list(rewrite(UOp(Ops.SINK, tuple(outputs)), _split).src)


def _split(u: UOp, src: tuple[UOp, ...]) -> UOp | None:
  if u.op is not Ops.REDUCE: return None
  v, r = u.replace(src=src), prod(u.src[0].shape[len(u.shape):])
  if prod(u.shape) == 1: c = _parts(r) if r >= SPLIT_MIN else 1
  elif u.arg[1] == 1 and prod(u.src[0].shape) >= COLUMN_MIN and across_rows(u.src[0]) and \
      not _gemm().worth(v, graph=True):
    from minitensor.backend.opt import divisor
    c = divisor(r, COLUMN_PARTS)
  else: c = 1
  if c == 1: return v
  # c partials of r / c consecutive elements, the partials' axis outermost (a block of rows per partial)
  k = len(v.shape)
  parts = v.src[0].reshape(v.shape + (c, r // c)).permute((k, *range(k), k + 1)).reduce(v.arg[0], 1).stage()
  return parts.permute((*range(1, k + 1), 0)).reduce(v.arg[0], 1)


def _parts(r: int) -> int:
  """How many partials a reduction of r elements to one value takes: the most, up to SPLIT_PARTS, that divide r
  into lengths PART_LANES divides, so each partial reduces in vector lanes (10^6 in 64 partials of 15,625 ran 8
  scalar chains each, strided: a float64 max 213 us, NumPy's 95; in 50 of 20,000, 100 us); else the largest power
  of two up to SPLIT_PARTS that divides r. (Many partials keep each lane's chain of adds short: its rounding.)"""
  from minitensor.backend.opt import divisor
  return next((c for c in range(SPLIT_PARTS, 1, -1) if r % c == 0 and (r // c) % PART_LANES == 0),
              divisor(r, SPLIT_PARTS))


def schedule(outputs: list[UOp], n_inputs: int, optimize: bool = True, sizes: Sizes | None = None,
             flat: bool = False, exact: bool = False, lanes: int | None = None) -> Schedule:
  """Kernels for `outputs`, whose BUFFER leaves are schedule slots 0..n_inputs-1. sizes (sizes.Sizes: each size
  of the graph >= 2 -> its VAR) lowers every kernel with symbolic sizes, for every graph of the same structure: no
  split reductions, GEMM or attention kernels (their choices depend on the sizes); when optimized, opt.py's actions
  are chosen at the graph's sizes and applied with tails (rangeify). flat: the graph is elementwise over whole
  operands of sizes' one size; every kernel is lowered as one loop over it (lowerings.flat_elementwise), whatever
  the rank.
  exact: optimized for the concrete sizes, but every value computed in the operation order of the symbolic
  lowering (no split reductions, no GEMM or attention kernels, no actions that reorder a reduction: opt.EXACT), so
  its results are bit-identical to the symbolic program's (a specialization of it: realize.specialize).
  lanes: the lanes of the ordered reduces of an exact schedule (its symbolic program's, Schedule.lanes); a small
  graph's symbolic schedule (not optimized) chooses them by its reductions' size (sizes.order_lanes)."""
  outputs = unmerged(outputs)
  if optimize and not exact and sizes is None: outputs = stage_operands(split_reduces(outputs))
  nodes = UOp(Ops.SINK, tuple(outputs)).toposort()
  if not exact:
    lanes = order_lanes(sum(prod(u.src[0].shape) for u in nodes if u.op is Ops.REDUCE)) \
      if sizes is not None and not optimize else 0
  reach: dict[UOp, set[int]] = {}
  for k, o in enumerate(outputs):
    for u in o.toposort(): reach.setdefault(u, set()).add(k)
  staged: list[UOp] = [u for u in nodes if u.op in (Ops.STAGE, Ops.SCAN)] + fanout_cuts(outputs)
  staged += [u for u in nodes if u.op is Ops.REDUCE and len(reach.get(u, ())) > 1]
  for o in outputs:
    if o not in staged and o.op is not Ops.BUFFER: staged.append(o)
  staged += _deep_cuts(nodes, set(staged))
  # slots are given in staging order, so staging one more node renumbers nothing: a kernel lowered before it
  # stays valid unless that node lies inside it (a deep graph that needs many cuts is not re-lowered each time)
  slot: dict[UOp, int] = {}
  bufs: dict[UOp, UOp] = {}
  def stage(u: UOp) -> None:
    slot[u] = n_inputs + len(slot)
    # a value with no elements is never read: it stands as a broadcast constant, not as a buffer
    bufs[u] = buf(slot[u], prod(u.shape), u.dtype).reshape(u.shape) if prod(u.shape) else u.const_like(0)
  for u in staged:
    if u not in slot: stage(u)
  lowered: dict[UOp, tuple] = {}     # staged node -> (KernelSpec, node to stage next or None, the nodes inside)
  lowering = 0.0
  while True:
    order = [u for u in nodes if u in slot and prod(u.shape)]
    new = None
    for u in order:
      if u not in lowered:
        t = time.perf_counter()
        lowered[u] = _kernel(u, bufs, slot[u], optimize, sizes, flat, exact, lanes)
        lowering += time.perf_counter() - t
      if (new := lowered[u][1]) is not None and new not in slot: break
      new = None
    if new is None and (new := _shared_heavy(nodes, lowered, slot)) is None: break
    stage(new)
    for u in [u for u, k in lowered.items() if new in k[2]]: del lowered[u]
  kernels = tuple(lowered[u][0]._replace(name=f"k{k}") for k, u in enumerate(order))
  outs = tuple(o.arg.slot if o.op is Ops.BUFFER else slot[o] for o in outputs)
  return Schedule(kernels, n_inputs, tuple((prod(u.shape), u.dtype) for u in slot), outs, tuple(u.shape for u in slot),
                  sizes.table() if sizes is not None else (), lanes or 0, lowering)


def sized_choices(outputs: list[UOp], first: bool = False) -> bool:
  """Whether scheduling `outputs` at their sizes makes kernels a symbolic schedule cannot and that are many times
  faster than its loops: attention, or a contraction worth a GEMM (realize.polymorphic then compiles the shape for
  its sizes rather than running a symbolic program). first: the first shape of its structure, which is also
  compiled for its sizes for what is faster by less: a reduction to one value split in stages (on all cores; its
  symbolic loop runs in vector lanes on one thread), a pad or concatenation (split.py's stretches need concrete
  loops), or a search of its kernels' actions (MINITENSOR_SEARCH). (A column reduction's split in blocks of whole
  rows is not one: its symbolic loops take blocks of columns on all cores, W4's (4096, 1024) float32 column sum in
  157 against 151 us.)"""
  nodes = UOp(Ops.SINK, tuple(outputs)).toposort()
  if first and (plans.search_width() or any(u.op is Ops.PAD or (u.op is Ops.REDUCE and prod(u.shape) == 1 and
                                                                 prod(u.src[0].shape) >= SPLIT_MIN) for u in nodes)):
    return True
  if not any(u.op is Ops.REDUCE for u in nodes): return False       # (neither attention nor a contraction)
  if any(a is not b for a, b in zip(outputs, stage_operands(outputs))): return True
  return any(u.op is Ops.REDUCE and _gemm().worth(u, graph=True) for u in nodes)


def _shared_heavy(nodes: list[UOp], lowered: dict[UOp, tuple], slot: dict[UOp, int]) -> UOp | None:
  """The outermost elementwise value with transcendentals that more than one kernel computes (each would evaluate
  it again: the three force components of an N-body step each computed r ** -1.5), or None. Materialized, it is
  computed once, in a loop of its own that vectorizes."""
  count: dict[UOp, int] = {}
  for _, _, inside in lowered.values():
    for x in inside: count[x] = count.get(x, 0) + 1
  if not any(c > 1 for c in count.values()): return None
  heavy: set[UOp] = set()
  best = None
  for u in nodes:
    if u.op in TRANSCENDENTAL or (u.op in ALU and any(s in heavy for s in u.src)): heavy.add(u)
    if u in heavy and count.get(u, 0) > 1 and u not in slot and prod(u.shape) > 1: best = u
  return best


def _kernel(u: UOp, bufs: dict[UOp, UOp], out_slot: int, optimize: bool, symbolic: Sizes | None,
            flat: bool = False, exact: bool = False, lanes: int = 0) -> tuple[KernelSpec, UOp | None, set[UOp]]:
  """The kernel of staged node u (other staged nodes read from `bufs`), the node of the scheduled graph it asks to
  materialize because it would repeat work (or None), and the nodes of the scheduled graph it computes."""
  body = u.src[0] if u.op is Ops.STAGE else u
  # the walk stops at other kernels' outputs: a kernel costs its own nodes, not the whole graph below it
  new: dict[UOp, UOp] = {x: b for x, b in bufs.items() if x is not u}
  body = rewrite(body, memo=new)
  orig = {n: x for x, n in new.items() if x is u or x not in bufs}
  low = lower_kernel(KernelBody(body, buf(out_slot, prod(u.shape), u.dtype), optimize, symbolic, flat, exact,
                                lanes))
  cut = None if low.cut is None else orig.get(low.cut)
  return KernelSpec("", u, low.program, low.slots, out_slot), cut, set(orig.values())
