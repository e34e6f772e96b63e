"""rangeify: from shapes to loops.

A shaped graph says *what* each element is. Rangeify says *how to compute one element*: give every output
axis a RANGE, then ask each node "what is your value at index (i0, i1, ...)?" and push the index down:

    CONST     c[idx]                 -> c
    BUFFER    value[i]               -> LOAD(INDEX(buf, i))
    ALU       f(a, b)[idx]           -> f(a[idx], b[idx])
    INDEX     x.index(i)[j, *idx]    -> x[clamp(i[j]), *idx]   (j: the axes of i; data indices are clamped
                                                                 into x, so a gather never reads outside it)
    RESHAPE   x.reshape(s)[idx]      -> x[unravel(ravel(idx, s), x.shape)]     (indices simplified at once)
    EXPAND    x.expand(s)[idx]       -> x[0 on the axes x had as 1]
    PERMUTE   x.permute(p)[idx]      -> x[inv] where inv[p[k]] = idx[k]
    SHRINK    x.shrink(b)[idx]       -> x[idx + begin]
    PAD       x.pad(p, v)[idx]       -> where(valid, x[clamp(idx - before)], v)   (the load never leaves x)
    FLIP      x.flip(axes)[idx]      -> x[n - 1 - i on the flipped axes]
    STACK     stack(a, b)[i, *rest]  -> where(i < 1, a[rest], b[rest])
    REDUCE    reduce(op, n)[idx]     -> new RANGEs, an accumulator, a loop (no loop when the value does not
                                        change along them and the closed form is exact): reduce_rule.py
    STAGE     stage(x)[idx]          -> x[idx]  (the kernelizer cuts there; lowered alone it is transparent)

One exception to "compute each value where it is used" (lower's stash): out = f(e, reduce(e)) with e an
expensive elementwise value (softmax's exp(x - max)) would compute e twice per element, once in the reduce's
loop and once for the store. Instead the reduce's loop also stores e into the output buffer, and the store pass
reads it back from there (the row is still in cache): see _stash_of.

After rangeify no op has a shape: everything is a scalar in some loop. lower() wraps it into a program: the
output loops, the stores into the output buffer, the ENDs, and a final simplify. Opts (chosen by opt.py)
change only which RANGEs exist and how an output index is built from them, never the rules above.
"""
from __future__ import annotations
import itertools
from minitensor.backend.dtype import dtypes
from minitensor.backend.ends import merge_ends
from minitensor.backend.machine import machine
from minitensor.backend.ops import TRANSCENDENTAL
from minitensor.backend.ranges import (
  INDEX_MAPS,
  Ctx,
  Opts,
  Stash,
  apply_movement_op,
  axis_parts,
  ranges_in,
  ravel,
  same,
  unrolled,
)
from minitensor.backend.reduce_rule import reduce_rule
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import ALU, AxisType, Ops, UOp, memo_walk, sink

__all__ = ["Ctx", "Opts", "lower", "rangeify"]      # (Ctx and Opts: ranges.py's, what a caller of lower passes)


def rangeify(u: UOp, idx: tuple[UOp, ...], ctx: Ctx) -> UOp:
  """The scalar value of u at index idx. Not recursive (graphs may be 100,000 deep): each rule is a generator
  that yields the (node, index) pairs whose values it needs (memo_walk runs them on an explicit stack)."""
  return memo_walk((u, idx), lambda k: _rule(k[0], k[1], ctx), ctx.memo)


def _rule(u: UOp, idx: tuple[UOp, ...], ctx: Ctx):
  """The rule of u's op (a generator: `yield (x, i)` is the value of x at index i; it returns u's value)."""
  assert len(idx) == len(u.shape), f"{u.op}: {len(idx)} indices for shape {u.shape}"
  op = u.op
  if op is Ops.CONST: return u
  if op is Ops.BUFFER: return u.index(idx[0]).load()
  if op is Ops.STAGE: return (yield (u.src[0], idx))
  if op in ALU:
    if (st := ctx.stash) is not None and u is st.value and st.done is not None and same(idx, st.idx):
      return st.out.after(st.done).index(ravel(idx, ctx.sizes_of(u.shape))).load()
    src = []
    for s in u.src: src.append((yield (s, idx)))
    return u.replace(src=tuple(src))
  if op is Ops.INDEX:
    k = len(u.src[1].shape)
    iv = []
    for i, n in zip(u.src[1:], u.src[0].shape): iv.append(_clamp((yield (i, idx[:k])), n, ctx.size(n)))
    return (yield (u.src[0], tuple(iv) + idx[k:]))
  if op is Ops.STACK: return (yield from _stack(u.src, idx[0], idx[1:], 0))
  if op in INDEX_MAPS: return (yield (u.src[0], apply_movement_op(u, idx, ctx.size)))
  if op is Ops.PAD: return (yield from _pad(u, idx, ctx))
  if op is Ops.REDUCE: return (yield from reduce_rule(u, idx, ctx))
  raise NotImplementedError(f"rangeify: {op}")


def _stack(xs: tuple[UOp, ...], i: UOp, rest: tuple[UOp, ...], base: int):
  """Element i - base of xs at `rest`, as a balanced tree of selects (depth log2 len(xs), not len(xs))."""
  if len(xs) == 1: return (yield (xs[0], rest))
  h = len(xs) // 2
  a = yield from _stack(xs[:h], i, rest, base)
  b = yield from _stack(xs[h:], i, rest, base + h)
  return (i < base + h).where(a, b)


def _clamp(i: UOp, n: int, sym) -> UOp:
  """A data value used as an index, clamped into [0, n) (in its own dtype, so no bits are lost) and cast. sym is
  n as lowering sees it: a VAR when symbolic (then clamped below its bound in the data's dtype, then below n)."""
  lo, hi = i.vmin, i.vmax
  bound = n if not isinstance(sym, UOp) else sym.vmax
  if not (0 <= lo and hi < (n if not isinstance(sym, UOp) else sym.vmin)):
    if i.dtype.is_bool: i = i.cast(dtypes.int32)
    i = (i if i.dtype.is_unsigned else i.maximum(i.const_like(0))).minimum(i.const_like(min(bound - 1, i.dtype.max)))
  i = i.cast(dtypes.index)
  return simplify(i.minimum(sym - 1) if isinstance(sym, UOp) else i)


def _pad(u: UOp, idx: tuple[UOp, ...], ctx: Ctx) -> UOp:
  valid: UOp | None = None
  inner = []
  for i, (b, a), n in zip(idx, u.arg[0], u.src[0].shape):
    if b == a == 0: inner.append(i); continue
    j = simplify(i - ctx.size(b))
    ok = simplify((j >= 0) & (j < ctx.size(n))) if n else UOp.const(False)
    valid = ok if valid is None else valid & ok
    inner.append(simplify(j.maximum(0).minimum(ctx.size(n) - 1 if n else 0)))
  if any(n == 0 for n in u.src[0].shape): return UOp.const(u.arg[1], u.dtype)
  v = yield (u.src[0], tuple(inner))
  return v if valid is None else simplify(valid).where(v, UOp.const(u.arg[1], u.dtype))


def _stash_of(root: UOp, o: Opts) -> tuple[UOp, UOp] | None:
  """(reduce, value) where root, stored as lower() builds plain output loops, reads `value` both directly and
  through `reduce`, a REDUCE over value's last axis (or over value cast, a float32 sum accumulating in float64):
  value elementwise with a transcendental, of root's shape and dtype. The reduce of one row runs inside the
  output loops of that row (the last axis is the innermost output loop, unthreaded), so the row's elements are
  stored and read back by the same thread, before the store pass overwrites them; else None."""
  n = len(root.shape)
  if n == 0 or root.shape[-1] < 2 or o.upcast or o.vector or o.tile or o.thread == n - 1: return None
  nodes = root.toposort()
  users: dict[UOp, list[UOp]] = {}
  for x in nodes:
    for y in x.src: users.setdefault(y, []).append(x)
  for r in nodes:
    if r.op is not Ops.REDUCE or r.arg[1] != 1: continue
    e = r.src[0].src[0] if r.src[0].op is Ops.CAST else r.src[0]
    if e.op not in ALU or e.shape != root.shape or e.dtype is not root.dtype: continue
    if any(x is not r and x is not r.src[0] for x in users[e]) and any(x.op in TRANSCENDENTAL for x in e.toposort()):
      return r, e
  return None


def lower(root: UOp, out: UOp, ctx: Ctx | None = None) -> UOp:
  """Lower one shaped value into a SINK that stores it, element by element, into BUFFER `out`. An output axis of
  symbolic size split by its Opts (upcast, tile, block, vector) runs over its whole blocks, and its tail (the rest)
  in a loop nest of its own: one nest per choice of blocks or tail on each such axis."""
  ctx = ctx or Ctx()
  o, shape = ctx.opts, root.shape
  fits = lambda f, k: ctx.symbolic(shape[k]) or (f < shape[k] and shape[k] % f == 0)
  tiled = {k: t for k, t in o.tile.items() if t > 1 and fits(t, k) and t % o.upcast.get(k, 1) == 0}
  blocked = {k: b for k, b in o.block.items() if k in tiled and b > tiled[k] and b % tiled[k] == 0 and fits(b, k)}
  vec = {k: v for k, v in o.vector.items() if v > 1 and k not in tiled and k not in o.upcast and
         (ctx.symbolic(shape[k]) or (v <= shape[k] and shape[k] % v == 0))}
  # what each axis is split by: its loops run over whole blocks of it (a tail nest takes the rest)
  step = {k: blocked.get(k) or tiled.get(k) or vec.get(k) or o.upcast.get(k, 1) for k in range(len(shape))}
  # (a VECTOR axis of symbolic size is covered by whole blocks and a partial last one: Ctx.cover)
  tailed = [k for k in range(len(shape)) if step[k] > 1 and ctx.symbolic(shape[k]) and k not in vec]
  nests = [frozenset(c) for m in range(len(tailed) + 1) for c in itertools.combinations(tailed, m)]
  bodies = []
  for tails in nests:
    plist = _output_parts(ctx, shape, tiled, blocked, vec, step, tails)
    combos = unrolled(plist)
    if len(nests) == 1 and len(combos) == 1 and (found := _stash_of(root, o)) is not None:
      ctx.stash = Stash(*found, out, combos[0])
      rangeify(found[0], combos[0][:-1], ctx)        # the reduce first: the store pass then reads the stash
    stores = []
    for idx in combos:
      val = rangeify(root, idx, ctx)
      stores.append(out.index(ravel(idx, ctx.sizes_of(shape)) if shape else UOp.const(0)).store(val))
    body = stores[0] if len(stores) == 1 else UOp(Ops.SINK, tuple(stores))
    bodies.append(body.end(*ranges_in(*(b for b, _ in plist))))
  return simplify(merge_ends(sink(*bodies)))


def _output_parts(ctx: Ctx, shape: tuple[int, ...], tiled: dict, blocked: dict, vec: dict, step: dict,
                  tails: frozenset[int]) -> list[tuple[UOp, int]]:
  """The (index base, unroll factor) of every output axis in one loop nest of lower(): the axes in `tails` at their
  tail, the others over their whole blocks as the Opts say."""
  o = ctx.opts
  # the THREAD axis gets the lowest range index, so it is the outermost loop
  order = ([o.thread] if o.thread is not None else []) + [k for k in range(len(shape)) if k != o.thread]
  kind = lambda k: AxisType.THREAD if k == o.thread and k not in tails else AxisType.LOOP
  # tiled axes: every block loop first (outer), then the loops inside a block, so a block of outputs reuses
  # the same rows of each operand while they are in cache; blocked axes have one more level outside: the loops
  # over blocks of tiles (an L2 block of L1 tiles), then the tile loops within a block
  parts: dict[int, tuple[UOp, int]] = {}
  if o.thread is not None and o.thread not in tiled and o.thread not in vec and o.thread not in tails:
    parts[o.thread] = axis_parts(ctx, shape[o.thread], o.upcast.get(o.thread, 1), AxisType.THREAD)
  main = [k for k in order if k not in tails]
  blocks = {k: ctx.blocks(shape[k], blocked[k], kind(k)) for k in main if k in blocked}
  outer = {k: ctx.rng(blocked[k] // tiled[k]) if k in blocked else ctx.blocks(shape[k], tiled[k], kind(k))
           for k in main if k in tiled}
  for k in order:
    f = o.upcast.get(k, 1)
    if k in parts: continue
    if k in tails:                 # the indices after the whole blocks (a VECTOR axis's in lanes)
      t = ctx.tail(shape[k], step[k], AxisType.VECTOR if k in vec else AxisType.LOOP)
      parts[k] = (t.start + t.loop, 1)
    elif k in tiled:
      inner, t = tiled[k] // f, outer[k]
      if k in blocked: t = blocks[k] * (blocked[k] // tiled[k]) + t          # the tile's index along the axis
      parts[k] = (t * inner + ctx.rng(inner) if inner > 1 else t, f)
    elif k in vec and ctx.symbolic(shape[k]) and kind(k) is AxisType.THREAD and (c := machine().cores) > 1:
      parts[k] = (ctx.stretches(shape[k], vec[k], c, AxisType.VECTOR), 1)
    elif k in vec and ctx.symbolic(shape[k]):
      block, lane = ctx.cover(shape[k], vec[k], kind(k), AxisType.VECTOR)
      parts[k] = (block * vec[k] + lane, 1)
    elif k in vec: parts[k] = (ctx.rng(shape[k] // vec[k], kind(k)) if shape[k] > vec[k] else UOp.const(0), 1)
    else: parts[k] = axis_parts(ctx, shape[k], f, kind(k))
  # vector lanes: the innermost output loops, run as `#pragma omp simd` (the reduce loops nest inside them)
  for k, v in vec.items():
    if not ctx.symbolic(shape[k]): parts[k] = (parts[k][0] * v + ctx.rng(v, AxisType.VECTOR), 1)
  return [parts[k] for k in range(len(shape))]
