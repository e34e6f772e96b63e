"""attention: softmax(Q K^T) V found in a shaped graph and run as one fused kernel with an online softmax.

What is matched (`match`; anything else keeps the ordinary lowering). In kernel index terms (b: the batch axes,
i < L query rows, j < S keys, c < D the contracted axis, e < DV value columns), a REDUCE(ADD) node

    out[b, i, e] = sum_j  P[b, i, j] * V[b, j, e]     (either operand order of the MUL; or out[b, e, i]: V^T P^T)
    P = E / sum_j E            (the sum over the same j, optionally accumulated in a wider float: CASTs)
    E = exp(T - max_j T)       (x - m written as x + m * -1, as the frontend records a subtraction)
    T = f(s),  s[b, i, j] = sum_c Q[b, i, c] * K[b, j, c]     (a REDUCE(ADD) of a MUL, either order)

where f is a chain of elementwise steps, each ADD, MUL or FDIV with the chain as either operand, or WHERE with
the chain as either branch (a scale, an additive mask, a masked fill such as causal -inf), whose other operands
are constants or tensors read at (b, i, j). Every operand read (Q, K, V and the step operands) goes through
movement ops only, its index must be affine in the kernel's loop counters and must not depend on the axes it
is broadcast along (Q not on j or e, K not on i or e, V not on i, the step operands not on c or e). A softmax
over another axis, a sum where the max is expected, a max over other values than the sum's exponentials, or a
reduction whose length is not S do not match. float32 and float64. Only schedules lowered for their shapes (the
kernelizer's `optimize`: graphs with a value over realize.SYMBOLIC_MAX elements) are fused, and only where the
packed blocks of one thread stay under STACK_LIMIT bytes.

`stage_operands` (run by the kernelizer before scheduling) materializes the operands that are computed values,
so the kernel reads buffers, and marks each match with a STAGE so it is a kernel of its own; `fused` lowers a
matched kernel body to a SINK over its buffers whose arg (an `Attention`) renders the C and states its work.

The kernel, per block of BR query rows (one OpenMP task each, handed out dynamically: the rows' results do not
depend on the thread, and a core slowed by other work takes fewer blocks): Q rows packed, then for every block of
BC keys: K^T and V rows packed (zero-padded past S, DV rounded up to the register tile), s = Q K^T by a TR x TW
register tile, f applied, the running row maximum m_new, p = exp(t - m_new), the accumulators rescaled by
exp(m_old - m_new), l = l * that + sum p (l in the sum's dtype), acc += p V by the same tile; at the end
out = acc / l. No L x S value is ever stored. A NaN logit is passed over by the maximum, but its p is NaN, and so
is its row, as NumPy's. A row with every logit -inf subtracts 0 instead of -inf (so p = 0, not NaN) and ends as
0 / 0 = NaN, as NumPy's composition gives; logits are never exponentiated above the running maximum, so large ones
do not overflow. The summation order differs from the composition's (blocks), within float rounding. The two
products are register tiles of GCC vector types (prelude.vector_type: TR rows of two vectors, one FMA per
accumulator and step, the tile in registers; written as arrays of scalars, gcc kept three of its accumulators on
the stack, and L=512 took 2.4-3.7 ms on one core instead of 1.1-1.7 ms). tcc has no vector types, so tiers.py
compiles the kernel with the C compiler in both tiers; sums are in fixed lanes, so both tiers give the same bits
except where libm and libmvec's exp differ.
"""
from __future__ import annotations
from typing import NamedTuple
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.machine import machine
from minitensor.backend.prelude import vector_type
from minitensor.backend.ranges import INDEX_MAPS, apply_movement_op, ravel
from minitensor.backend.render_c import literal
from minitensor.backend.symbolic import affine, simplify
from minitensor.backend.uop import Ops, UOp, prod, range_

_STEP_OPS = (Ops.ADD, Ops.MUL, Ops.FDIV, Ops.WHERE)


class Read(NamedTuple):
  """A tensor read by the kernel: `base` (a BUFFER in a kernel, any node before staging; in an `Attention`, the
  position of the BUFFER in its SINK's sources) at flat position offset + sum(stride * counter) over the kernel's
  counters (b..., i, j, c, e); or a constant (base CONST)."""
  base: UOp | int
  offset: int = 0
  strides: tuple[int, ...] = ()


class Match(NamedTuple):
  batch: tuple[int, ...]
  L: int; S: int; D: int; DV: int
  dtype: DType
  sum_dtype: DType
  q: Read; k: Read; v: Read
  steps: tuple[tuple[Ops, int, tuple[Read, ...]], ...]    # innermost first: (op, the chain's position, other operands)
  transposed: bool = False                                # the output is out[b, e, i] (V^T P^T), not out[b, i, e]

  def reads(self) -> list[Read]:
    return [self.q, self.k, self.v] + [r for _, _, rs in self.steps for r in rs]


def _view(u: UOp, idx: tuple[UOp, ...]) -> tuple[UOp, tuple[UOp, ...]]:
  """(base, index): u at idx read through its movement ops, down to the first node that holds or computes data."""
  while u.op in INDEX_MAPS: u, idx = u.src[0], apply_movement_op(u, idx)
  return u, idx


class _Ctx:
  def __init__(self, batch: tuple[int, ...], L: int, S: int, D: int, DV: int):
    self.b = tuple(range_(n, k) for k, n in enumerate(batch))
    n = len(batch)
    self.i, self.j, self.c, self.e = (range_(s, n + k) for k, s in enumerate((L, S, D, DV)))
    self.counters = self.b + (self.i, self.j, self.c, self.e)

  def read(self, u: UOp, idx: tuple[UOp, ...], free: tuple[UOp, ...]) -> Read | None:
    """u at idx as a Read (through movement ops), or None: not affine, or it depends on a counter in `free`."""
    base, idx = _view(u, idx)
    if base.op is Ops.CONST: return Read(base)
    flat = idx[0] if base.op is Ops.BUFFER else ravel(idx, base.shape) if idx else UOp.const(0)
    a = affine(simplify(flat), self.counters)
    if a is None or any(a[1][self.counters.index(r)] for r in free): return None
    return Read(base, *a)


def _neg(u: UOp) -> UOp | None:
  """x when u is x * -1 (a recorded subtraction's right operand), else None."""
  if u.op is not Ops.MUL: return None
  for a, b in (u.src, u.src[::-1]):
    c, _ = _view(b, tuple(UOp.const(0) for _ in b.shape))
    if c.op is Ops.CONST and c.arg == -1: return a
  return None


def _uncast(u: UOp, idx, d: DType) -> tuple[UOp, tuple, DType]:
  """Through movement ops and float-to-float CASTs: (node, index, the widest float dtype crossed)."""
  u, idx = _view(u, idx)
  while u.op is Ops.CAST and u.dtype.is_float and u.src[0].dtype.is_float:
    u, idx = _view(u.src[0], idx)
    if u.dtype.itemsize > d.itemsize: d = u.dtype
  return u, idx, d


def _reduced(u: UOp, idx, rop: Ops, ctx: _Ctx) -> tuple[UOp, tuple] | None:
  """When u read at idx is one value per row (idx free of j, c and e) of a one-axis REDUCE(rop) of S elements: its
  source's (node, index) with the reduced counter named j; else None."""
  if u.op is not Ops.REDUCE or u.arg != (rop, 1) or u.src[0].shape[-1] != ctx.j.arg.size: return None
  if frozenset().union(*(x.ranges for x in idx)) & {ctx.j, ctx.c, ctx.e}: return None
  return _view(u.src[0], idx + (ctx.j,))


def match(r: UOp) -> Match | None:
  """The attention r computes (module docstring), or None."""
  if r.op is not Ops.REDUCE or r.arg != (Ops.ADD, 1) or r.dtype not in (dtypes.float32, dtypes.float64): return None
  x = r.src[0]
  if x.op is not Ops.MUL or len(x.shape) < 3 or 0 in x.shape: return None
  batch, (A, B, S) = x.shape[:-3], x.shape[-3:]
  for transposed in (False, True):
    ctx = _Ctx(batch, B if transposed else A, S, 1, A if transposed else B)
    idx = ctx.b + ((ctx.e, ctx.i) if transposed else (ctx.i, ctx.e)) + (ctx.j,)
    for p, v in (x.src, x.src[::-1]):
      if (m := _attention(ctx, p, v, idx, r.dtype)) is not None: return m._replace(transposed=transposed)
  return None


def _attention(ctx: _Ctx, p: UOp, v: UOp, idx, dt: DType) -> Match | None:
  """The match when p is the softmax and v the values, else None."""
  P, pidx = _view(p, idx)
  if P.op is not Ops.FDIV: return None
  E, eidx = _view(P.src[0], pidx)
  den, didx, sum_dt = _uncast(P.src[1], pidx, dt)
  if E.op is not Ops.EXP or (s := _reduced(den, didx, Ops.ADD, ctx)) is None: return None
  if _uncast(*s, dt)[:2] != (E, eidx) or ctx.e in frozenset().union(*(u.ranges for u in eidx)): return None
  z, zidx = _view(E.src[0], eidx)
  if z.op is not Ops.ADD: return None
  for t, nm in (z.src, z.src[::-1]):
    if (mx := _neg(nm)) is None: continue
    T, tidx = _view(t, zidx)
    M, midx = _view(mx, zidx)
    if (mr := _reduced(M, midx, Ops.MAX, ctx)) is None or mr != (T, tidx): continue
    return _logits(ctx, T, tidx, v, idx, dt, sum_dt)
  return None


def _logits(ctx: _Ctx, T: UOp, tidx, v: UOp, idx, dt: DType, sum_dt: DType) -> Match | None:
  """The step chain from the logits T down to the contraction s, then Q, K and V."""
  steps = []
  while T.op in _STEP_OPS:
    for k in (1, 2) if T.op is Ops.WHERE else (0, 1):
      others = [ctx.read(o, tidx, (ctx.c, ctx.e)) for n, o in enumerate(T.src) if n != k]
      nxt, nidx = _view(T.src[k], tidx)
      if None not in others and (nxt.op is Ops.REDUCE or nxt.op in _STEP_OPS):
        steps.append((T.op, k, tuple(others)))
        T, tidx = nxt, nidx
        break
    else: return None
  if T.op is not Ops.REDUCE or T.arg != (Ops.ADD, 1) or T.dtype is not dt: return None
  c = _Ctx(tuple(r.arg.size for r in ctx.b), ctx.i.arg.size, ctx.j.arg.size, T.src[0].shape[-1], ctx.e.arg.size)
  qk, qkidx = _view(T.src[0], tidx + (c.c,))
  if qk.op is not Ops.MUL: return None
  vv = c.read(v, idx, (c.i, c.c))
  for qa, kb in (qk.src, qk.src[::-1]):
    q, k = c.read(qa, qkidx, (c.j, c.e)), c.read(kb, qkidx, (c.i, c.e))
    if any(x is None or x.base.op is Ops.CONST or x.base.dtype is not dt for x in (q, k, vv)): continue
    return Match(tuple(r.arg.size for r in c.b), c.i.arg.size, c.j.arg.size, c.c.arg.size, c.e.arg.size, dt, sum_dt,
                 q, k, vv, tuple(reversed(steps)))
  return None


def stage_operands(outputs: list[UOp]) -> list[UOp]:
  """The outputs with every matched attention marked by a STAGE (a kernel of its own) and its operands that are
  computed values staged (read from buffers by the fused kernel)."""
  new: dict[UOp, UOp] = {}
  for u in UOp(Ops.SINK, tuple(outputs)).toposort():
    src = tuple(new[x] for x in u.src)
    v = u if all(a is b for a, b in zip(src, u.src)) else u.replace(src=src)
    if v.op is Ops.REDUCE and (m := match(v)) is not None:
      v = v.substitute({r.base: r.base.stage() for r in m.reads()
                        if r.base.op not in (Ops.BUFFER, Ops.CONST, Ops.STAGE)})
      v = v.stage()
    new[u] = v
  return [new[o] for o in outputs]


def fused(body: UOp, out: UOp) -> UOp | None:
  """The fused kernel of a kernel body that is a matched attention over buffers: a SINK over the output BUFFER
  `out` and the buffers it reads, its arg the `Attention` that renders it; else None."""
  if (m := match(body)) is None or any(r.base.op not in (Ops.BUFFER, Ops.CONST) for r in m.reads()): return None
  br, bc, tr, tw = blocks(m)
  dvp = _up(m.DV, tw)
  if (br * (m.D + bc + dvp) + bc * (m.D + dvp)) * m.dtype.itemsize > STACK_LIMIT: return None
  bufs = [out] + list(dict.fromkeys(r.base for r in m.reads() if r.base.op is Ops.BUFFER))
  pos = {b: k for k, b in enumerate(bufs)}
  ref = lambda r: r if r.base.op is Ops.CONST else Read(pos[r.base], r.offset, r.strides)   # noqa: E731
  m = m._replace(q=ref(m.q), k=ref(m.k), v=ref(m.v), steps=tuple((op, k, tuple(map(ref, rs))) for op, k, rs in m.steps))
  return UOp(Ops.SINK, tuple(bufs), Attention(m, br, bc, tr, tw))


def blocks(m: Match) -> tuple[int, int, int, int]:
  """(BR query rows, BC keys, TR x TW register tile) from the machine model. The tile: TW two vectors wide, TR
  rows, so its TR * 2 accumulators, two loaded vectors and a broadcast fit in the vector registers. A key block's
  packed K^T and V fill L1 at most; a row block's packed Q, scores and accumulators half of L2, at most 16 tiles
  high, split so that the blocks are shared evenly by the cores. Measured (AMD EPYC Zen 3, L=2048, d=64, one
  core): 25-30 ms at BR 96 and BC 48-64, 30-34 ms at BC 32 or BR 48 (noisy, shared machine)."""
  mc = machine()
  sz, tw = m.dtype.itemsize, 2 * mc.lanes(m.dtype.itemsize)
  tr = max(1, min(6, (mc.registers - 3) // 2))
  dvp = _up(m.DV, tw)
  bc = max(tw, min(128, _up(m.S, tw), mc.l1 // ((m.D + dvp) * sz) // tw * tw))
  rows = max(tr, min(16 * tr, (mc.l2 // 2) // ((m.D + dvp + bc) * sz) // tr * tr))
  per = max(1, -(-mc.cores // prod(m.batch)))       # row blocks per batch element that give every core work
  parts = _up(-(-m.L // rows), per)
  br = min(rows, _up(-(-m.L // parts), tr))
  return br, bc, tr, tw


def _up(n: int, k: int) -> int: return -(-n // k) * k


STACK_LIMIT = 1 << 19      # bytes of packed blocks per thread (on its stack); larger problems are not fused
STAGED_K_BLOCKS = 8        # row blocks from which K^T is made once, not by each row block (render)


class Attention(NamedTuple):
  """The fused kernel of a Match whose Reads name positions in the kernel SINK's sources (0: the output) or
  constants; `work` is the statements it executes (realize's tier choice); `render` writes its C."""
  m: Match
  br: int
  bc: int
  tr: int
  tw: int

  @property
  def work(self) -> int:
    m = self.m
    return prod(m.batch) * m.L * m.S * (m.D + m.DV)

def render(a: Attention, sink: UOp, name: str, checked: bool = False) -> str:
  """The C function `name` of fused kernel `a` over the buffers of its SINK (lowerings' attention entry)."""
  m, BR, BC, TR, TW = a.m, a.br, a.bc, a.tr, a.tw
  T, A = m.dtype.ctype, m.sum_dtype.ctype
  sfx = "f" if m.dtype is dtypes.float32 else ""
  tile_bytes = TW * m.dtype.itemsize           # a tile row: whole vectors of the machine's width or less
  vbytes = min(machine().vector_bytes, tile_bytes & -tile_bytes)
  lanes = vbytes // m.dtype.itemsize
  V, NV = f"{name}_v", TW // lanes
  DVP, nb, NRB = -(-m.DV // TW) * TW, len(m.batch), -(-m.L // BR)
  bufs = sink.src
  reads: dict[int, str] = {}          # a buffer Read's batch offset variable, per Read
  lines: list[str] = []

  def load(r: Read, i: str | None = None, j: str | None = None, c: str | None = None, e: str | None = None) -> str:
    if isinstance(r.base, UOp): return literal(r.base.arg, r.base.dtype, "int64_t")
    b = bufs[r.base]
    terms = [reads[id(r)]] + [f"({x})*{s}" if s != 1 else f"({x})" for x, s in zip((i, j, c, e), r.strides[nb:])
                              if s and x is not None]
    ix = " + ".join(terms)
    if not checked: return f"data{b.arg.slot}[{ix}]"
    return (f"((uint64_t)({ix}) < {b.arg.shape[0]}ULL ? data{b.arg.slot}[{ix}] : "
            f"({b.dtype.ctype})mt_oob(mt_err, {b.arg.slot}, (int64_t)({ix})))")

  def logit(s: str) -> str:
    for op, k, rs in m.steps:
      args = [load(r, "i", "j") for r in rs]
      args.insert(k, s)
      s = f"({args[0]} ? {args[1]} : {args[2]})" if op is Ops.WHERE else \
          f"({args[0]} {dict([(Ops.ADD, '+'), (Ops.MUL, '*'), (Ops.FDIV, '/')])[op]} {args[1]})"
    return s

  emit = lines.append
  bufreads = [r for r in [m.q, m.k, m.v] + [r for _, _, rs in m.steps for r in rs] if not isinstance(r.base, UOp)]

  def offsets(used: list[Read]) -> None:        # the offset in batch bb of each buffer read of `used`
    used = [u for u in used if any(u is r for r in bufreads)]
    for k, n in enumerate(m.batch):
      if any(r.strides[k] for r in used): emit(f"    int64_t b{k} = (bb / {prod(m.batch[k + 1:])}) % {n};")
    for n, r in enumerate(bufreads):
      if not any(r is u for u in used): continue          # (by identity: two Reads may be equal)
      reads[id(r)] = f"o{n}"
      terms = [str(r.offset)] + [f"b{k} * {s}" for k, s in enumerate(r.strides[:nb]) if s]
      emit(f"    int64_t o{n} = {' + '.join(terms)};")
  # K^T as tiles kt[c][x] of BC keys. With STAGED_K_BLOCKS row blocks or more they are made once per batch and key
  # block, before the row blocks, which all read every one (made by each row block, their strided stores took 13 %
  # of W8 at L=2048: 8.0 -> 7.2-7.4 ms); with fewer, each row block makes its own on its stack (staged at L=512, 6
  # row blocks, the buffer's allocation and the extra loop cost more than they saved: 0.60 -> 0.64 ms)
  NJB, staged = -(-m.S // BC), NRB >= STAGED_K_BLOCKS
  kfill = lambda: f"for (int64_t c = 0; c < {m.D}; c++) kt[c][x] = x < cols ? {load(m.k, j='j0 + x', c='c')} : 0;"
  if staged:
    emit(f"  char* kraw = malloc(sizeof({T}) * {prod(m.batch) * NJB * m.D * BC} + 64);")
    emit("  if (!kraw) abort();")
    emit(f"  {T}* kts = ({T}*)(((uintptr_t)kraw + 63) & ~(uintptr_t)63);     /* (the tiles' vector loads) */")
    emit("  #pragma omp parallel for schedule(static) if(!mt_serial)")
    emit(f"  for (int64_t t = 0; t < {prod(m.batch) * NJB}; t++) {{")
    emit(f"    int64_t bb = t / {NJB}, j0 = (t % {NJB}) * {BC}, cols = {m.S} - j0 < {BC} ? {m.S} - j0 : {BC};")
    offsets([m.k])
    emit(f"    {T} (*kt)[{BC}] = ({T} (*)[{BC}])(kts + t * {m.D * BC});")
    emit(f"    for (int64_t x = 0; x < {BC}; x++) {kfill()}")
    emit("  }")
  emit("  #pragma omp parallel for schedule(dynamic, 1) if(!mt_serial)")
  emit(f"  for (int64_t t = 0; t < {prod(m.batch) * NRB}; t++) {{")
  emit(f"    int64_t bb = t / {NRB}, i0 = (t % {NRB}) * {BR}, rows = {m.L} - i0 < {BR} ? {m.L} - i0 : {BR};")
  offsets([m.q, m.v] + [r for _, _, rs in m.steps for r in rs] + ([] if staged else [m.k]))
  step_reads = [r for _, _, rs in m.steps for r in rs if not isinstance(r.base, UOp)]
  uses = [any(r.strides[nb + k] for r in step_reads) for k in (0, 1)]     # whether the steps read at i, at j
  for decl in [f"qb[{BR}][{m.D}]"] + ([] if staged else [f"kt[{m.D}][{BC}]"]) + \
      [f"vb[{BC}][{DVP}]", f"sb[{BR}][{BC}]", f"acc[{BR}][{DVP}]"]:
    emit(f"    {T} {decl} __attribute__((aligned(64)));")      # (the tiles load whole vectors from rows of these)
  emit(f"    {T} mx[{BR}], cr[{BR}];")
  emit(f"    {A} l[{BR}];")
  emit(f"    for (int64_t r = 0; r < {BR}; r++) {{")
  emit(f"      for (int64_t c = 0; c < {m.D}; c++) qb[r][c] = r < rows ? {load(m.q, 'i0 + r', c='c')} : 0;")
  emit(f"      for (int64_t e = 0; e < {DVP}; e++) acc[r][e] = 0;")
  emit("      mx[r] = -INFINITY; l[r] = 0;")
  emit("    }")
  emit(f"    for (int64_t j0 = 0; j0 < {m.S}; j0 += {BC}) {{")
  emit(f"      int64_t cols = {m.S} - j0 < {BC} ? {m.S} - j0 : {BC};")
  if staged: emit(f"      const {T} (*kt)[{BC}] = (const {T} (*)[{BC}])(kts + (bb * {NJB} + j0 / {BC}) * {m.D * BC});")
  emit(f"      for (int64_t x = 0; x < {BC}; x++) {{")
  if not staged: emit(f"        {kfill()}")
  # (a row's copy without conditions in it: GCC's -O2 vectorizes that one, not one choosing between a load and 0 at
  # each element, which took 6.6 % of W8 at L=2048)
  emit(f"        if (x < cols) for (int64_t e = 0; e < {m.DV}; e++) vb[x][e] = {load(m.v, j='j0 + x', e='e')};")
  emit(f"        else for (int64_t e = 0; e < {m.DV}; e++) vb[x][e] = 0;")
  if DVP > m.DV: emit(f"        for (int64_t e = {m.DV}; e < {DVP}; e++) vb[x][e] = 0;")
  emit("      }")
  # s = Q K^T by TR x TW register tiles: TR rows of NV vector accumulators, the two vectors of a K^T row loaded
  # once per step and each Q element broadcast (GCC vector types, so the tile stays in registers)
  tile = [[f"a{r}_{q}" for q in range(NV)] for r in range(TR)]
  zero = ", ".join(f"{x} = {{0}}" for row in tile for x in row)
  bcast = f"({V}){{{', '.join(['y'] * lanes)}}}"
  def steps(src: str, row: str, at: str) -> str:       # broadcast src[r + k][at], one FMA per accumulator
    return " ".join(f"y = {src}[r + {r}][{at}]; b = {bcast}; " +
                    " ".join(f"{a} = {name}_fma(b, {row}{q}, {a});" for q, a in enumerate(tile[r])) for r in range(TR))
  emit(f"      for (int64_t r = 0; r < {BR}; r += {TR})")
  emit(f"        for (int64_t x0 = 0; x0 < {BC}; x0 += {TW}) {{")
  emit(f"          {V} {zero}, b;")
  emit(f"          {T} y;")
  emit(f"          for (int64_t c = 0; c < {m.D}; c++) {{")
  emit(f"            {V} " + ", ".join(f"k{q} = *(const {V}*)&kt[c][x0 + {q * lanes}]" for q in range(NV)) + ";")
  emit(f"            {steps('qb', 'k', 'c')}")
  emit("          }")
  emit("          " + " ".join(f"*({V}*)&sb[r + {r}][x0 + {q * lanes}] = {a};"
                             for r, row in enumerate(tile) for q, a in enumerate(row)))
  emit("        }")
  # per row: the logits, the new running max, p = exp(t - max), the rescale factor and the row sum
  emit(f"      for (int64_t r = 0; r < {BR}; r++) {{")
  emit(f"        {T}* s = sb[r];")
  emit(f"        if (r >= rows) {{ for (int64_t x = 0; x < {BC}; x++) s[x] = 0; cr[r] = 0; continue; }}")
  if uses[0]: emit("        int64_t i = i0 + r;")
  jdef = "int64_t j = j0 + x; " if uses[1] else ""
  emit(f"        for (int64_t x = 0; x < cols; x++) {{ {jdef}s[x] = {logit('s[x]')}; }}")
  emit(f"        for (int64_t x = cols; x < {BC}; x++) s[x] = -INFINITY;")
  emit(f"        {T} ml[{TW}], pl[{TW}];")
  emit(f"        for (int w = 0; w < {TW}; w++) {{ ml[w] = mx[r]; pl[w] = 0; }}")
  emit(f"        for (int64_t x0 = 0; x0 < {BC}; x0 += {TW})")
  emit(f"          for (int w = 0; w < {TW}; w++) ml[w] = s[x0 + w] > ml[w] ? s[x0 + w] : ml[w];")
  lines += _tree(None, "ml", TW, "        ")
  emit(f"        {T} mn = ml[0], mu = mn == -INFINITY ? 0 : mn;")
  emit(f"        cr[r] = exp{sfx}(mx[r] - mu); mx[r] = mn;")
  emit("        #pragma omp simd")
  emit(f"        for (int64_t x = 0; x < {BC}; x++) s[x] = exp{sfx}(s[x] - mu);")
  emit(f"        for (int64_t x0 = 0; x0 < {BC}; x0 += {TW})")
  emit(f"          for (int w = 0; w < {TW}; w++) pl[w] += s[x0 + w];")
  lines += _tree("+", "pl", TW, "        ")
  emit("        l[r] = l[r] * cr[r] + pl[0];")
  emit("      }")
  # acc = acc * rescale + p V, by the same register tiles
  emit(f"      for (int64_t r = 0; r < {BR}; r += {TR})")
  emit(f"        for (int64_t e0 = 0; e0 < {DVP}; e0 += {TW}) {{")
  emit(f"          {V} " + ", ".join(f"{a} = *({V}*)&acc[r + {r}][e0 + {q * lanes}] * cr[r + {r}]"
                                  for r, row in enumerate(tile) for q, a in enumerate(row)) + ", b;")
  emit(f"          {T} y;")
  emit(f"          for (int64_t x = 0; x < {BC}; x++) {{")
  emit(f"            {V} " + ", ".join(f"v{q} = *(const {V}*)&vb[x][e0 + {q * lanes}]" for q in range(NV)) + ";")
  emit(f"            {steps('sb', 'v', 'x')}")
  emit("          }")
  emit("          " + " ".join(f"*({V}*)&acc[r + {r}][e0 + {q * lanes}] = {a};"
                             for r, row in enumerate(tile) for q, a in enumerate(row)))
  emit("        }")
  emit("    }")
  out = bufs[0]
  oi = f"(bb * {m.DV} + e) * {m.L} + i0 + r" if m.transposed else f"(bb * {m.L} + i0 + r) * {m.DV} + e"
  st = f"data{out.arg.slot}[{oi}] = acc[r][e] / ({T})l[r];"
  if checked: st = f"if ((uint64_t)({oi}) < {out.arg.shape[0]}ULL) {st} else mt_oob(mt_err, {out.arg.slot}, {oi});"
  emit("    for (int64_t r = 0; r < rows; r++)")
  emit(f"      for (int64_t e = 0; e < {m.DV}; e++) {st}")
  emit("  }")
  if staged: emit("  free(kraw);")
  params = [f"{'' if b is out else 'const '}{b.dtype.ctype}* restrict data{b.arg.slot}"
            for b in sorted(set(bufs), key=lambda b: b.arg.slot)]
  if checked: params.append("int64_t* restrict mt_err")
  return "#include <stdlib.h>\n" + vector_type(name, T, vbytes) + f"void {name}({', '.join(params)}) {{\n" + \
    "\n".join(lines) + "\n}\n"


def _tree(op: str | None, arr: str, n: int, ind: str) -> list[str]:
  """C statements combining arr[0..n-1] into arr[0] by a balanced tree: a + b (op "+") or the larger (op None:
  a NaN is dropped here, but its exponential is NaN and makes the row NaN all the same)."""
  out = []
  while n > 1:
    n //= 2
    x, y = f"{arr}[w]", f"{arr}[w + {n}]"
    out.append(f"{ind}for (int w = 0; w < {n}; w++) {x} = " + (f"{x} + {y};" if op else f"{y} > {x} ? {y} : {x};"))
  return out
