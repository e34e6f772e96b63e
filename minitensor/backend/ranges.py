"""ranges: the loops and the index arithmetic of a lowering (rangeify's context).

`Ctx` makes the RANGEs (loops) and ALLOCs (accumulators) of one kernel's lowering and maps the graph's sizes to
their VARs in a symbolic lowering; `Opts` says how the kernel maps onto the machine (opt.py's actions build it).
The index maps of the movement ops (`apply_movement_op`, `ravel`, `unravel`) push an index through a RESHAPE,
EXPAND, PERMUTE, SHRINK or FLIP; `axis_parts` and `unrolled` split an axis into an outer loop and unrolled copies,
for the output loops (rangeify.lower) and the reduce loops (reduce_rule) alike.
"""
from __future__ import annotations
from collections import Counter
from typing import NamedTuple
from minitensor.backend.dtype import DType
from minitensor.backend.sizes import CEILING, QUOTIENT, Sizes
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import MOVEMENT, AxisType, Ops, ParamArg, UOp, range_


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


INDEX_MAPS = MOVEMENT - {Ops.PAD}      # the movement ops that only map indices (a PAD also guards its reads)


def apply_movement_op(u: UOp, idx: tuple[UOp, ...], size=lambda n: n) -> tuple[UOp, ...]:
  """The index into u.src[0] that movement op u (one of INDEX_MAPS) reads at index idx: the one definition of the
  movement index maps. size maps a size of the graph to what index arithmetic uses (rangeify's Ctx.size: its VAR in
  a symbolic lowering); offsets and reshaped indices are simplified at once, so a chain of movements never builds an
  index expression as deep as the chain (((i*N + j)//N) % N mentions j but *is* i, and reduce_rule places loops by what
  an index mentions)."""
  x, op = u.src[0], u.op
  if op is Ops.RESHAPE:
    out: list[UOp] = []
    for (i0, i1), (j0, j1) in reshape_groups(x.shape, u.shape, size):
      if i1 - i0 == 1 and j1 - j0 == 1: out.append(idx[j0])           # (an axis the reshape keeps)
      else:
        flat = ravel(idx[j0:j1], sizes_of(u.shape[j0:j1], size))
        out.extend(simplify(i) for i in unravel(flat, sizes_of(x.shape[i0:i1], size)))
    return tuple(out)
  if op is Ops.EXPAND: return tuple(UOp.const(0) if s == 1 and n != 1 else i for i, s, n in zip(idx, x.shape, u.shape))
  if op is Ops.PERMUTE:
    inv: list[UOp] = list(idx)
    for k, p in enumerate(u.arg): inv[p] = idx[k]
    return tuple(inv)
  if op is Ops.SHRINK: return tuple(simplify(i + size(b)) if b else i for i, (b, _) in zip(idx, u.arg))
  if op is Ops.FLIP:
    return tuple(simplify((size(n) - 1) - i) if k in u.arg else i for k, (i, n) in enumerate(zip(idx, u.shape)))
  raise ValueError(f"apply_movement_op: {op} is not an index map")


def reshape_groups(src: tuple[int, ...], dst: tuple[int, ...], size=lambda n: n) -> list[tuple[tuple, tuple]]:
  """The spans ((i0, i1), (j0, j1)) that cut a reshape of src into dst into independent pieces: src[i0:i1] and
  dst[j0:j1] hold the same elements in the same order, so a dst index maps to a src index piece by piece (an axis
  kept as it is needs no arithmetic at all). The shortest spans of equal element counts; in a symbolic lowering
  (`size` maps sizes to VARs) a cut also needs the same sizes other than 1 on both sides, so that it holds at every
  size the program serves. One span, the whole shapes, when there is no cut (or no element)."""
  if 0 in src or 0 in dst: return [((0, len(src)), (0, len(dst)))]
  tokens = [_token(n, size) for n in src + dst]
  symbolic = any(type(t) is not int for t in tokens)
  out, i, j = [], 0, 0
  while i < len(src) or j < len(dst):
    i0, j0, a, b = i, j, 1, 1
    while i < len(src) or j < len(dst):
      if a == b and i < len(src) and src[i] == 1: i += 1            # (a 1 alone: its index is 0)
      elif a == b and j < len(dst) and dst[j] == 1: j += 1
      elif (a <= b and i < len(src)) or j == len(dst): a, i = a * src[i], i + 1
      else: b, j = b * dst[j], j + 1
      if a == b and (not symbolic or _sizes(tokens[i0:i]) == _sizes(tokens[len(src) + j0:len(src) + j])): break
    out.append(((i0, i), (j0, j)))
  return out


def _sizes(tokens: list) -> Counter:
  return Counter(t for t in tokens if t != 1)


def _token(n: int, size):
  try: return size(n)
  except AssertionError: return object()     # (a staged buffer's flat size is no size of the graph: equal to none)


def sizes_of(shape: tuple[int, ...], size=lambda n: n) -> tuple:
  """A shape's sizes for ravel/unravel (each as `size` maps it), which never use the first (a staged buffer's flat
  size is not one of the graph's sizes), so it stays the int."""
  return shape[:1] + tuple(size(n) for n in shape[1:])


class Opts:
  """How to map a kernel onto the machine: what a list of opt.py's actions builds (opt.apply_opt checks each),
  applied by lower() and reduce_rule."""
  __slots__ = ("upcast", "thread", "unroll", "tile", "block", "vector", "local", "jam", "actions")

  def __init__(self, upcast: dict[int, int] | None = None, thread: int | None = None, unroll: int = 1,
               tile: dict[int, int] | None = None, block: dict[int, int] | None = None,
               vector: dict[int, int] | None = None, local: int = 1, jam: int = 1, actions: tuple = ()):
    self.upcast = {} if upcast is None else upcast   # output axis -> unroll factor (register tile)
    self.thread = thread                             # output axis run in parallel (OpenMP)
    self.unroll = unroll                             # vector lanes of the innermost reduce axis
    self.tile = {} if tile is None else tile         # output axis -> cache block size
    self.block = {} if block is None else block      # tiled output axis -> an outer block of its tiles
    self.vector = {} if vector is None else vector   # output axis -> lanes of an innermost `omp simd` loop
    self.local = local                               # innermost reduce axis as outer loop x inner loop of this
    self.jam = jam                                   # reduce steps combined per pass of a VECTOR loop
    self.actions = actions                           # the opt.Opt actions that built these Opts

  def _values(self) -> tuple:
    return tuple(getattr(self, k) for k in Opts.__slots__)

  def replace(self, **changes) -> Opts:
    """A copy with `changes` (the other fields' dicts are shared, as dataclasses.replace shares them)."""
    return Opts(**{**dict(zip(Opts.__slots__, self._values())), **changes})

  def __eq__(self, other) -> bool:
    return self._values() == other._values() if type(other) is Opts else NotImplemented

  __hash__ = None      # (mutable: compared by value)

  def __repr__(self) -> str:
    return f"Opts({', '.join(f'{k}={v!r}' for k, v in zip(Opts.__slots__, self._values()))})"


class Stash:
  """An expensive elementwise `value` that the loop of `reduce` stores into the output buffer `out` as it reads it,
  and that the store pass at output index `idx` loads back once `done` (the reduce's loops, ended) is set."""
  __slots__ = ("reduce", "value", "out", "idx", "done")

  def __init__(self, reduce: UOp, value: UOp, out: UOp, idx: tuple, done: UOp | None = None):
    self.reduce, self.value, self.out, self.idx, self.done = reduce, value, out, idx, done


class Tail(NamedTuple):
  """The indices of a split axis after its whole blocks (a symbolic size the factor need not divide): start + loop,
  loop over the remainder; `parts`: how many of the reduce's parts the split axis took (rangeify's parts lists)."""
  start: UOp
  loop: UOp
  parts: int = 1


def extent_max(r: UOp) -> int:
  """The most iterations loop r runs (its size, or its extent's bound)."""
  return r.arg.size if r.arg.var is None else r.arg.var.vmax


class Ctx:
  __slots__ = ("next_range", "next_alloc", "memo", "reduce_ranges", "opts", "sizes", "stash", "tails", "ordered",
               "f32_blocks", "blocked", "shared", "share")

  def __init__(self, next_range: int = 0, next_alloc: int = 0, memo: dict | None = None,
               reduce_ranges: dict | None = None, opts: Opts | None = None, sizes: Sizes | None = None,
               stash: Stash | None = None, tails: dict | None = None, ordered: int = 0, f32_blocks: bool = False,
               blocked: dict | None = None, shared: dict | None = None, share: bool = True):
    self.next_range = next_range
    self.next_alloc = next_alloc
    self.memo = {} if memo is None else memo
    self.reduce_ranges = {} if reduce_ranges is None else reduce_ranges
    self.opts = Opts() if opts is None else opts
    self.sizes = sizes          # symbolic lowering: each size of the graph (>= 2) -> its VAR
    self.stash = stash          # set by lower(): a value the reduce's loop keeps in the output buffer
    self.tails = {} if tails is None else tails   # reduce key -> its innermost axis's Tail (split with a tail)
    # the lanes of a small graph's symbolic program and of its specializations (sizes.order_lanes; 0: none): each
    # ordered reduce (`ordered`) adds element i of its innermost axis into lane i % ordered at every size, tails
    # included, so the two compute the same bits
    self.ordered = ordered
    # float32 sums may add in float32 blocks (reduce_rule's Blocks): set for a kernel whose bits no other program
    # must equal (a small graph's symbolic program and its specializations must give the same bits: their sums do not)
    self.f32_blocks = f32_blocks
    self.blocked = {} if blocked is None else blocked   # reduce key -> its float32 sum's Blocks (reduce_rule)
    # (reduced shape, output index ranges) -> [(reduces, the nodes each reads, their parts)]: loops that independent
    # reduces share (reduce_rule._shared), unless share is off
    self.shared = {} if shared is None else shared
    self.share = share

  def shares(self) -> bool:
    """Whether a loop of this lowering serves more than one reduce (reduce_rule._shared)."""
    return any(len(reduces) > 1 for groups in self.shared.values() for reduces, _, _ in groups)

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

  def stretches(self, n: int, f: int, threads: int, lanes: AxisType) -> UOp:
    """The index of an axis of symbolic graph size n shared by `threads` threads in equal stretches: a THREAD loop
    t over them, each covering its q = ceil(n / threads) indices in ceil(q / f) blocks of f, the last one partial
    (lanes: min(f, its stretch's rest)); index t * q + block * f + lane. cover's ceil(n / f) blocks would give one
    thread twice another's work wherever they do not divide among the threads (a (4100, 1030) column sum in
    blocks of 512: two blocks and six columns, 0.8 against 0.45 ms, Sapphire Rapids)."""
    v = self.size(n)
    q = self.sizes.derive(v, threads, CEILING)
    t = self.rng(threads, AxisType.THREAD)
    span = simplify((v - t * q).minimum(q))                # (the last thread's stretch may be shorter)
    # (ceil(q / f) is ceil(n / (threads * f)): a loop's extent has no division. Sized for the cost model as whole
    # blocks only: threads times blocks times lanes at most n elements)
    block = self._over(self.sizes.derive(v, threads * f, CEILING), n // (threads * f), AxisType.LOOP)
    lane = self._over(simplify((span - block * f).minimum(f)), f, lanes)
    return t * q + block * f + lane

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


def axis_parts(ctx: Ctx, size: int, factor: int, kind: AxisType) -> tuple[UOp, int]:
  """An axis of the graph's `size` as (outer RANGE or CONST 0, unroll factor): index = outer * factor + c. At a
  symbolic size the outer loop runs over the whole blocks only (the caller adds the tail: Ctx.tail)."""
  if factor > 1 and ctx.symbolic(size): return ctx.blocks(size, factor, kind), factor
  if factor > 1 and size % factor == 0:
    return (ctx.rng(size // factor, kind) if size > factor else UOp.const(0)), factor
  return (ctx.rng(size, kind, sym=True) if size > 1 else UOp.const(0)), 1


def unrolled(parts: list[tuple[UOp, int]]) -> list[tuple[UOp, ...]]:
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


def fits(f: int, n: int, ctx: Ctx) -> int:
  """f when it splits an axis of n (divides it and is smaller, or n is symbolic: then with a tail), else 1: an
  Opts factor lower() applies."""
  return f if f > 1 and (ctx.symbolic(n) or (n > f and n % f == 0)) else 1


def same(a: tuple[UOp, ...], b: tuple[UOp, ...]) -> bool:
  return len(a) == len(b) and all(x is y for x, y in zip(a, b))
