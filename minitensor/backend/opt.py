"""opt: choose the Opts of a kernel from its shape and its access strides.

What to compute is fixed by the graph; Opts only decide how the ranges are built (the seed's Halide split).
The choice reads the kernel's value rangeified at plain output loops: for every LOAD, the stride of its address along
each loop (the address when that loop steps by one in the middle of its range, all others at their middle), then:

    unroll   the innermost reduce axis is split into LANES accumulators when the loads walk it with stride 1:
             independent chains the C compiler keeps in one vector register (sums, max, dot products)
    vector   otherwise the innermost output axis runs in LANES-wide `omp simd` loop around the reduce loops
             when loads walk it with stride 1 (column sums, GEMM: a row of B times a broadcast element of A,
             convolution along a row): the compiler vectorizes the outer loop, one accumulator per lane
    upcast   an outer output axis that one load walks while another broadcasts it is unrolled inside that loop,
             so each loaded vector feeds several rows (a register tile of rows x 2 vectors sized to the registers)
    tile     an elementwise kernel that reads with a large stride along the store's contiguous axis (a
             transpose) is blocked 32 x 32, so both sides stay in cache
    thread   the outermost output axis of size >= 2 runs on all cores (OpenMP) when the kernel does at
             least THREAD_WORK loop iterations (outputs plus, per reduce, its loops around and inside)

Factors must divide the axis; otherwise the axis is left as it is (correct, only slower). LANES, the register
tile and the column-sum width come from the machine model (machine.py).
"""
from __future__ import annotations
from minitensor.backend.machine import machine
from minitensor.backend.rangeify import Ctx, Opts, rangeify
from minitensor.backend.uop import Ops, UOp, prod

THREAD_WORK = 1 << 17
TILE = 32


def _lanes(itemsize: int) -> int: return machine().lanes(itemsize)       # one vector register


def _wide() -> int:
  """Column-sum lanes: half the vector registers as float32 accumulators (AVX-512, measured on (4096, 1024) on a
  Zen 4: 225 us at 128 lanes, 275 at 256-1024, 290 at 64)."""
  m = machine()
  return m.registers // 2 * m.lanes(4)


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


def choose_opts(root: UOp) -> Opts:
  """The Opts for the kernel computing shaped `root` (see the module docstring for the rules)."""
  shape = root.shape
  if not shape or prod(shape) == 0: return Opts()
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
  itemsize = max((i.dtype.itemsize for i in loads), default=root.dtype.itemsize)
  lanes = _lanes(itemsize)
  opts = Opts()
  inner = max((r for r in axis_of), key=lambda r: r.arg.idx, default=None)
  reduce_inner = [parts[-1][0] for parts in ctx.reduce_ranges.values() if parts and parts[-1][0].op is Ops.RANGE]
  work = prod(shape) + sum(prod(r.arg.size for r in rs) * prod(u.src[0].shape[len(u.shape):])
                           for (u, rs) in ctx.reduce_ranges)
  if reduce_inner:
    rr = reduce_inner[0]
    gemm_like = inner is not None and any(_stride(i.src[1], inner) == 1 and (_stride(i.src[1], rr) or 0) > 1
                                          for i in loads)
    reduce_lanes = divisor(rr.arg.size, lanes) if unit(rr) else 1
    if reduce_lanes > 1 and not gemm_like: opts.unroll = reduce_lanes
    elif inner is not None and unit(inner) and (f := divisor(shape[axis_of[inner]], lanes)) > 1:
      opts.vector[axis_of[inner]] = f
      # a register tile: rows that one load broadcasts (stride 0) while another walks them
      rows = [r for r in axis_of if r is not inner and large(r) and any(_stride(i.src[1], r) == 0 for i in loads)]
      if rows and (f := divisor(shape[axis_of[max(rows, key=lambda r: r.arg.idx)]], _tile_rows())) > 1:
        opts.upcast[axis_of[max(rows, key=lambda r: r.arg.idx)]] = f
        opts.vector[axis_of[inner]] = divisor(shape[axis_of[inner]], 2 * lanes)
      elif not rows and len(axis_of) == 1:
        # nothing to reuse in registers (a column sum): _wide() lanes, as many accumulators as the registers
        # hold, each pass over the rows reading a 512-byte run per row; the blocks are shared by the threads
        n = shape[axis_of[inner]]
        opts.vector[axis_of[inner]] = divisor(n, min(_wide(), n // 2 if work >= THREAD_WORK else n))
  elif inner is not None and len(axis_of) >= 2 and unit(inner) < len(loads):
    other = [r for r in axis_of if r is not inner and unit(r)]
    if other and shape[axis_of[inner]] % TILE == 0 and shape[axis_of[other[0]]] % TILE == 0:
      opts.tile = {axis_of[inner]: TILE, axis_of[other[0]]: TILE}
  if work >= THREAD_WORK:
    first = min(axis_of, key=lambda r: r.arg.idx, default=None)
    if first is not None and \
        shape[axis_of[first]] // (opts.upcast.get(axis_of[first], 1) * opts.vector.get(axis_of[first], 1)) >= 2:
      opts.thread = axis_of[first]
  return opts
