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
                                        change along them and the closed form is exact: _closed_form)
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
import math
from dataclasses import dataclass, field, replace
from typing import NamedTuple
from minitensor.backend.closed_form import closed_form, closed_form_symbolic
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.ends import merge_ends
from minitensor.backend.ops import TRANSCENDENTAL
from minitensor.backend.sizes import CEILING, QUOTIENT, Sizes
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import ALU, AxisType, Ops, ParamArg, UOp, memo_walk, prod, range_, sink


def ravel(idx: tuple[UOp, ...], shape: tuple) -> UOp:
  """The row-major flat position of idx in shape (Horner's rule). Sizes may be ints or VARs; the first is not
  used (idx is in bounds), so a flat buffer's own size never enters index arithmetic."""
  if not idx: return UOp.const(0)
  flat = idx[0]
  for i, s in zip(idx[1:], shape[1:]): flat = flat * s + i
  return flat


def unravel(flat: UOp, shape: tuple) -> tuple[UOp, ...]:
  """The index in shape of the in-bounds flat position `flat` (sizes ints or VARs); size-1 axes get CONST 0, and
  the first axis needs no modulo."""
  out, stride = [], 1
  for k in range(len(shape) - 1, -1, -1):
    s = shape[k]
    if type(s) is int and s == 1: out.append(UOp.const(0)); continue
    out.append(flat // stride if k == 0 else (flat // stride) % s)
    stride = s * stride
  return tuple(reversed(out))


INDEX_MAPS = frozenset({Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.SHRINK, Ops.FLIP})   # MOVEMENT but PAD (guarded)


def apply_movement_op(u: UOp, idx: tuple[UOp, ...], size=lambda n: n) -> tuple[UOp, ...]:
  """The index into u.src[0] that movement op u (one of INDEX_MAPS) reads at index idx: the one definition of the
  movement index maps. size maps a size of the graph to what index arithmetic uses (rangeify's Ctx.size: its VAR in
  a symbolic lowering); offsets and reshaped indices are simplified at once, so a chain of movements never builds an
  index expression as deep as the chain (((i*N + j)//N) % N mentions j but *is* i, and _reduce places loops by what
  an index mentions)."""
  x, op = u.src[0], u.op
  if op is Ops.RESHAPE:
    flat = ravel(idx, sizes_of(u.shape, size))
    return tuple(simplify(i) for i in unravel(flat, sizes_of(x.shape, size)))
  if op is Ops.EXPAND: return tuple(UOp.const(0) if s == 1 and n != 1 else i for i, s, n in zip(idx, x.shape, u.shape))
  if op is Ops.PERMUTE:
    inv: list[UOp] = list(idx)
    for k, p in enumerate(u.arg): inv[p] = idx[k]
    return tuple(inv)
  if op is Ops.SHRINK: return tuple(simplify(i + size(b)) if b else i for i, (b, _) in zip(idx, u.arg))
  if op is Ops.FLIP:
    return tuple(simplify((size(n) - 1) - i) if k in u.arg else i for k, (i, n) in enumerate(zip(idx, u.shape)))
  raise ValueError(f"apply_movement_op: {op} is not an index map")


def sizes_of(shape: tuple[int, ...], size=lambda n: n) -> tuple:
  """A shape's sizes for ravel/unravel (each as `size` maps it), which never use the first (a staged buffer's flat
  size is not one of the graph's sizes), so it stays the int."""
  return shape[:1] + tuple(size(n) for n in shape[1:])


def identity(op: Ops, d: DType):
  """The value a reduction with op starts from."""
  if op is Ops.ADD: return False if d.is_bool else 0.0 if d.is_float else 0
  if op is Ops.MUL: return True if d.is_bool else 1.0 if d.is_float else 1
  if op is Ops.MAX: return -math.inf if d.is_float else d.min
  return math.inf if d.is_float else d.max


@dataclass
class Opts:
  """How to map a kernel onto the machine: what a list of opt.py's actions builds (opt.apply_opt checks each),
  applied by lower() and _reduce."""
  upcast: dict[int, int] = field(default_factory=dict)   # output axis -> unroll factor (register tile)
  thread: int | None = None                              # output axis run in parallel (OpenMP)
  unroll: int = 1                                        # vector lanes of the innermost reduce axis
  tile: dict[int, int] = field(default_factory=dict)     # output axis -> cache block size
  block: dict[int, int] = field(default_factory=dict)    # tiled output axis -> an outer block of its tiles
  vector: dict[int, int] = field(default_factory=dict)   # output axis -> lanes of an innermost `omp simd` loop
  local: int = 1                                         # innermost reduce axis as outer loop x inner loop of this
  jam: int = 1                                           # reduce steps combined per pass of a VECTOR loop
  actions: tuple = ()                                    # the opt.Opt actions that built these Opts


@dataclass
class Stash:
  """An expensive elementwise `value` that the loop of `reduce` stores into the output buffer `out` as it reads it,
  and that the store pass at output index `idx` loads back once `done` (the reduce's loops, ended) is set."""
  reduce: UOp
  value: UOp
  out: UOp
  idx: tuple
  done: UOp | None = None


@dataclass(frozen=True)
class Tail:
  """The indices of a split axis after its whole blocks (a symbolic size the factor need not divide): start + loop,
  loop over the remainder; `parts`: how many of the reduce's parts the split axis took (rangeify's parts lists)."""
  start: UOp
  loop: UOp
  parts: int = 1


def extent_max(r: UOp) -> int:
  """The most iterations loop r runs (its size, or its extent's bound)."""
  return r.arg.size if r.arg.var is None else r.arg.var.vmax


@dataclass
class Ctx:
  next_range: int = 0
  next_alloc: int = 0
  memo: dict = field(default_factory=dict)
  reduce_ranges: dict = field(default_factory=dict)
  opts: Opts = field(default_factory=Opts)
  sizes: Sizes | None = None      # symbolic lowering: each size of the graph (>= 2) -> its VAR
  stash: Stash | None = None      # set by lower(): a value the reduce's loop keeps in the output buffer
  tails: dict = field(default_factory=dict)   # reduce key -> its innermost axis's Tail (split with a tail)
  # the lanes of a small graph's symbolic program and of its specializations (sizes.order_lanes; 0: none): each
  # ordered reduce (`ordered`) adds element i of its innermost axis into lane i % ordered at every size, tails
  # included, so the two compute the same bits
  ordered: int = 0
  # float32 sums may add in float32 blocks (_f32_blocks): set for a kernel whose bits no other program must equal
  # (a small graph's symbolic program and its specializations must give the same bits: their sums do not)
  f32_blocks: bool = False
  blocked: dict = field(default_factory=dict)   # reduce key -> its float32 sum's Blocks (_f32_blocks)

  def size(self, n: int):
    """A size of the graph as index arithmetic uses it: its VAR in a symbolic lowering (0 and 1 stay numbers:
    they decide structure), else the int."""
    if self.sizes is None or n < 2: return n
    if (v := self.sizes.get(n)) is None: raise AssertionError(f"rangeify: size {n} is not one of the graph's sizes")
    return v

  def sizes_of(self, shape: tuple[int, ...]) -> tuple:
    """A shape's sizes for ravel/unravel in this lowering (module-level sizes_of)."""
    return sizes_of(shape, self.size)

  def rng(self, size: int, kind: AxisType = AxisType.LOOP, sym: bool = False) -> UOp:
    """A new loop of `size` iterations; sym: size is one of the graph's sizes (symbolic when lowering so)."""
    self.next_range += 1
    v = self.size(size) if sym else size
    return range_(size, self.next_range - 1, kind, v if isinstance(v, UOp) else None)

  def symbolic(self, n: int) -> bool:
    """Whether an axis of graph size n has a symbolic extent in this lowering (a factor need not divide it)."""
    return self.sizes is not None and n >= 2

  def blocks(self, n: int, f: int, kind: AxisType = AxisType.LOOP) -> UOp:
    """A loop over the n // f whole blocks of f of an axis of graph size n (at a symbolic size: n // f is a VAR)."""
    if not self.symbolic(n): return self.rng(n // f, kind)
    return self._over(self.sizes.derive(self.size(n), f, QUOTIENT), n // f, kind)

  def tail(self, n: int, f: int, kind: AxisType = AxisType.LOOP) -> Tail:
    """The Tail of an axis of graph size n split by f: the n % f indices after its whole blocks."""
    if not self.symbolic(n): return Tail(UOp.const(n // f * f), self.rng(n % f, kind))
    q, r = self.sizes.split(self.size(n), f)
    return Tail(q * f, self._over(r, n % f, kind))

  def cover(self, n: int, f: int, kind: AxisType, lanes: AxisType) -> tuple[UOp, UOp]:
    """(block, lane) loops covering an axis of symbolic graph size n in ceil(n / f) blocks of f, the last one
    partial: the lane loop runs min(f, n - block * f) iterations (index block * f + lane), so every block, the
    last too, is one iteration of the block loop (threads share them all)."""
    v = self.size(n)
    # (sized for the cost model as the whole blocks only: blocks times lanes must not count more than n elements)
    block = self._over(self.sizes.derive(v, f, CEILING), n // f, kind)
    self.next_range += 1
    return block, range_(f, self.next_range - 1, lanes, simplify((v - block * f).minimum(f)))

  def like(self, r: UOp, kind: AxisType) -> UOp:
    """A new loop of r's extent (its size, or its symbolic extent)."""
    self.next_range += 1
    return range_(r.arg.size, self.next_range - 1, kind, r.arg.var)

  def _over(self, v: UOp, n: int, kind: AxisType) -> UOp:
    self.next_range += 1
    return range_(n, self.next_range - 1, kind, v)      # (n: the extent at the sizes it is lowered at, maybe 0)

  def alloc(self, d: DType, n: int = 1) -> UOp:
    self.next_alloc += 1
    return UOp(Ops.ALLOC, (), ParamArg(self.next_alloc - 1, d, (n,)))


def ranges_in(*us: UOp) -> list[UOp]:
  """The RANGEs the expressions mention, in creation order."""
  return sorted(frozenset().union(*(u.ranges for u in us)), key=lambda r: r.arg.idx)


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
    if (st := ctx.stash) is not None and u is st.value and st.done is not None and _same(idx, st.idx):
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
  if op is Ops.REDUCE: return (yield from _reduce(u, idx, ctx))
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


def _axis_parts(ctx: Ctx, size: int, factor: int, kind: AxisType) -> tuple[UOp, int]:
  """An axis of the graph's `size` as (outer RANGE or CONST 0, unroll factor): index = outer * factor + c. At a
  symbolic size the outer loop runs over the whole blocks only (the caller adds the tail: Ctx.tail)."""
  if factor > 1 and ctx.symbolic(size): return ctx.blocks(size, factor, kind), factor
  if factor > 1 and size % factor == 0:
    return (ctx.rng(size // factor, kind) if size > factor else UOp.const(0)), factor
  return (ctx.rng(size, kind, sym=True) if size > 1 else UOp.const(0)), 1


def _combos(parts: list[tuple[UOp, int]]) -> list[tuple[UOp, ...]]:
  """Every index tuple obtained by fixing the unrolled part of each axis to a constant. A part of factor -1 is the
  inner loop of a split axis: it joins the part before it (index = outer * its size + inner)."""
  out: list[tuple[UOp, ...]] = [()]
  for b, f in parts:
    if f == -1:
      out = [c[:-1] + (c[-1] * b.arg.size + b,) for c in out]
      continue
    known0 = b.op is Ops.CONST and b.arg == 0
    out = [c + (UOp.const(k) if known0 else (b * f + k if f > 1 else b),) for c in out for k in range(f)]
  return out


def _fits(f: int, n: int, ctx: Ctx) -> int:
  """f when it splits an axis of n (divides it and is smaller, or n is symbolic: then with a tail), else 1: an
  Opts factor lower() applies."""
  return f if f > 1 and (ctx.symbolic(n) or (n > f and n % f == 0)) else 1


def _split(ctx: Ctx, n: int, rkey: tuple) -> list[tuple[UOp, int]]:
  """The parts of an innermost reduce axis of size n: split into an outer loop and an inner loop of
  ctx.opts.local iterations (the inner part of factor -1, see _combos) when that divides n (or with a tail at a
  symbolic size), else one loop."""
  if (b := _fits(ctx.opts.local, n, ctx)) > 1:
    parts = [(ctx.blocks(n, b, AxisType.REDUCE), 1), (ctx.rng(b, AxisType.REDUCE), -1)]
    if ctx.symbolic(n): ctx.tails[rkey] = replace(ctx.tail(n, b, AxisType.REDUCE), parts=2)
    return parts
  return [_axis_parts(ctx, n, 1, AxisType.REDUCE)]


def _reduce(u: UOp, idx: tuple[UOp, ...], ctx: Ctx) -> UOp:
  rop, n = u.arg
  x = u.src[0]
  rshape = x.shape[len(x.shape) - n:]
  # NumPy starts a float sum from +0.0, and a complex sum or product from its identity, even with no loop: a sum of
  # one -0.0 is 0.0, a product of one inf+0j is 1 * (inf+0j) = inf+nanj
  zero = [UOp.const(identity(rop, u.dtype), u.dtype)] if (rop is Ops.ADD and u.dtype.is_float) or \
    (rop in (Ops.ADD, Ops.MUL) and u.dtype.is_complex) else []
  if n == 0: return _tree(rop, [(yield (x, idx))] + zero)
  if prod(rshape) == 0: return UOp.const(identity(rop, u.dtype), u.dtype)
  # unrolled copies of the same reduce (they differ only by constants in idx) share one loop
  rkey = (u, frozenset(ranges_in(*idx)))
  parts = ctx.reduce_ranges.get(rkey)
  n_in = rshape[-1]
  if (vec := [r for r in rkey[1] if r.arg.kind is AxisType.VECTOR]) and prod(rshape) > 1:
    # (a VECTOR reduce keeps one accumulator per output lane: not the lanes of an ordered reduce)
    assert not (ctx.ordered > 1 and ordered(u)), "rangeify: an ordered reduce in a VECTOR loop (opt.heuristic's exact)"
    if parts is None:
      jam = _fits(ctx.opts.jam, n_in, ctx)
      parts = [_axis_parts(ctx, s, 1, AxisType.REDUCE) for s in rshape[:-1]]
      parts += [_axis_parts(ctx, n_in, jam, AxisType.REDUCE)] if jam > 1 else _split(ctx, n_in, rkey)
      if jam > 1 and ctx.symbolic(n_in): ctx.tails[rkey] = ctx.tail(n_in, jam, AxisType.REDUCE)
      parts += [(ctx.like(vec[0], AxisType.VECTOR), 0), (ctx.like(vec[0], AxisType.VECTOR), 0)]
      ctx.reduce_ranges[rkey] = parts
    return (yield from _reduce_vector(u, idx, vec[0], parts, ctx, rkey))
  if parts is None:
    lanes = ctx.ordered if ctx.ordered > 1 and n_in > 1 and ordered(u) else _fits(ctx.opts.unroll, n_in, ctx)
    parts = [_axis_parts(ctx, s, 1, AxisType.REDUCE) for s in rshape[:-1]]
    parts += _lane_parts(ctx, u, n_in, lanes, rkey) if lanes > 1 else _split(ctx, n_in, rkey)
    ctx.reduce_ranges[rkey] = parts
  if parts[-1][1] == 0: return (yield from _reduce_lanes(u, idx, parts, ctx, rkey))
  real = [r for r, _ in parts if r.op is Ops.RANGE]
  vals, combos = [], _combos(parts)
  for c in combos: vals.append((yield (x, idx + c)))
  if not real: return _tree(rop, vals + zero)
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
  would only hold the identity, which _tree's pairs pass through. The lanes are a VECTOR loop, but an ordered
  reduce's over a source with reductions of its own: a plain loop, so that those are lowered as in a kernel of
  their own (a reduce in a VECTOR loop keeps one accumulator per lane, _reduce_vector: another order)."""
  if not ctx.symbolic(n) and n < lanes: lanes = n
  kind = AxisType.LOOP if ctx.ordered > 1 and ordered(u) and any(x.op is Ops.REDUCE for x in u.src[0].toposort()) \
    else AxisType.VECTOR
  parts = [(ctx.blocks(n, lanes, AxisType.REDUCE) if n >= 2 * lanes or ctx.symbolic(n) else UOp.const(0), lanes),
           (ctx.rng(lanes, kind), 0)]
  if ctx.symbolic(n) or n % lanes: ctx.tails[rkey] = replace(ctx.tail(n, lanes, kind), parts=2)
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
  return _tree(rop, vals)


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
  """The float32 value that x, a float64 CAST of it (through PERMUTEs: a column sum's), converts, or None."""
  if x.op is Ops.PERMUTE: return None if (s := _f32_source(x.src[0])) is None else s.permute(x.arg)
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
  return _tree(Ops.ADD, [done.index(k).load() for k in range(lanes)])


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
  if st is None or u is not st.reduce or not _same(idx, st.idx[:-1]): return None
  e = yield (st.value, idx + ridx)
  return st.out.index(ravel(idx + ridx, ctx.sizes_of(st.value.shape))).store(e)


def _same(a: tuple[UOp, ...], b: tuple[UOp, ...]) -> bool:
  return len(a) == len(b) and all(x is y for x, y in zip(a, b))


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
  for c in _combos(parts[:-2]): vals.append((yield (u.src[0], at + c)))
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


def _tree(rop: Ops, vals: list[UOp]) -> UOp:
  """vals combined with rop as a balanced tree (a fixed order: results do not depend on scheduling)."""
  while len(vals) > 1:
    vals = [combine(rop, vals[i], vals[i + 1]) if i + 1 < len(vals) else vals[i] for i in range(0, len(vals), 2)]
  return vals[0]


def combine(op: Ops, a: UOp, b: UOp) -> UOp:
  if a.dtype.is_bool and op in (Ops.ADD, Ops.MUL): return UOp(Ops.OR if op is Ops.ADD else Ops.AND, (a, b))
  return UOp(op, (a, b))


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
    combos = _combos(plist)
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
    parts[o.thread] = _axis_parts(ctx, shape[o.thread], o.upcast.get(o.thread, 1), AxisType.THREAD)
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
    elif k in vec and ctx.symbolic(shape[k]):
      block, lane = ctx.cover(shape[k], vec[k], kind(k), AxisType.VECTOR)
      parts[k] = (block * vec[k] + lane, 1)
    elif k in vec: parts[k] = (ctx.rng(shape[k] // vec[k], kind(k)) if shape[k] > vec[k] else UOp.const(0), 1)
    else: parts[k] = _axis_parts(ctx, shape[k], f, kind(k))
  # vector lanes: the innermost output loops, run as `#pragma omp simd` (the reduce loops nest inside them)
  for k, v in vec.items():
    if not ctx.symbolic(shape[k]): parts[k] = (parts[k][0] * v + ctx.rng(v, AxisType.VECTOR), 1)
  return [parts[k] for k in range(len(shape))]
