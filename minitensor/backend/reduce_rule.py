"""reduce_rule: rangeify's rule for REDUCE, the value of reduce(op, n)(x) at an output index.

New RANGEs over the reduced axes, an accumulator living inside the output loops, an update per element and a load
after the loops end; as opt.py's Opts say, the innermost reduce axis runs in lanes (independent accumulators in a
VECTOR loop, combined by a fixed balanced tree), split into an outer and an inner loop (`local`), or, read inside
an output VECTOR loop, with one accumulator per output lane (`_reduce_vector`, jammed by `jam`). A float32 sum
accumulating in float64 adds blocks of F32_BLOCK terms in float32 first (README, Limitations: F32_SUM_BOUND). At a
symbolic size a split axis's remainder runs as a tail loop after its whole blocks (`_tailed`). No loop at all when
the value does not change along the reduced axes and the closed form is exact (`_folded`). Reduces over the same
reduced shape at the same output index that do not read each other share their plain loops (`_shared`). The rule is
a generator like rangeify's others: `yield (x, idx)` is the value of x at idx.
"""
from __future__ import annotations
import math
from typing import TYPE_CHECKING, NamedTuple
from minitensor.backend.closed_form import closed_form, closed_form_symbolic
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.ranges import axis_parts, extent_max, fits, ranges_in, ravel, same, unrolled
from minitensor.backend.sizes import QUOTIENT
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import AxisType, Ops, UOp, prod, range_

if TYPE_CHECKING:
  from minitensor.backend.ranges import Ctx


def identity(op: Ops, d: DType):
  """The value a reduction with op starts from."""
  if op is Ops.ADD: return False if d.is_bool else 0.0 if d.is_float else 0
  if op is Ops.MUL: return True if d.is_bool else 1.0 if d.is_float else 1
  if op is Ops.MAX: return -math.inf if d.is_float else d.min
  return math.inf if d.is_float else d.max


def combine(op: Ops, a: UOp, b: UOp) -> UOp:
  if a.dtype.is_bool and op in (Ops.ADD, Ops.MUL): return UOp(Ops.OR if op is Ops.ADD else Ops.AND, (a, b))
  return UOp(op, (a, b))


def balanced(rop: Ops, vals: list[UOp]) -> UOp:
  """vals combined with rop as a balanced tree (a fixed order: results do not depend on scheduling)."""
  while len(vals) > 1:
    vals = [combine(rop, vals[i], vals[i + 1]) if i + 1 < len(vals) else vals[i] for i in range(0, len(vals), 2)]
  return vals[0]


def _split(ctx: Ctx, n: int, rkey: tuple) -> list[tuple[UOp, int]]:
  """The parts of an innermost reduce axis of size n: split into an outer loop and an inner loop of
  ctx.opts.local iterations (the inner part of factor -1, see combos) when that divides n (or with a tail at a
  symbolic size), else one loop."""
  if (b := fits(ctx.opts.local, n, ctx)) > 1:
    parts = [(ctx.blocks(n, b, AxisType.REDUCE), 1), (ctx.rng(b, AxisType.REDUCE), -1)]
    if ctx.symbolic(n): ctx.tails[rkey] = ctx.tail(n, b, AxisType.REDUCE)._replace(parts=2)
    return parts
  return [axis_parts(ctx, n, 1, AxisType.REDUCE)]


def reduce_rule(u: UOp, idx: tuple[UOp, ...], ctx: Ctx) -> UOp:
  rop, n = u.arg
  x = u.src[0]
  rshape = x.shape[len(x.shape) - n:]
  # NumPy starts a float sum from +0.0, and a complex sum or product from its identity, even with no loop: a sum of
  # one -0.0 is 0.0, a product of one inf+0j is 1 * (inf+0j) = inf+nanj
  zero = [UOp.const(identity(rop, u.dtype), u.dtype)] if (rop is Ops.ADD and u.dtype.is_float) or \
    (rop in (Ops.ADD, Ops.MUL) and u.dtype.is_complex) else []
  if n == 0: return balanced(rop, [(yield (x, idx))] + zero)
  if prod(rshape) == 0: return UOp.const(identity(rop, u.dtype), u.dtype)
  # unrolled copies of the same reduce (they differ only by constants in idx) share one loop
  rkey = (u, frozenset(ranges_in(*idx)))
  parts = ctx.reduce_ranges.get(rkey)
  n_in = rshape[-1]
  if (vec := [r for r in rkey[1] if r.arg.kind is AxisType.VECTOR]) and prod(rshape) > 1:
    # (a VECTOR reduce keeps one accumulator per output lane: not the lanes of an ordered reduce)
    assert not (ctx.ordered > 1 and ordered(u)), "rangeify: an ordered reduce in a VECTOR loop (opt.heuristic's exact)"
    if parts is None:
      jam = fits(ctx.opts.jam, n_in, ctx)
      parts = [axis_parts(ctx, s, 1, AxisType.REDUCE) for s in rshape[:-1]]
      parts += [axis_parts(ctx, n_in, jam, AxisType.REDUCE)] if jam > 1 else _split(ctx, n_in, rkey)
      if jam > 1 and ctx.symbolic(n_in): ctx.tails[rkey] = ctx.tail(n_in, jam, AxisType.REDUCE)
      parts += [(ctx.like(vec[0], AxisType.VECTOR), 0), (ctx.like(vec[0], AxisType.VECTOR), 0)]
      ctx.reduce_ranges[rkey] = parts
    return (yield from _reduce_vector(u, idx, vec[0], parts, ctx, rkey))
  if parts is None:
    lanes = ctx.ordered if ctx.ordered > 1 and n_in > 1 and ordered(u) else fits(ctx.opts.unroll, n_in, ctx)
    share = _share_key(u, rshape, rkey, lanes, ctx)
    if share is None or (parts := _shared(u, share, ctx)) is None:
      parts = [axis_parts(ctx, s, 1, AxisType.REDUCE) for s in rshape[:-1]]
      parts += _lane_parts(ctx, u, n_in, lanes, rkey) if lanes > 1 else _split(ctx, n_in, rkey)
      if share is not None: ctx.shared.setdefault(share, []).append(([u], [set(u.src[0].toposort())], parts))
    ctx.reduce_ranges[rkey] = parts
  if parts[-1][1] == 0: return (yield from _reduce_lanes(u, idx, parts, ctx, rkey))
  real = [r for r, _ in parts if r.op is Ops.RANGE]
  vals, combos = [], unrolled(parts)
  for c in combos: vals.append((yield (x, idx + c)))
  if not real: return balanced(rop, vals + zero)
  if (f := _folded(u, vals[0], real, ctx, rkey)) is not None: return f
  stash = (yield from _stash_store(u, idx, combos[0], ctx)) if len(vals) == 1 else None
  acc = ctx.alloc(u.dtype)
  # the accumulator lives inside the loops the output index uses...
  acc0 = acc.after(*ranges_in(*idx))
  init = acc0.index(0).store(UOp.const(identity(rop, u.dtype), u.dtype))
  # ...is re-read every iteration of the reduce loops...
  accl = acc0.after(init, *real, *([stash] if stash is not None else []))
  upd = accl.index(0).store(combine(rop, accl.index(0).load(), vals[0]))
  # ...and is read once more after the loops end
  done = yield from _tailed(u, idx, parts, upd, acc0, False, ctx, rkey, stash is not None)
  return acc0.after(done).index(0).load()


def _share_key(u: UOp, rshape: tuple[int, ...], rkey: tuple, lanes: int, ctx: Ctx) -> tuple | None:
  """What the loops of REDUCE u must be for another reduce to share them (_shared), or None when they are not to
  be shared: plain loops (no lanes, no split), or lanes that divide a concrete axis (no tail, which each reduce
  runs after its blocks) over the same kind of lane loop; not a float32 sum (its blocks are loops of its own), not
  the stash's reduce (its loop also stores the stash)."""
  n = rshape[-1]
  if not ctx.share or (ctx.stash is not None and ctx.stash.reduce is u): return None
  if lanes <= 1: return (rshape, rkey[1], 1, None) if fits(ctx.opts.local, n, ctx) <= 1 else None
  if ctx.symbolic(n) or n % lanes or (u.arg[0] is Ops.ADD and _f32_source(u.src[0]) is not None): return None
  nested = ctx.ordered > 1 and ordered(u) and any(x.op is Ops.REDUCE for x in u.src[0].toposort())
  return (rshape, rkey[1], lanes, nested)


def _shared(u: UOp, key: tuple, ctx: Ctx) -> list | None:
  """The loops (_share_key) of earlier reduces over the same reduced shape at the same output index that u can
  run in: none of them reads u's value and u reads none of theirs. merge_ends then makes their ENDs one loop
  updating one accumulator each: the three matrix-vector products of `hstack((dx * r) @ m, (dy * r) @ m, ...)` run
  as three independent chains of FMAs in one loop, each adding its terms in its own order (the same bits as three
  loops), instead of three loops each waiting on one chain's latency."""
  below = set(u.src[0].toposort())
  for reduces, belows, parts in ctx.shared.get(key, ()):     # (each member with the nodes it reads, found once)
    if not any(v in below or u in b for v, b in zip(reduces, belows)):
      reduces.append(u)
      belows.append(below)
      return parts
  return None


def across_rows(x: UOp) -> bool:
  """Whether the last axis of x (a reduce's source, its reduced axis last) is not the innermost axis of what x
  permutes: the reduce reads down the columns of its data."""
  while x.op is Ops.CAST: x = x.src[0]
  return x.op is Ops.PERMUTE and x.arg[-1] != len(x.arg) - 1


def ordered(u: UOp) -> bool:
  """Whether REDUCE u is lowered in the lanes of Ctx.ordered: every reduce of a real dtype but one that
  reads down the columns of its data (a column sum, whose specialization keeps one accumulator per output column in
  a VECTOR loop) and a product of broadcast operands (a matrix or matrix-vector product, whose specialization keeps
  one accumulator per output in a register tile): those add their terms in order."""
  if u.dtype.is_complex or across_rows(u.src[0]): return False
  if u.arg[0] is not Ops.ADD or not u.shape: return True
  m = u.src[0]
  while m.op is Ops.PERMUTE or m.op is Ops.RESHAPE: m = m.src[0]
  if m.op is not Ops.MUL: return True
  for x in m.src:
    while x.op is Ops.PERMUTE or x.op is Ops.RESHAPE: x = x.src[0]
    if x.op is Ops.EXPAND: return False
  return True


def _lane_parts(ctx: Ctx, u: UOp, n: int, lanes: int, rkey: tuple) -> list[tuple[UOp, int]]:
  """The innermost reduce axis of REDUCE u, of n, as (outer RANGE over its whole blocks, lanes) and (lane RANGE, 0):
  index = outer * lanes + lane. The n % lanes elements after the blocks (at a symbolic size, or an ordered
  reduce's at any size) go to the first lanes, acc[t] for t < n % lanes (Ctx.tails). An ordered reduce of fewer
  elements than lanes at a concrete size runs one block of n lanes: its sums are the same, since the lanes past n
  would only hold the identity, which balanced's pairs pass through. The lanes are a VECTOR loop, but an ordered
  reduce's over a source with reductions of its own: a plain loop, so that those are lowered as in a kernel of
  their own (a reduce in a VECTOR loop keeps one accumulator per lane, _reduce_vector: another order)."""
  if not ctx.symbolic(n) and n < lanes: lanes = n
  kind = AxisType.LOOP if ctx.ordered > 1 and ordered(u) and any(x.op is Ops.REDUCE for x in u.src[0].toposort()) \
    else AxisType.VECTOR
  parts = [(ctx.blocks(n, lanes, AxisType.REDUCE) if n >= 2 * lanes or ctx.symbolic(n) else UOp.const(0), lanes),
           (ctx.rng(lanes, kind), 0)]
  if ctx.symbolic(n) or n % lanes: ctx.tails[rkey] = ctx.tail(n, lanes, kind)._replace(parts=2)
  return parts


def _tailed(u: UOp, idx: tuple[UOp, ...], body: list, upd: UOp, acc0: UOp, per_lane: bool, ctx: Ctx, rkey: tuple,
            stashed: bool, lanes: tuple[UOp, UOp] | None = None, into: UOp | None = None):
  """The END of a reduce's loops (body: its parts, without a VECTOR reduce's lanes) around its update `upd`, with
  the tail of a symbolic split of its innermost axis (ctx.tails[rkey]) run after that axis's blocks, inside its
  other reduce loops: each remaining element combined, in order, into acc0[0], or per_lane into acc0[loop] (loop:
  the tail's, or a VECTOR reduce's lane); into the accumulator `into` instead of acc0 when given. lanes: a VECTOR
  reduce's (update lane, output lane of idx), the tail then runs in lanes too. stashed: the reduce stores the
  stash's value (lower's stash), the tail too; its done is set."""
  loops = lambda ps: [r for r, _ in ps if r.op is Ops.RANGE]
  lane_loops = [lanes[0]] if lanes else []
  if (tail := ctx.tails.get(rkey)) is None:
    done = upd.end(*loops(body), *lane_loops)
  else:
    outer, inner = body[:-tail.parts], body[-tail.parts:]
    ended = upd.end(*loops(inner), *lane_loops)
    ridx = tuple(r for r, _ in outer) + (tail.start + tail.loop,)
    at, extra = idx, []
    if lanes:
      lane = ctx.like(lanes[0], AxisType.VECTOR)
      at, extra = tuple(simplify(i.substitute({lanes[1]: lane})) for i in idx), [lane]
    v = yield (u.src[0], at + ridx)
    stash = (yield from _stash_store(u, idx, ridx, ctx)) if stashed else None
    acct = (acc0 if into is None else into).after(ended, tail.loop, *extra, *([stash] if stash is not None else []))
    k = (extra[0] if extra else tail.loop) if per_lane else UOp.const(0)
    done = acct.index(k).store(combine(u.arg[0], acct.index(k).load(), v)).end(tail.loop, *extra)
    if loops(outer): done = done.end(*loops(outer))
  if stashed: ctx.stash.done = done
  return done


def _reduce_lanes(u: UOp, idx: tuple[UOp, ...], parts: list, ctx: Ctx, rkey: tuple):
  """A reduce whose innermost axis runs as `lanes` independent accumulators acc[lane] in a VECTOR loop
  (rendered `#pragma omp simd`), combined by a fixed balanced tree after the loops. A tail inside other reduce loops
  (a sum over all of (2000, 20): 20 = 2 blocks of 8 lanes and 4 more per row) has accumulators of its own, each
  combined with its lane's before the tree: added into the first lanes, the tail writes part of a vector that the
  next row's blocks load whole, and that load waits for the stores to reach the cache (gcc 12 with 512-bit vectors
  keeps the lanes in memory there: the sum took 19 us instead of 4, Sapphire Rapids)."""
  rop = u.arg[0]
  (outer, lanes), (lane, _) = parts[-2], parts[-1]
  real = [r for r, _ in parts[:-1] if r.op is Ops.RANGE] + [lane]
  ridx = tuple(r for r, _ in parts[:-2]) + (outer * lanes + lane,)
  if (blocks := _f32_blocks(u, outer, lanes, 1, ctx, rkey)) is not None:
    return (yield from _reduce_blocked(u, idx, parts, blocks, ctx, rkey))
  v = yield (u.src[0], idx + ridx)
  if (f := _folded(u, v, real, ctx, rkey)) is not None: return f
  stash = yield from _stash_store(u, idx, ridx, ctx)
  ident = UOp.const(identity(rop, u.dtype), u.dtype)
  acc0, init = _lanes_acc(u, idx, lanes, ident, ctx)
  accl = acc0.after(init, *real, *([stash] if stash is not None else []))
  upd = accl.index(lane).store(combine(rop, accl.index(lane).load(), v))
  apart = rkey in ctx.tails and any(r.op is Ops.RANGE for r, _ in parts[:-2])
  tacc0, tinit = _lanes_acc(u, idx, lanes, ident, ctx) if apart else (None, None)
  ended = yield from _tailed(u, idx, parts, upd, acc0, True, ctx, rkey, stash is not None,
                             into=tacc0.after(tinit) if apart else None)
  done = acc0.after(ended)
  vals = [done.index(k).load() for k in range(lanes)]
  if apart: vals = [combine(rop, a, tacc0.after(ended).index(k).load()) for k, a in enumerate(vals)]
  return balanced(rop, vals)


F32_BLOCK = 16      # float32 terms a lane adds before its sum joins the float64 lanes (README, Limitations)


# |sum - exact| <= F32_SUM_BOUND * sum(|x|) for a float32 sum of up to 2**28 elements: a block's float32 partial
# (F32_BLOCK - 1 roundings), the float64 lanes and tree (n * 2**-53 <= 2**-25) and the final rounding to float32
F32_SUM_BOUND = (F32_BLOCK + 1) * 2.0 ** -24


class Blocks(NamedTuple):
  """The loops of a float32 sum's lanes in blocks (_f32_blocks): hi over the whole blocks of `lo` steps of the
  lanes' outer loop, then `rest` over the steps after them (None when there are none), from step `start`."""
  hi: UOp
  lo: UOp
  rest: UOp | None
  start: UOp


def _f32_blocks(u: UOp, outer: UOp, stride: int, per_step: int, ctx: Ctx, rkey: tuple) -> Blocks | None:
  """The Blocks of the loop `outer` over REDUCE u's innermost axis (index outer * stride + ..., each lane adding
  per_step terms a step: 1 in lanes along the axis, j in a jammed column loop) when u is a float32 sum accumulating
  in float64 (a float64 ADD of a CAST of float32) and the loop runs at least two blocks, in a kernel that allows it
  (Ctx.f32_blocks) outside a small graph's ordered lanes and a stash; else None. A block is F32_BLOCK terms per
  lane, added in float32, then that partial sum into the lane's float64 accumulator: the conversions, which bound
  such kernels, run once per block."""
  if (b := ctx.blocked.get(rkey)) is not None: return b
  n, f, lanes = u.src[0].shape[-1], max(F32_BLOCK // per_step, 1), stride
  if u.arg[0] is not Ops.ADD or u.dtype is not dtypes.float64 or _f32_source(u.src[0]) is None or \
     outer.op is not Ops.RANGE or not ctx.f32_blocks or ctx.ordered or ctx.stash is not None or n < 2 * f * lanes:
    return None
  if ctx.symbolic(n):          # (the outer loop runs n // lanes steps: its VAR; the blocks n // (lanes * f))
    q = ctx.sizes.derive(ctx.size(n), lanes * f, QUOTIENT)
    hi = ctx._over(q, n // (lanes * f), AxisType.REDUCE)
    ctx.next_range += 1
    rest = range_(n // lanes % f, ctx.next_range - 1, AxisType.REDUCE, simplify((outer.arg.var - q * f).minimum(f - 1)))
    start = q * f
  else:
    e = outer.arg.size
    hi = ctx.rng(e // f, AxisType.REDUCE)
    rest, start = (ctx.rng(e % f, AxisType.REDUCE) if e % f else None), UOp.const(e // f * f)
  b = ctx.blocked[rkey] = Blocks(hi, ctx.rng(f, AxisType.REDUCE), rest, start)
  return b


def _f32_source(x: UOp) -> UOp | None:
  """The float32 value that x, a float64 CAST of it (through PERMUTEs and RESHAPEs: a column sum's, split in blocks
  of rows), converts, or None."""
  if x.op is Ops.PERMUTE: return None if (s := _f32_source(x.src[0])) is None else s.permute(x.arg)
  if x.op is Ops.RESHAPE: return None if (s := _f32_source(x.src[0])) is None else s.reshape(x.arg)
  return x.src[0] if x.op is Ops.CAST and x.dtype is dtypes.float64 and x.src[0].dtype is dtypes.float32 else None


def _reduce_blocked(u: UOp, idx: tuple[UOp, ...], parts: list, b: Blocks, ctx: Ctx, rkey: tuple):
  """_reduce_lanes of a float32 sum in float64 lanes acc[lane] by float32 blocks (Blocks): in each iteration of
  b.hi, a float32 accumulator part[lane] starts at 0.0 and adds the terms of b.lo's steps in order, then each lane
  of it is added into acc[lane]; the steps after the blocks (b.rest) and the tail after the lanes' blocks
  (ctx.tails) are added into acc in float64, and the lanes combined by the tree after the loops."""
  (_, lanes), (lanes_loop, _) = parts[-2], parts[-1]
  around_idx = tuple(r for r, _ in parts[:-2])
  around = [r for r in around_idx if r.op is Ops.RANGE]
  lane = ctx.like(lanes_loop, AxisType.VECTOR)        # (made after b.lo, so it is the innermost loop)
  f32 = yield (_f32_source(u.src[0]), idx + around_idx + ((b.hi * b.lo.arg.size + b.lo) * lanes + lane,))
  if (f := _folded(u, f32.cast(dtypes.float64), around + [b.hi, b.lo, lane], ctx, rkey)) is not None: return f
  acc0, init = _lanes_acc(u, idx, lanes, UOp.const(0.0, dtypes.float64), ctx)
  part = ctx.alloc(dtypes.float32, lanes).after(*ranges_in(*idx), *around, b.hi)
  li = ctx.rng(lanes, AxisType.VECTOR)
  partl = part.after(part.index(li).store(UOp.const(0.0, dtypes.float32)).end(li), b.lo, lane)
  added = partl.index(lane).store(partl.index(lane).load() + f32).end(b.lo, lane)
  fl = ctx.rng(lanes, AxisType.VECTOR)
  accf = acc0.after(init, added, fl)
  done = accf.index(fl).store(accf.index(fl).load() + part.after(added, fl).index(fl).load().cast(dtypes.float64))
  done = done.end(fl).end(b.hi)
  if b.rest is not None:              # the steps after the whole blocks, in float64 lanes
    k = ctx.like(lane, AxisType.VECTOR)
    v = yield (u.src[0], idx + around_idx + ((b.start + b.rest) * lanes + k,))
    acct = acc0.after(done, b.rest, k)
    done = acct.index(k).store(acct.index(k).load() + v).end(b.rest, k)
  if (t := ctx.tails.get(rkey)) is not None:      # the tail after the lanes' blocks: into the first lanes
    v = yield (u.src[0], idx + around_idx + (t.start + t.loop,))
    acct = acc0.after(done, t.loop)
    done = acct.index(t.loop).store(acct.index(t.loop).load() + v).end(t.loop)
  if around: done = done.end(*around)
  done = acc0.after(done)
  return balanced(Ops.ADD, [done.index(k).load() for k in range(lanes)])


def _lanes_acc(u: UOp, idx: tuple[UOp, ...], lanes: int, ident: UOp, ctx: Ctx) -> tuple[UOp, UOp]:
  """An accumulator of `lanes` elements living inside the loops of idx, and its initialization to ident (the
  reduce's identity)."""
  acc0 = ctx.alloc(u.dtype, lanes).after(*ranges_in(*idx))
  li = ctx.rng(lanes, AxisType.VECTOR)
  return acc0, acc0.index(li).store(ident).end(li)


def _stash_store(u: UOp, idx: tuple[UOp, ...], ridx: tuple[UOp, ...], ctx: Ctx):
  """The STORE of the stashed value at the reduce's index idx + ridx into the output buffer, when u is the stash's
  reduce placed at the store pass's own row (idx: the output index without its last axis); else None."""
  st = ctx.stash
  if st is None or u is not st.reduce or not same(idx, st.idx[:-1]): return None
  e = yield (st.value, idx + ridx)
  return st.out.index(ravel(idx + ridx, ctx.sizes_of(st.value.shape))).store(e)


def _reduce_vector(u: UOp, idx: tuple[UOp, ...], lane: UOp, parts: list, ctx: Ctx, rkey: tuple):
  """A reduce read inside an output VECTOR loop `lane`: the reduce loops move outside the lanes. acc[lane]
  lives around them; its update runs in a fresh innermost VECTOR loop, so loads along the lane stay contiguous
  (the compiler vectorizes an inner loop; it cannot vectorize a lane loop around a loop nest). A jammed innermost
  reduce axis (Opts.jam, a part of factor j) steps by j, and one update combines its j values in order, so each
  lane's accumulator is read and written once per j steps (the same terms in the same order)."""
  rop = u.arg[0]
  j = parts[-3][1]
  if 1 <= j <= F32_BLOCK and (blocks := _f32_blocks(u, parts[-3][0], j, j, ctx, rkey)) is not None:
    return (yield from _reduce_vector_blocked(u, idx, lane, parts, blocks, ctx, rkey))
  (upd_lane, _), (init_lane, _) = parts[-2], parts[-1]
  real = [r for r, _ in parts[:-2] if r.op is Ops.RANGE]
  at = tuple(simplify(i.substitute({lane: upd_lane})) for i in idx)
  vals = []
  for c in unrolled(parts[:-2]): vals.append((yield (u.src[0], at + c)))
  if len(vals) == 1 and \
      (f := _folded(u, vals[0].substitute({upd_lane: lane}), real + [upd_lane], ctx, rkey)) is not None: return f
  acc = ctx.alloc(u.dtype, extent_max(lane))
  acc0 = acc.after(*[r for r in ranges_in(*idx) if r is not lane])
  init = acc0.index(init_lane).store(UOp.const(identity(rop, u.dtype), u.dtype)).end(init_lane)
  accl = acc0.after(init, *real, upd_lane)
  e = accl.index(upd_lane).load()
  for v in vals: e = combine(rop, e, v)
  upd = accl.index(upd_lane).store(e)
  done = yield from _tailed(u, idx, parts[:-2], upd, acc0, True, ctx, rkey, False, (upd_lane, lane))
  return acc0.after(done).index(lane).load()


def _reduce_vector_blocked(u: UOp, idx: tuple[UOp, ...], lane: UOp, parts: list, b: Blocks, ctx: Ctx, rkey: tuple):
  """_reduce_vector of a float32 sum in float64 by float32 blocks (Blocks, over the steps of its innermost reduce
  axis, jammed by j): in each iteration of b.hi a float32 accumulator part[lane] starts at 0.0 and adds b.lo's
  steps (each its j values in order), then every lane of it is added into the float64 acc[lane]; the steps after
  the blocks (b.rest) and the axis's tail (ctx.tails) are added into acc in float64. Each update runs in a VECTOR
  loop of its own, innermost."""
  j, init_lane = parts[-3][1], parts[-1][0]
  around_idx = tuple(r for r, _ in parts[:-3])
  around = [r for r in around_idx if r.op is Ops.RANGE]
  at = lambda k: tuple(simplify(i.substitute({lane: k})) for i in idx) + around_idx
  outside = [r for r in ranges_in(*idx) if r is not lane]
  ul = ctx.like(lane, AxisType.VECTOR)
  vals = []
  x = _f32_source(u.src[0])
  for c in range(j): vals.append((yield (x, at(ul) + ((b.hi * b.lo.arg.size + b.lo) * j + c,))))
  if j == 1 and (f := _folded(u, vals[0].cast(dtypes.float64).substitute({ul: lane}), around + [b.hi, b.lo, ul], ctx,
                              rkey)) is not None:
    return f
  acc0 = ctx.alloc(dtypes.float64, extent_max(lane)).after(*outside)
  init = acc0.index(init_lane).store(UOp.const(0.0, dtypes.float64)).end(init_lane)
  part = ctx.alloc(dtypes.float32, extent_max(lane)).after(*outside, *around, b.hi)
  pl = ctx.like(lane, AxisType.VECTOR)
  partl = part.after(part.index(pl).store(UOp.const(0.0, dtypes.float32)).end(pl), b.lo, ul)
  e = partl.index(ul).load()
  for v in vals: e = e + v
  added = partl.index(ul).store(e).end(b.lo, ul)
  fl = ctx.like(lane, AxisType.VECTOR)
  accf = acc0.after(init, added, fl)
  done = accf.index(fl).store(accf.index(fl).load() + part.after(added, fl).index(fl).load().cast(dtypes.float64))
  done = done.end(fl).end(b.hi)
  steps = ([(b.rest, [(b.start + b.rest) * j + c for c in range(j)])] if b.rest is not None else []) + \
          ([(t.loop, [t.start + t.loop])] if (t := ctx.tails.get(rkey)) is not None else [])
  for loop, rows in steps:
    k = ctx.like(lane, AxisType.VECTOR)
    vs = []
    for r in rows: vs.append((yield (u.src[0], at(k) + (r,))))
    acct = acc0.after(done, loop, k)
    e = acct.index(k).load()
    for v in vs: e = e + v
    done = acct.index(k).store(e).end(loop, k)
  if around: done = done.end(*around)
  return acc0.after(done).index(lane).load()


def _folded(u: UOp, v: UOp, loops: list[UOp], ctx: Ctx, rkey: tuple) -> UOp | None:
  """Reduce u without its loops when its value v does not change along them (a broadcast constant, an expand
  along the reduced axes) and the closed form is exactly what the loop computes; else None."""
  v = simplify(v)
  rs = u.src[0].shape[len(u.shape):]
  if v.ranges & set(loops): return None
  if ctx.sizes is not None and any(n > 1 for n in rs):
    f = closed_form_symbolic(u.arg[0], v, tuple(ctx.size(n) for n in rs))
  else: f = closed_form(u.arg[0], v, prod(rs))
  if f is None: return None
  del ctx.reduce_ranges[rkey]        # no loop: nothing for the kernelizer's cost model to count
  ctx.tails.pop(rkey, None)
  return f
