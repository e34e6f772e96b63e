"""render_c: a linearized loop program -> one C99 function.

Names follow the seed: loop counters `ridxN`, buffers `dataN` (N = slot), accumulators `accN`, loaded values
`valN`, shared or hoisted arithmetic `aluN`. An ALU node gets a variable when it is used more than once or
from a deeper loop than its own; otherwise it is inlined into its user. Semantics that C leaves undefined or
rounds differently from NumPy go through the fixed PRELUDE (prelude.py): floor division and modulo (also by zero),
shifts past the width, integer powers, NaN-propagating max/min, float to integer conversions (NaN, inf, out of
range). Truncating `/` and `%` are emitted directly only
where bounds prove both operands non-negative. Index arithmetic is `int` unless a bound passes 2^31-1, then
`int64_t` for the whole kernel. Data integers wrap as in NumPy (their + and * are done in the unsigned type);
index arithmetic never overflows (it is bounded by buffer sizes), so the C compiler may analyze and vectorize it.
In checked mode (MINITENSOR_CHECK=1) every load and store is guarded by its buffer's size.

Complex values are C99 `float _Complex` / `double _Complex`. A kernel that has any is preceded by COMPLEX_PRELUDE
(once per translation unit, behind an include guard, so other kernels compile as before; tcc has no _Complex,
tiers.py sends such kernels to the C compiler). It does what NumPy's loops do where C's operators or <complex.h>
would give other values: *, / and ** with NumPy's formulas (naive product, Smith's quotient, npy_cpow's integer
powers), NumPy's expm1, log1p, exp2, log2, log10 and its lexicographic maximum/minimum; +, ==, != and the other
functions are C's and glibc's, which NumPy calls too (|z| of complex64 is glibc's hypotf algorithm, of complex128
a scaled sqrt(re^2 + im^2) within 2 ulp of NumPy's, both written so that their loops vectorize).
"""
from __future__ import annotations
import math
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.linearize import linearize, variables
from minitensor.backend.machine import machine
from minitensor.backend.ops import ALU_OPS
from minitensor.backend.prefetch import accessed, heads_to_prefetch, rows_to_prefetch
from minitensor.backend.prelude import COMPLEX_PRELUDE, PRELUDE
from minitensor.backend.uop import AxisType, Ops, UOp, accumulates, bounds, memory_of


def literal(v, d: DType, itype: str) -> str:
  """The C literal of value v of dtype d (index arithmetic in itype): suffixed, NaN and infinities by name."""
  if d.is_complex:
    parts = ", ".join(literal(p, d.real, itype) for p in (v.real, v.imag))
    return f"MT_CMPLX{'F' if d is dtypes.complex64 else ''}({parts})"
  if d.is_float:
    if math.isnan(v): return "NAN"
    if math.isinf(v): return "INFINITY" if v > 0 else "-INFINITY"
    if d is dtypes.float16: return f"((_Float16){v!r}f)"
    return repr(v) + ("f" if d is dtypes.float32 else "")
  if d.is_bool: return "1" if v else "0"
  if d is dtypes.index: d = dtypes.int64 if itype == "int64_t" else dtypes.int32
  if d.kind == "i" and v == d.min: return f"({v + 1}{'LL' if d.itemsize == 8 else ''}-1)"
  return f"{v}{'ULL' if d is dtypes.uint64 else 'LL' if d.itemsize == 8 else 'u' if d is dtypes.uint32 else ''}"


# the C of the ops index() renders (MIN and MAX as a comparison and a select)
_INDEX_C = {Ops.ADD: "+", Ops.MUL: "*", Ops.MIN: "<", Ops.MAX: ">"}


def _cast(x: str, src: DType, to: DType, ctype: str) -> str:
  """x converted from src to `to`: float to integer through the PRELUDE's f2i helpers (NumPy's x86-64 values
  for NaN, inf and out of range, where a plain C cast is undefined), complex to integer through its real part the
  same way, everything else as a C cast."""
  if src.is_complex and to.kind in "iu": x, src = f"creal{'f' if src is dtypes.complex64 else ''}({x})", src.real
  if not (src.is_float and to.kind in "iu"): return f"(({ctype})({x}))"
  s = src.suffix
  if to is dtypes.uint64: return f"f2u64_{s}({x})"
  if to is dtypes.int64: return f"f2i64_{s}({x})"
  if to is dtypes.uint32: return f"((uint32_t)f2i64_{s}({x}))"
  return f"f2i32_{s}({x})" if to is dtypes.int32 else f"(({ctype})f2i32_{s}({x}))"


def _spell(s: str | None, a: list[str], fsuffix: str, hsuffix: str) -> str | None:
  """Operands a in the op table's C spelling s: a function (+ fsuffix), a PRELUDE helper (+ hsuffix), an infix
  operator; None for a spelling this form does not cover."""
  if s is None: return None
  if s.endswith("_"): return f"{s}{hsuffix}({', '.join(a)})"
  if s.isidentifier(): return f"{s}{fsuffix}({', '.join(a)})"
  return f"({a[0]}{s}{a[1]})" if len(a) == 2 else None


def _complex_alu(op: Ops, d: DType, a: list[str]) -> str:
  """op on complex operands (or CMPLX on two float parts) in C: operators, <complex.h> or COMPLEX_PRELUDE."""
  if op is Ops.CMPLX: return f"MT_CMPLX{'F' if d is dtypes.float32 else ''}({a[0]}, {a[1]})"
  if (out := _spell(ALU_OPS[op].cplx, a, "f" if d is dtypes.complex64 else "", d.short)) is None:
    raise NotImplementedError(f"render_c: {op} on {d.name}")
  return out


def _unsigned(d: DType) -> str:
  """The unsigned C type integer arithmetic of d is done in (at least 32 bits: no promotion to int)."""
  return "uint64_t" if d.itemsize == 8 else "uint32_t"


def index_type(sink: UOp) -> str:
  """int, unless some index value or loop bound can pass 2^31-1: then int64_t."""
  for u in sink.toposort():
    if u.dtype is dtypes.index:
      lo, hi = bounds(u)
      if lo < -(2**31) or hi > 2**31 - 1: return "int64_t"
    if u.op is Ops.BUFFER and u.arg.shape[0] > 2**31 - 1: return "int64_t"
  return "int"


class _Renderer:
  def __init__(self, sink: UOp, name: str, checked: bool = False, sized: bool = False):
    self.sink, self.name, self.checked, self.sized = sink, name, checked, sized
    self.prog = linearize(sink)
    self.itype = "int64_t" if sized else index_type(sink)
    self.r: dict[UOp, str] = {}
    self.n = 0
    self.lines: list[str] = []
    depth, self.depth, self.uses, self.deep_use = 0, {}, {}, set()
    for s in self.prog:
      if s.kind == "open": depth += 1
      elif s.kind == "close": depth -= 1
      else:
        self.depth[s.u] = depth
        for x in s.u.src:
          self.uses[x] = self.uses.get(x, 0) + 1
          if self.depth.get(x, 0) < depth: self.deep_use.add(x)
    self.rows = rows_to_prefetch(self.prog)
    # (a head's address runs past the loads' own: with `int` indices it must stay in range too)
    self.heads = {r: [x for x in h if self.itype == "int64_t" or bounds(x[1])[1] < 2 ** 31 - 1]
                  for r, h in heads_to_prefetch(self.prog).items() if r not in self.rows}
    self.work = _symbolic_work(self.prog)
    self.stream = None if checked else _stream(self.prog)
    self.lane_store = (0, "")            # the streaming loop's store: (its line, the line storing into the lane)
    self.quiet = not accumulates(sink)   # float compares: PRELUDE's quiet lt_/le_/max_/min_, else the compiler's

  def ctype(self, d: DType) -> str: return self.itype if d is dtypes.index else d.ctype
  def var(self, prefix: str) -> str:
    self.n += 1
    return f"{prefix}{self.n}"

  def expr(self, u: UOp) -> str:
    if u.op is Ops.CONST: return literal(u.arg, u.dtype, self.itype)
    if u.op is Ops.VAR: return f"s{u.arg.idx}"
    return self.r[u]

  def lvalue(self, idx: UOp) -> str:
    base, i = memory_of(idx.src[0]), idx.src[1]
    if base.op is Ops.ALLOC and base.arg.shape[0] == 1: return f"acc{base.arg.slot}"
    return f"{self.r_base(base)}[{self.expr(i)}]"

  def guard(self, idx: UOp) -> tuple[str, str] | None:
    """Checked mode: (in-bounds condition, failure call) for an access the bounds do not prove safe."""
    base = memory_of(idx.src[0])
    n, i = base.arg.shape[0], idx.src[1]
    if not self.checked or (base.op is Ops.ALLOC and n == 1): return None
    slot = base.arg.slot if base.op is Ops.BUFFER else -1 - base.arg.slot
    e = self.expr(i)
    return f"((uint64_t)({e}) < {n}ULL)", f"mt_oob(mt_err, {slot}, (int64_t)({e}))"

  def index(self, u: UOp) -> str:
    """The C of index arithmetic u over loops already open (a row's start: prefetch.py makes sure it has only these ops;
    a loop's extent: sums, products, minima and maxima of sizes and of the loops around it)."""
    if u.op in (Ops.CONST, Ops.VAR): return self.expr(u)
    if u.op is Ops.RANGE: return self.r[u]
    if u.op not in _INDEX_C: raise NotImplementedError(f"render_c: {u.op} in a loop's extent or a row's start")
    a, b = self.index(u.src[0]), self.index(u.src[1])
    return f"({a} {_INDEX_C[u.op]} {b} ? {a} : {b})" if u.op in (Ops.MIN, Ops.MAX) else f"({a}{_INDEX_C[u.op]}{b})"

  def r_base(self, b: UOp) -> str: return f"data{b.arg.slot}" if b.op is Ops.BUFFER else f"acc{b.arg.slot}"

  def alu(self, u: UOp) -> str:
    op, d = u.op, u.src[-1].dtype
    a = [self.expr(s) for s in u.src]
    if op is Ops.WHERE: return f"({a[0]}?{a[1]}:{a[2]})"
    if op is Ops.CAST: return _cast(a[0], d, u.dtype, self.ctype(u.dtype))
    # (a union's other member reads the same bytes: C99's type punning, which gcc and tcc compile to a move)
    if op is Ops.BITCAST: return f"(((union {{ {d.ctype} a; {u.dtype.ctype} b; }}){{ .a = {a[0]} }}).b)"
    if d.is_complex or op is Ops.CMPLX: return _complex_alu(op, d, a)
    if op is Ops.MUL and d.itemsize >= 4 and d.is_float and (c := u.src[1]).op is Ops.CONST and c.arg == -1:
      return f"neg_{d.suffix}({a[0]})"             # (negative: the sign bit flipped, NaN's too; PRELUDE)
    info = ALU_OPS[op]
    sp = info.c if d.is_float else info.ci or info.c
    if op in (Ops.MAX, Ops.MIN) and d.is_float and d is not dtypes.float16 and not self.quiet: sp = "r" + sp
    if d.is_float and sp is not None and sp.isidentifier() and not sp.endswith("_"):      # a <math.h> function
      out = f"{sp}{'f' if d.itemsize <= 4 else ''}({', '.join(a)})"
      return f"((_Float16){out})" if d is dtypes.float16 else out
    if op is Ops.ABS: return f"({a[0]}<0?({d.ctype})(0u-({_unsigned(d)})({a[0]})):{a[0]})"
    if op in (Ops.FLOORDIV, Ops.FLOORMOD) and d.is_int and bounds(u.src[0])[0] >= 0 and bounds(u.src[1])[0] > 0:
      out = f"({a[0]}{'/' if op is Ops.FLOORDIV else '%'}{a[1]})"
    elif sp is not None and sp.endswith("_"):
      suffix = d.suffix or ("i64" if self.itype == "int64_t" else "i32")
      if d is dtypes.float16 and op in (Ops.MAX, Ops.MIN): suffix = "f16"
      out = f"{sp}{suffix}({', '.join(a)})"
    elif op in (Ops.ADD, Ops.MUL) and d.is_int and d is not dtypes.index:
      # data integers wrap like NumPy's: compute in the unsigned type (defined in C), convert back
      ut = _unsigned(d)
      out = f"(({d.ctype})((({ut}){a[0]}){sp}(({ut}){a[1]})))"
    elif op is Ops.ADD and u.src[1].op is Ops.CONST and d.min < u.src[1].arg < 0 and not d.is_unsigned:
      out = f"({a[0]}-{literal(-u.src[1].arg, u.src[1].dtype, self.itype)})"
    elif op in (Ops.CMPLT, Ops.CMPLE) and d.is_float:       # NaN raises no invalid (as in NumPy), see PRELUDE
      out = f"{'lt_' if op is Ops.CMPLT else 'le_'}{d.suffix}({a[0]}, {a[1]})" if self.quiet else \
        f"{'isless' if op is Ops.CMPLT else 'islessequal'}({a[0]}, {a[1]})"
    elif (out := _spell(sp, a, "", "")) is None: raise NotImplementedError(f"render_c: {op} on {d.name}")
    # small types promote to int / float in C; round every result back so intermediates match NumPy
    if (u.dtype.is_int or u.dtype is dtypes.float16) and u.dtype.itemsize < 4 and u.dtype is not dtypes.index:
      out = f"(({u.dtype.ctype}){out})"
    return out

  def fma(self, store: UOp) -> str | None:
    """acc = acc + a*b into a float accumulator as one fused multiply-add (the compiler contracts nothing
    by itself; sums of products are where NumPy's own kernels, BLAS, fuse too). A jammed update (opt.py's JAM:
    ((acc + a*b) + c*d) ...) is fused at every step, as the loop it replaces fuses each of its steps."""
    base, v = memory_of(store.src[0].src[0]), store.src[1]
    if base.op is not Ops.ALLOC or v.op is not Ops.ADD or not v.dtype.is_float or v.dtype is dtypes.float16: return None
    acc, m = v.src if v.src[1].op is Ops.MUL else v.src[::-1]
    if m.op is not Ops.MUL or self.uses.get(m, 0) != 1: return None
    f = "fmaf" if v.dtype is dtypes.float32 else "fma"
    inner = acc
    steps = [m]
    while inner.op is Ops.ADD and inner.src[1].op is Ops.MUL and self.uses.get(inner, 0) == 1 and \
        self.uses.get(inner.src[1], 0) == 1 and inner not in self.deep_use:
      steps.append(inner.src[1])
      inner = inner.src[0]
    out = self.expr(inner)
    for s in reversed(steps): out = f"{f}({self.expr(s.src[0])}, {self.expr(s.src[1])}, {out})"
    return out

  def declare(self, a: UOp, ind: str) -> None:
    if a not in self.r:
      self.r[a] = f"acc{a.arg.slot}"
      n = a.arg.shape[0]
      # an accumulator of 1 KiB or more starts on a page: where it falls against the rows it is added from (its
      # stores' and their loads' addresses modulo 4 KiB) otherwise changes with each thread's stack, and the
      # column sum of W4 took 145 or 167 us by process (benchmarks/RESULTS.md); tcc takes the attribute and ignores it
      page = " __attribute__((aligned(4096)))" if n * a.dtype.itemsize >= 1024 else ""
      self.lines.append(f"{ind}{self.ctype(a.dtype)} acc{a.arg.slot}{f'[{n}]' if n != 1 else ''}{page};")

  def stmt(self, u: UOp, ind: str) -> None:
    op = u.op
    if op is Ops.INDEX: return
    if op is Ops.AFTER and u.src[0].op is Ops.ALLOC:
      if all(d.op is Ops.RANGE for d in u.src[1:]): self.declare(u.src[0], ind)
      self.r[u] = f"acc{u.src[0].arg.slot}"
      return
    if op is Ops.AFTER: self.r[u] = self.r.get(u.src[0], ""); return
    g = self.guard(u.src[0]) if op in (Ops.LOAD, Ops.STORE) else None
    if op is Ops.LOAD:
      v = self.var("val")
      t = self.ctype(u.dtype)
      val = f"({g[0]} ? {self.lvalue(u.src[0])} : ({t})({g[1]}))" if g else self.lvalue(u.src[0])
      self.lines.append(f"{ind}{t} {v} = {val};")
      self.r[u] = v
    elif op is Ops.STORE:
      st = f"{self.lvalue(u.src[0])} = {self.fma(u) or self.expr(u.src[1])};"
      if self.stream is not None and u is self.stream[1]:
        self.lane_store = (len(self.lines), f"{ind}mt_t[mt_l] = {self.expr(u.src[1])};")
      self.lines.append(f"{ind}if ({g[0]}) {st} else {g[1]};" if g else f"{ind}{st}")
    else:
      e = self.alu(u)
      if self.uses.get(u, 0) > 1 or u in self.deep_use:
        v = self.var("alu")
        self.lines.append(f"{ind}{self.ctype(u.dtype)} {v} = {e};")
        self.r[u] = v
      else: self.r[u] = e

  def render(self) -> str:
    bufs = sorted({u.arg.slot: u for u in self.sink.toposort() if u.op is Ops.BUFFER}.items())
    stored = {u.src[0].src[0] for u in self.sink.toposort() if u.op is Ops.STORE}
    params = [f"{'' if b in stored else 'const '}{b.dtype.ctype}* restrict data{s}" for s, b in bufs]
    if self.sized:
      params += [f"int64_t n{r.arg.idx}"
                 for r in sorted((u for u in self.sink.toposort() if u.op is Ops.RANGE), key=lambda r: r.arg.idx)]
    params += [f"int64_t s{v}" for v in variables(self.sink)]
    if self.checked: params.append("int64_t* restrict mt_err")
    # an accumulator is declared where its scope (an AFTER on RANGEs only) is; otherwise at the top
    scoped = {s.u.src[0] for s in self.prog
              if s.kind == "node" and s.u.op is Ops.AFTER and all(d.op is Ops.RANGE for d in s.u.src[1:])}
    for a in sorted((u for u in self.sink.toposort() if u.op is Ops.ALLOC and u not in scoped),
                    key=lambda a: a.arg.slot):
      self.declare(a, "  ")
    depth = 1
    # the first line of each open loop's body; a covered axis's block loop -> (its partial lanes' bounds, min's
    # operands: the lanes left and the block's width)
    opened: dict[UOp, int] = {}
    partial: dict[UOp, tuple[list[str], str, str]] = {}
    for s in self.prog:
      ind = "  " * depth
      if s.kind == "open":
        r = s.u
        size = f"n{r.arg.idx}" if self.sized else self.index(r.arg.var) if r.arg.var is not None else r.arg.size
        if self.stream is not None and r is self.stream[0]: start, n = len(self.lines), size
        if (v := r.arg.var) is not None and v.op is Ops.MIN and v.src[1].op is Ops.CONST and v.src[0].ranges:
          block = max(v.src[0].ranges, key=lambda b: b.arg.idx)     # (innermost: a thread's stretch is outside)
          partial.setdefault(block, ([], self.index(v.src[0]), self.index(v.src[1])))[0].append(size)
        if r.arg.kind is AxisType.THREAD:
          cond = f"!mt_serial && {size} >= {SIZED_THREAD_MIN}" if self.sized else \
            f"!mt_serial && {self.work[r]} >= {SIZED_THREAD_MIN}" if r in self.work else "!mt_serial"
          # (few iterations, each a large block: every core takes its share at once; a dynamic schedule lets the
          # core that starts first take a block of one still waking: a column sum's 2 blocks, 175 vs 157 us)
          sched = "static" if r.arg.size < STATIC_PER_CORE * machine().cores else f"dynamic, mt_chunk({size})"
          self.lines.append(f"{ind}#pragma omp parallel for schedule({sched}) if({cond})")
        if r.arg.kind is AxisType.VECTOR: self.lines.append(f"{ind}#pragma omp simd")
        self.lines.append(f"{ind}for ({self.itype} ridx{r.arg.idx} = 0; ridx{r.arg.idx} < {size}; "
                          f"ridx{r.arg.idx}++) {{")
        self.r[r] = f"ridx{r.arg.idx}"
        opened[r] = len(self.lines)
        depth += 1
        for slot, ahead, itemsize in self.heads.get(r, ()):
          at = self.index(ahead)
          self.lines.append(f"{ind}  mt_prefetch(&data{slot}[{at}], 0); "
                            f"mt_prefetch(&data{slot}[{at} + {64 // itemsize}], 0);")
        for slot, start, n, itemsize, write in self.rows.get(r, ()):
          self.lines.append(f"{ind}  if (ridx{r.arg.idx} + 1 < {size}) for ({self.itype} mt_p = {n}; mt_p < {2 * n}; "
                            f"mt_p += {64 // itemsize}) mt_prefetch(&data{slot}[{self.index(start)} + mt_p], {write});")
      elif s.kind == "close":
        depth -= 1
        self.lines.append("  " * depth + "}")
        if (pb := partial.pop(s.u, None)) is not None:
          self.lines[opened[s.u]:-1] = _versions(self.lines[opened[s.u]:-1], *pb, "  " * (depth + 1))
        if self.stream is not None and s.u is self.stream[0]:
          self.lines[start:] = self.render_stream(self.lines[start:], self.lane_store[0] - start, n, "  " * depth)
      else: self.stmt(s.u, ind)
    head = COMPLEX_PRELUDE if any(u.dtype.is_complex for u in self.sink.toposort()) else ""
    return head + f"MT_LOOPS void {self.name}({', '.join(params)}) {{\n" + "\n".join(self.lines) + "\n}\n"

  def render_stream(self, loop: list[str], at: int, n: str, ind: str) -> list[str]:
    """The lines of the streaming loop around `loop` (the plain one: its pragma, head, body and brace; its store is
    loop[at]; n its size), which still runs where the loop is short, or not compiled by gcc for x86 (tcc)."""
    r, store, lanes, threshold = self.stream
    b, d = store.src[0].src[0], store.src[1].dtype
    ct, isz, vb = d.ctype, d.itemsize, lanes * d.itemsize
    rv, out = f"ridx{r.arg.idx}", f"data{b.arg.slot}"
    body = loop[2:-1]
    inner = lambda lines, k: [f"{'  ' * k}{x}" for x in lines]
    lane = [self.lane_store[1] if k + 2 == at else x for k, x in enumerate(body)]
    name = f"mt_f{8 * isz}x{lanes}", f"__builtin_ia32_movntp{'s' if isz == 4 else 'd'}{'' if vb == 16 else 8 * vb}"
    return [f"#if defined(MT_STREAM) && defined({STREAM_ISA[vb]})",
            f"{ind}if ({n} >= {threshold} && !((uintptr_t){out} & {isz - 1})) {{",
            f"{ind}  int64_t mt_a = (int64_t)((({vb} - ((uintptr_t){out} & {vb - 1})) & {vb - 1}) / {isz});",
            f"{ind}  if (mt_a > {n}) mt_a = {n};",
            f"{ind}  int64_t mt_n = ({n} - mt_a) / {lanes};",
            f"{ind}  for ({self.itype} {rv} = 0; {rv} < mt_a; {rv}++) {{", *inner(body, 1), f"{ind}  }}",
            f"{ind}  #pragma omp parallel if(!mt_serial)",
            f"{ind}  {{",
            f"{ind}    #pragma omp for schedule(dynamic, mt_chunk(mt_n)) nowait",
            f"{ind}    for (int64_t mt_b = 0; mt_b < mt_n; mt_b++) {{",
            f"{ind}      {ct} mt_t[{lanes}];",
            f"{ind}      #pragma omp simd",
            f"{ind}      for (int mt_l = 0; mt_l < {lanes}; mt_l++) {{",
            f"{ind}        {self.itype} {rv} = mt_a + mt_b * {lanes} + mt_l;", *inner(lane, 3), f"{ind}      }}",
            f"{ind}      mt_stream({name[0]}, {name[1]}, {out} + mt_a + mt_b * {lanes}, mt_t);",
            f"{ind}    }}",
            f"{ind}    __builtin_ia32_sfence();",
            f"{ind}  }}",
            f"{ind}  for ({self.itype} {rv} = mt_a + mt_n * {lanes}; {rv} < {n}; {rv}++) {{", *inner(body, 1),
            f"{ind}  }}",
            f"{ind}}} else",
            "#endif",
            f"{ind}{{", *inner(loop, 1), f"{ind}}}"]


def _versions(body: list[str], sizes: list[str], rest: str, f: str, ind: str) -> list[str]:
  """The body of a block loop over an axis covered by whole blocks of f and a partial last one (Ctx.cover and
  Ctx.stretches: its lane loops run `sizes` = min(rest, f) iterations) as two versions: for a whole block, every lane
  loop with the constant trip count f (the C compiler vectorizes it without a remainder), else as it is."""
  whole = list(body)
  for size in sizes: whole = [x.replace(f"< {size};", f"< {f};") for x in whole]
  return [f"{ind}if ({rest} >= {f}) {{", *[f"  {x}" for x in whole], f"{ind}}} else {{", *[f"  {x}" for x in body],
          f"{ind}}}"]


STREAM_ISA = {16: "__SSE2__", 32: "__AVX__", 64: "__AVX512F__"}     # the vector widths a streaming loop stores


def _stream(prog: list) -> tuple[UOp, UOp, int, int] | None:
  """(loop, store, lanes, threshold) when the kernel is one parallel loop storing a float32 or float64 value per
  index into out[index] (a flat elementwise kernel) on an x86 CPU; else None. Such a loop of `threshold` or more
  iterations touches at least half of L3 (its loads and store per element together), so its output would leave the
  cache before any reader comes: it is stored with non-temporal vector stores, which skip reading each output line
  in first (x86 writes allocate). W3, a*2 + b*3 - a*b over 4M float32 in a C harness, 2 threads, Zen 3: 1.36-1.62
  against 1.77-2.12 ms. Each lane computes what the plain loop computes, so the values are the same bits."""
  opens = [s.u for s in prog if s.kind == "open"]
  stores = [s.u for s in prog if s.kind == "node" and s.u.op is Ops.STORE]
  m = machine()
  if len(opens) != 1 or opens[0].arg.kind is not AxisType.THREAD or len(stores) != 1 or not m.x86: return None
  r, st = opens[0], stores[0]
  if accessed(st).op is not Ops.BUFFER or st.src[0].src[1] is not r or m.vector_bytes not in STREAM_ISA: return None
  if (d := st.src[1].dtype) not in (dtypes.float32, dtypes.float64): return None
  per = d.itemsize + sum(s.u.dtype.itemsize for s in prog if s.kind == "node" and s.u.op is Ops.LOAD
                                and r in s.u.src[0].src[1].ranges)
  return r, st, m.vector_bytes // d.itemsize, -(-(m.l3 // 2) // per)


SIZED_THREAD_MIN = 1 << 17    # a sized kernel starts its threads only for this many elements or more
STATIC_PER_CORE = 4           # a thread loop of fewer iterations per core (at the sizes it is lowered at) is static


def _symbolic_work(prog: list) -> dict[UOp, str]:
  """Per THREAD loop of symbolic extent, or around loops of symbolic extent, the C expression of the iterations it
  runs, its own and those of the loops inside it (a loop's extent times the sum of its children's, at least 1): the
  loop starts threads only for at least SIZED_THREAD_MIN of them, as a sized kernel does (a symbolic program also
  serves small sizes)."""
  children: dict[UOp | None, list[UOp]] = {}
  stack: list[UOp | None] = [None]
  for s in prog:
    if s.kind == "open":
      children.setdefault(stack[-1], []).append(s.u)
      stack.append(s.u)
    elif s.kind == "close": stack.pop()
  def count(r: UOp) -> tuple[str, bool]:
    """(r's iterations as C, whether r or a loop inside it has a symbolic extent)"""
    v = r.arg.var
    ext = str(r.arg.size) if v is None else f"s{v.arg.idx}" if v.op is Ops.VAR else str(v.vmax)
    inner = [count(c) for c in children.get(r, ())]
    return ext if not inner else f"{ext}*({' + '.join(c for c, _ in inner)})", v is not None or any(s for _, s in inner)
  # (a THREAD loop of one iteration per core, Ctx.stretches, runs symbolic loops inside: its work is theirs)
  work = {r: count(r) for rs in children.values() for r in rs if r.arg.kind is AxisType.THREAD}
  return {r: c for r, (c, symbolic) in work.items() if symbolic}


def render_function(sink: UOp, name: str = "kernel", checked: bool = False, sized: bool = False) -> str:
  """The C function of one kernel, without the prelude. checked: every load and store tests its index
  against its buffer's size and reports a violation through a last `int64_t* mt_err` argument instead.
  sized: every loop bound is an argument `int64_t n<idx>` after the buffers (in the order of the loops'
  indices), so the same source serves every size (unless checked: the guards name each buffer's size)."""
  return _Renderer(sink, name, checked, sized).render()


def render_c(sink: UOp, name: str = "kernel", checked: bool = False) -> str:
  """A complete C99 translation unit: the fixed PRELUDE and the kernel `name`."""
  return PRELUDE + render_function(sink, name, checked)
