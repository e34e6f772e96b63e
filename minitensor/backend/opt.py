"""opt: the Opts of a kernel as a list of actions, and the heuristic that proposes them.

What to compute is fixed by the graph; Opts only decide how the ranges are built (the seed's Halide split). An
Opts is built from a list of actions `Opt(op, axis, arg)` (tinygrad's Opt is the model), each applied by
apply_opt to the Opts so far, or refused (OptRefused, with the reason) where lower() would ignore it:

    UPCAST  axis f   output axis unrolled by f inside its loop (a register tile of rows)
    UNROLL  0    f   the innermost reduce axis as f independent accumulators (vector lanes); axis 0 only
    VECTOR  axis f   output axis as an f-wide `omp simd` loop around the reduce loops
    TILE    axis b   output axis blocked by b, the block loops outside (cache blocks)
    BLOCK   axis b   a tiled axis grouped into blocks of b (a multiple of its tile): the loops over blocks outside
                     the tile loops (two-level blocking: L2 blocks of L1 tiles)
    THREAD  axis 0   output axis run on all cores (OpenMP)
    LOCAL   0    b   the innermost reduce axis as an outer loop around an inner loop of b iterations (a block of
                     the reduction with a literal trip count the compiler can unroll); axis 0 only
    JAM     0    f   the innermost reduce axis of a VECTOR kernel stepped by f, its f values combined in order in
                     one pass of the lanes (unroll and jam: each accumulator read and written once per f steps)

Every factor must divide its axis (and be smaller than it where lower() needs an outer loop); an axis takes
one action of each kind, UPCAST and VECTOR exclude each other, TILE excludes VECTOR, BLOCK needs TILE on its axis,
JAM needs VECTOR, and UNROLL, LOCAL and JAM exclude each other;
the accumulators of a register tile must fit the machine's vector registers. A refused action is never wrong to
skip: every Opts that apply_opt builds computes the same values as Opts() (up to the order of float reductions).
LOCAL blocks the reduction inside the output loops: blocking it around them (partial sums of a K block kept in
the output, as a cache-blocked GEMM does) needs accumulators that outlive the output loops, which rangeify's
accumulators do not.

The heuristic reads the kernel's value rangeified at plain output loops: for every LOAD, the stride of its address
along each loop (the address when that loop steps by one in the middle of its range, all others at their middle),
then proposes:

    unroll   the innermost reduce axis is split into CHAINS x LANES accumulators (LANES of the accumulator's
             dtype) when the loads walk it with stride 1: independent chains the C compiler keeps in CHAINS vector
             registers, so an add's latency does not bound the loop (sums, max, dot products)
    rows     where no such factor divides the reduce axis (100 terms), or the kernel must keep the plain order of
             its reductions (exact), and no load walks the innermost output axis with stride 1, that axis is
             upcast instead, up to 2 x CHAINS rows: as many independent scalar chains in one pass, each row's
             terms added in order (the matrix-vector products of an N-body step of 100 bodies: 5.9 -> 2.4 us per
             product, AMD EPYC Zen 5)
    vector   otherwise the innermost output axis runs in LANES-wide `omp simd` loop around the reduce loops
             when loads walk it with stride 1 (GEMM: a row of B times a broadcast element of A, convolution
             along a row): the compiler vectorizes the outer loop, one accumulator per lane. With nothing to keep
             in registers (a column sum) the loop is as wide as accumulators in half the L1 allow (_wide), and
             JAM rows are combined per pass over it
    upcast   an outer output axis that one load walks while another broadcasts it is unrolled inside that loop,
             so each loaded vector feeds several rows (a register tile of rows x 2 vectors sized to the registers)
    tile     an elementwise kernel that reads with a large stride along the store's contiguous axis (a
             transpose) is blocked TILE x TILE when its data exceed L2, so both sides stay in cache, and the tiles
             grouped into square blocks whose input and output fill half the L2 (_block), so the pages a block
             touches stay in the TLB
    thread   the outermost output axis of size >= 2 runs on all cores (OpenMP) when the kernel does at
             least THREAD_WORK loop iterations (outputs plus, per reduce, its loops around and inside)

Factors are chosen to divide their axes (an axis they would not divide is left as it is: correct, only slower).
LANES, the register tile and the column-sum width come from the machine model (machine.py).
"""
from __future__ import annotations
from enum import Enum, auto
from typing import NamedTuple
from minitensor.backend.machine import machine
from minitensor.backend.rangeify import rangeify
from minitensor.backend.ranges import Ctx, Opts
from minitensor.backend.reduce_rule import ordered
from minitensor.backend.uop import Ops, UOp, prod

THREAD_WORK = 1 << 17
# cache tiles of a transpose-like copy: measured on (4096, 1024) float32 (AMD EPYC Zen 3, tier 1, medians of
# alternating runs): 8 x 8 5.2-7.3 ms, 4 x 4 5.1 ms, 16 x 16 8.5-9.0 ms, 32 x 32 8.7-9.9 ms; in blocks: _block
TILE = 8
# independent vector accumulators of an unrolled reduction (an add's latency is 3-4 cycles, two issue per cycle).
# Row sums of (4096, 1024) float32 in float64 (AMD EPYC Zen 3, 2 threads, minimum of 20 calls): 2 chains 0.43-0.63
# ms, 4 chains 0.38-0.60, 8 chains 0.38-0.62; NumPy 1.19-1.25 ms
CHAINS = 4
MAX_UPCAST = 32          # unrolled copies of the output expression at most (code size)
# rows of a column sum combined per pass over its block of columns (JAM): the first kernel of a (4096, 1024) float32
# column sum in float64 (AMD EPYC Zen 3, 2 threads, C harness, medians): 1 row 0.63-0.74 ms, 2 rows 0.49-0.55, 4 rows
# 0.44-0.50, 8 rows 0.92-0.96 (eight input streams)
JAM = 4


class OptOps(Enum):
  UPCAST = auto(); UNROLL = auto(); VECTOR = auto(); TILE = auto(); THREAD = auto(); LOCAL = auto(); BLOCK = auto()
  JAM = auto()


# the actions after which every output element is still computed by the same operations in the same order as with
# Opts(): all but UNROLL, whose independent accumulators add a reduction's terms in another order (JAM combines its
# steps in order, LOCAL runs the same loop in two levels, the others only choose which outputs a loop visits)
EXACT = frozenset(OptOps) - {OptOps.UNROLL}


class Opt(NamedTuple):
  """One action on a kernel's loops (see the module docstring)."""
  op: OptOps
  axis: int
  arg: int

  def __repr__(self) -> str: return f"Opt({self.op.name}, {self.axis}, {self.arg})"


class OptRefused(ValueError):
  """apply_opt cannot apply the action to this kernel: `reason` says why."""
  def __init__(self, opt: Opt, reason: str):
    super().__init__(f"{opt!r} refused: {reason}")
    self.opt, self.reason = opt, reason


class KernelInfo(NamedTuple):
  """What apply_opt checks an action against: the kernel's output shape, the innermost reduced size of each of
  its reduces, the item size its vectors hold, and whether it is lowered with symbolic sizes (its shape and
  reduced sizes are then those it was first seen at: a factor need not divide them, the split loop gets a tail)."""
  shape: tuple[int, ...]
  reduce_inner: tuple[int, ...] = ()
  itemsize: int = 4
  symbolic: bool = False

  @staticmethod
  def of(root: UOp, symbolic: bool = False) -> KernelInfo:
    """The info of the kernel computing shaped `root` (its reduces: every REDUCE below it)."""
    nodes = root.toposort()
    red = tuple(u.src[0].shape[-1] for u in nodes if u.op is Ops.REDUCE and u.arg[1] > 0)
    # (one-element buffers, such as lifted constants, are read once: the streamed data set the vector width)
    sizes = [u.dtype.itemsize for u in nodes if u.op is Ops.BUFFER and u.arg.shape[0] > 1] or [root.dtype.itemsize]
    return KernelInfo(tuple(root.shape), red, max(sizes), symbolic)

  def splits(self, n: int, f: int) -> bool:
    """Whether factor f splits an axis of size n: f divides n and is smaller, or (symbolic) n is a graph size."""
    return f >= 2 and (n >= 2 if self.symbolic else n % f == 0 and n > f)

  def fit(self, n: int, want: int) -> int:
    """The factor for an axis of n that wants `want`: the largest of want, want/2, ... 1 dividing n (divisor),
    or at symbolic sizes the largest power of two up to want (a tail takes the rest)."""
    return 1 << (max(want, 1).bit_length() - 1) if self.symbolic else divisor(n, want)


def _registers(o: Opts, info: KernelInfo) -> int:
  """Vector registers the accumulators of a register tile hold: unrolled rows x vectors per row."""
  lanes = machine().lanes(info.itemsize)
  return prod(o.upcast.values()) * max(1, max(o.vector.values(), default=1) // lanes)


def apply_opt(o: Opts, opt: Opt, info: KernelInfo) -> Opts:
  """The Opts o with opt applied (o is not changed); OptRefused where lower() would not apply it as asked."""
  def no(why: str): raise OptRefused(opt, why)
  op, ax, f = opt.op, opt.axis, opt.arg
  if op in (OptOps.UNROLL, OptOps.LOCAL, OptOps.JAM):
    if ax != 0: no(f"{op.name} splits the innermost reduce axis only (axis 0)")
    if not info.reduce_inner: no("the kernel has no reduce")
    if o.unroll > 1: no("the reduce axis is unrolled already")
    if o.local > 1: no("the reduce axis is blocked already (LOCAL)")
    if o.jam > 1: no("the reduce axis is jammed already (JAM)")
    if op is OptOps.JAM and not o.vector: no("JAM combines reduce steps inside a VECTOR loop: VECTOR first")
    if not any(info.splits(n, f) for n in info.reduce_inner):
      no(f"{f} does not split any innermost reduce axis {info.reduce_inner} (must divide it and be smaller)")
    return o.replace(**{{OptOps.UNROLL: "unroll", OptOps.LOCAL: "local", OptOps.JAM: "jam"}[op]: f})
  if not 0 <= ax < len(info.shape) or info.shape[ax] < 2: no(f"axis {ax} is not an output axis of {info.shape}")
  n = info.shape[ax]
  if op is OptOps.THREAD:
    if o.thread is not None: no(f"axis {o.thread} is threaded already")
    if f != 0: no("THREAD takes no factor (arg 0)")
    return o.replace(thread=ax)
  if f < 2 or (n % f and not info.symbolic): no(f"{f} does not divide axis {ax} of size {n}")
  if op is OptOps.UPCAST:
    if ax in o.upcast: no(f"axis {ax} is upcast already")
    if ax in o.vector: no(f"axis {ax} is a VECTOR axis")
    if ax in o.tile and o.tile[ax] % f: no(f"{f} does not divide the tile {o.tile[ax]} of axis {ax}")
    new = o.replace(upcast={**o.upcast, ax: f})
    if prod(new.upcast.values()) > MAX_UPCAST: no(f"more than {MAX_UPCAST} unrolled copies of the output")
  elif op is OptOps.VECTOR:
    if o.vector: no(f"axis {next(iter(o.vector))} is the VECTOR axis already")
    if o.jam > 1: no("the reduce axis is jammed (JAM comes after VECTOR)")
    if ax in o.upcast: no(f"axis {ax} is upcast")
    if ax in o.tile: no(f"axis {ax} is tiled")
    new = o.replace(vector={**o.vector, ax: f})
  elif op is OptOps.TILE:
    if ax in o.tile: no(f"axis {ax} is tiled already")
    if f >= n and not info.symbolic: no(f"a tile of {f} is not smaller than axis {ax} of size {n}")
    if ax in o.vector: no(f"axis {ax} is a VECTOR axis")
    if o.upcast.get(ax, 1) > 1 and f % o.upcast[ax]: no(f"the upcast {o.upcast[ax]} of axis {ax} does not divide {f}")
    new = o.replace(tile={**o.tile, ax: f})
  elif op is OptOps.BLOCK:
    if ax not in o.tile: no(f"axis {ax} is not tiled (a BLOCK groups its tiles)")
    if ax in o.block: no(f"axis {ax} is blocked already")
    if f >= n and not info.symbolic: no(f"a block of {f} is not smaller than axis {ax} of size {n}")
    if f <= o.tile[ax] or f % o.tile[ax]: no(f"{f} is not a larger multiple of the tile {o.tile[ax]} of axis {ax}")
    new = o.replace(block={**o.block, ax: f})
  else: no(f"unknown action {op}")
  if op in (OptOps.UPCAST, OptOps.VECTOR) and new.upcast and _registers(new, info) > machine().registers:
    no(f"the register tile needs {_registers(new, info)} vector registers, the machine has {machine().registers}")
  return new


def build(actions: list[Opt], info: KernelInfo) -> Opts:
  """The Opts the actions build, applied in order from Opts() (OptRefused at the first that does not apply)."""
  o = Opts()
  for a in actions: o = apply_opt(o, a, info)
  return o.replace(actions=tuple(actions))


def _lanes(itemsize: int) -> int: return machine().lanes(itemsize)       # one vector register


def _wide(n: int, acc_itemsize: int, threads: int, fit) -> int:
  """Column-sum lanes of an output axis of n: each thread takes one contiguous block of columns, as wide as
  accumulators in half the L1 allow, so every pass over the rows streams long runs of each row. Measured on
  (4096, 1024) float32 (float64 accumulators; AMD EPYC Zen 3, 2 threads, minimum of 20 calls, alternating): 32
  lanes 0.95-2.4 ms, 128 0.77-1.2, 512 (one block per thread) 0.56-0.71, 1024 unthreaded 0.80-0.99, NumPy
  0.77-1.0; a narrow block re-reads a short run of every row and misses the TLB each time."""
  m = machine()
  return fit(n, min(max(m.lanes(acc_itemsize), m.l1 // (2 * acc_itemsize)), max(1, n // threads)))


def _block(n: int, itemsize: int, symbolic: bool = False) -> int:
  """The block of a transpose-like copy's axis of n: TILE times a power of two, square blocks whose input and output
  (2 b^2 elements) fill at most half the L2, dividing n. Measured on (4096, 1024) float32 (AMD EPYC Zen 3, 512 KiB
  L2, 2 threads, medians of 40 alternating calls in a C harness): 8 x 8 tiles alone 6.4-7.6 ms, in blocks of 64 x
  64 5.7-5.9 (all blocks of one input row band first) or 3.8-5.0 (of one output row band first), 128 x 128 3.4-5.1,
  256 x 128 3.3-5.2. A block of 128 rows touches 128 pages of each side: the TLB holds them; the 8-wide tiles
  alone walk all 4,096 input rows (4,096 pages) for each 8 output rows."""
  b = TILE
  while 2 * (2 * b) ** 2 * itemsize <= machine().l2 // 2: b *= 2
  while b > TILE and (n % b if not symbolic else b > n): b //= 2
  return b


def _tile_rows() -> int:
  """Rows of a register tile of rows x 2 vectors: a power of two of accumulators that leaves 4 registers for the
  loaded vectors (8 with 32 registers, measured 169 vs 143 GFLOP/s on a Zen 4; 4 with 16)."""
  return 1 << (((machine().registers - 4) // 2).bit_length() - 1)


def divisor(n: int, want: int) -> int:
  """The largest of want, want/2, want/4, ... 1 that divides n."""
  f = want
  while f > 1 and n % f: f //= 2
  return f


def _stride(addr: UOp, r: UOp) -> int | None:
  """How far addr moves when r steps by one in the middle of its range (all loops at their middle, away from
  the clamps of padding); None if the address depends on loaded data."""
  from minitensor.backend.symbolic import simplify
  if r not in addr.ranges: return 0
  mid = {x: UOp.const((x.arg.size - 1) // 2) for x in addr.ranges}
  a0 = simplify(addr.substitute(mid))
  a1 = simplify(addr.substitute({**mid, r: UOp.const((r.arg.size - 1) // 2 + 1)}))
  return a1.arg - a0.arg if a0.op is Ops.CONST and a1.op is Ops.CONST else None


def heuristic(root: UOp, info: KernelInfo | None = None, exact: bool = False, lanes: int = 0) -> list[Opt]:
  """The actions proposed for the kernel computing shaped `root` (see the module docstring for the rules); info:
  its KernelInfo when the caller has it; exact: only actions that keep the plain lowering's operation order
  (EXACT: no UNROLL), whose ordered reduces run in `lanes` (rangeify's Ctx.ordered: then no VECTOR loop)."""
  shape = root.shape
  if prod(shape) == 0: return []
  # rangeify once at plain output ranges (no lowering, no final simplify): enough to read the load addresses
  ctx = Ctx()
  idx = tuple(ctx.rng(s) if s > 1 else UOp.const(0) for s in shape)
  val = rangeify(root, idx, ctx)
  axis_of = {r: ax for ax, r in enumerate(idx) if r.op is Ops.RANGE}
  loads = [u.src[0] for u in val.toposort() if u.op is Ops.LOAD and u.src[0].src[0].op is Ops.BUFFER]
  def unit(r: UOp) -> int:
    return sum(1 for i in loads if _stride(i.src[1], r) in (1, -1))
  def large(r: UOp) -> int:
    return sum(1 for i in loads if (s := _stride(i.src[1], r)) is not None and abs(s) > 1)
  # the element size of the data the loops stream (a one-element argument, such as a lifted float64 constant, is
  # read once and does not set the vector width)
  itemsize = max((i.dtype.itemsize for i in loads if i.src[1].ranges), default=root.dtype.itemsize)
  lanes = _lanes(itemsize)
  acts: list[Opt] = []
  info, o = info or KernelInfo.of(root), Opts()
  def add(opt: Opt) -> None:             # a refused action is one lower() would ignore: it is left out
    nonlocal o
    try: o = apply_opt(o, opt, info)
    except OptRefused: return
    acts.append(opt)
  inner = max((r for r in axis_of), key=lambda r: r.arg.idx, default=None)
  reduce_inner = [parts[-1][0] for parts in ctx.reduce_ranges.values() if parts and parts[-1][0].op is Ops.RANGE]
  work = prod(shape) + sum(prod(r.arg.size for r in rs) * prod(u.src[0].shape[len(u.shape):])
                           for (u, rs) in ctx.reduce_ranges)
  # (an exact kernel's ordered reduces run in lanes of their own, which a VECTOR loop's outputs cannot take)
  lane_free = not (exact and lanes > 1 and any(ordered(u) for (u, _) in ctx.reduce_ranges))
  if reduce_inner:
    rr = reduce_inner[0]
    gemm_like = inner is not None and any(_stride(i.src[1], inner) == 1 and (_stride(i.src[1], rr) or 0) > 1
                                          for i in loads)
    acc = max((u.dtype.itemsize for (u, _) in ctx.reduce_ranges), default=itemsize)
    # (at least 8 steps of the loop: rows of 32 float32 summed in float64 took 5.5 ms in 32 lanes, 3.0 in 8)
    reduce_lanes = info.fit(rr.arg.size, max(lanes, min(CHAINS * _lanes(acc), rr.arg.size // 8))) if unit(rr) else 1
    # (a scalar's reduce: in lanes, unless at symbolic sizes a load's address divides by a size, a division each
    # lane then computes and gathers by: a symbolic argmax's index, 1.45 -> 2.29 ms at 2^20)
    gathers = not shape and info.symbolic and any(a.op in (Ops.FLOORDIV, Ops.FLOORMOD) for i in loads
                                                  for a in i.src[1].toposort())
    if reduce_lanes > 1 and not gemm_like and not exact and not gathers: add(Opt(OptOps.UNROLL, 0, reduce_lanes))
    elif unit(rr) and not gemm_like and inner is not None and not unit(inner) and \
        (f := info.fit(shape[axis_of[inner]], 2 * CHAINS)) > 1:
      # rows: a reduction no factor of the lanes divides (100 terms), or one that must keep its order (exact), over
      # rows no load walks with stride 1 (where one does, VECTOR below runs them in lanes)
      add(Opt(OptOps.UPCAST, axis_of[inner], f))
    elif inner is not None and unit(inner) and lane_free:
      n = shape[axis_of[inner]]
      # a register tile: rows that one load broadcasts (stride 0) while another walks them
      rows = [r for r in axis_of if r is not inner and large(r) and any(_stride(i.src[1], r) == 0 for i in loads)]
      if not rows:
        # nothing to reuse in registers (a column sum): a wide block of columns (_wide), one per thread when the
        # threads share this axis (the outermost); any width, a multiple of the lanes or not
        vec = _wide(n, acc, machine().cores if work >= THREAD_WORK and len(axis_of) == 1 else 1, info.fit)
        jam = info.fit(rr.arg.size, JAM) if rr.arg.size > JAM else 1
      elif (vec := info.fit(n, lanes)) > 1 and \
          (f := info.fit(shape[axis_of[max(rows, key=lambda r: r.arg.idx)]], _tile_rows())) > 1:
        add(Opt(OptOps.UPCAST, axis_of[max(rows, key=lambda r: r.arg.idx)], f))
        vec = info.fit(n, 2 * lanes)
      if vec > 1:
        add(Opt(OptOps.VECTOR, axis_of[inner], vec))
        if not rows and jam > 1: add(Opt(OptOps.JAM, 0, jam))
  elif inner is not None and len(axis_of) >= 2 and unit(inner) < len(loads):
    other = [r for r in axis_of if r is not inner and unit(r)]
    # (a copy whose data fit in L2 stays in cache without blocks)
    if other and info.splits(shape[axis_of[inner]], TILE) and info.splits(shape[axis_of[other[0]]], TILE) and \
        prod(shape) * itemsize > machine().l2:
      add(Opt(OptOps.TILE, axis_of[inner], TILE))
      add(Opt(OptOps.TILE, axis_of[other[0]], TILE))
      for r in (inner, other[0]):
        if (b := _block(shape[axis_of[r]], itemsize, info.symbolic)) > TILE: add(Opt(OptOps.BLOCK, axis_of[r], b))
  if work >= THREAD_WORK:
    first = min(axis_of, key=lambda r: r.arg.idx, default=None)
    if first is not None and \
        shape[axis_of[first]] // (o.upcast.get(axis_of[first], 1) * o.vector.get(axis_of[first], 1)) >= 2:
      add(Opt(OptOps.THREAD, axis_of[first], 0))
  return acts


def choose_opts(root: UOp) -> Opts:
  """The Opts the heuristic's actions build for the kernel computing shaped `root`."""
  info = KernelInfo.of(root)
  return build(heuristic(root, info), info)
