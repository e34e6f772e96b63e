"""gemm: a contraction kernel as a cache-blocked, register-tiled GEMM (the Goto / BLIS scheme), in C.

A kernel whose value is  out[b.., i.., j..] = sum over k.. of A(b.., i.., k..) * B(b.., k.., j..)  (a REDUCE(ADD)
of a MUL, float32 or float64, lowered for concrete sizes, with at least MIN_WORK multiply-adds) gets a `Gemm` plan
from kernelize, and realize renders that plan instead of the kernel's loop program. Such a contraction under an
elementwise epilogue (x @ w + b, a conv2d with bias) is materialized by kernelize first (`inner`), so the epilogue
reads the GEMM's output:

    axes      an output axis both operands read is a batch axis, one only A reads is a row (M) axis, one only B
              reads a column (N) axis; the reduce axes are K. B is the operand that reads the output's innermost
              axis (a matmul's columns, a convolution's pixels), so its packing copies contiguous runs
    packing   per block, two pack functions copy an MC x KC block of A into MR-row slivers and a KC x NC panel of B
              into NR-column slivers. In general they are ordinary kernels: lowered by rangeify from the operand's
              own graph with the block offsets as VARs, rendered by render_c, so any operand works (computed,
              padded, gathered) and checked mode guards their loads. An operand that is one buffer read at an
              address linear in the axes (`Strided`: a strided view, a transpose, a convolution's windows over
              its staged padded input) is copied through per-axis offset tables instead, with no index arithmetic
              per element (a convolution's im2col gather costs about as much as its multiply-adds otherwise).
              Rows and columns past the edge repeat the last one (in bounds; their results are never stored)
    micro     an MR x NR register tile: MR * NR / lanes vector accumulators (GCC vector types) and one FMA per
              accumulator and k step (x86 FMA builtins where the CPU has FMA, else multiply then add): the C says
              it, so both compiler tiers give the same bits. NumPy's BLAS fuses these products too
    blocks    from the machine model: NR = 2 vectors, MR = what the other registers hold (fewer where that pads M
              to far fewer rows: row_tile); KC so that a B sliver fills L1, MC so that the A block fills half of L2
              (tile_sizes), NC so that each core's B panel fits in its share of L3
    threads   tasks (batch x row groups x column groups, at least one per core) run in an OpenMP loop; each packs
              its own blocks. K is never split across threads: every output element is summed in one fixed order
              (K blocks of KC in sequence, each a chain of FMAs), whatever the number of threads
    stores    through per-axis offset tables, so any output layout works (a convolution writes (n, o, h, w))

tcc has no vector types: tiers.tcc_lacks sends these kernels to the C compiler in tier 0 too. The micro-kernel and
the pack functions are not inlined into the driver (each call does thousands of multiply-adds or copies; inlined,
gcc -O3 took 0.50 s of CPU for a GEMM's translation unit instead of 0.36 s).
"""
from __future__ import annotations
from typing import NamedTuple
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.linearize import variables
from minitensor.backend.machine import Machine, machine
from minitensor.backend.prelude import vector_type
from minitensor.backend.rangeify import rangeify
from minitensor.backend.ranges import Ctx, unravel
from minitensor.backend.render_c import render_function
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import ALU, MOVEMENT, AxisType, Ops, ParamArg, UOp, buf, prod, range_, sink, var

MIN_WORK = 1 << 18      # multiply-adds below which the plain loop program is kept
# rows and columns below which it is kept too: packing one operand costs about as much as 1/MIN_SIDE of the
# multiply-adds (measured on a busy 2-core Zen 3: 3 x 1000 x 1000 took 4.7x longer blocked, 8 x 300 x 2000 was
# 1.2x faster)
MIN_SIDE = 8
TASKS_PER_CORE = 8     # column groups per core where A is cheap to pack again (_grid)


class Gemm(NamedTuple):
  """What the blocked GEMM of one kernel needs: dtype, sizes (batch, M, N, K), the tile (MR, NR, KC, MC, NC), the
  task grid (row groups, column groups, rows per group, columns per group), the operands A and B (shaped, over local
  slots, of shape `full`: the output axes, then K) and the axes of `full` that are batch, row, column and K axes, the
  (size, stride) of every batch, row and column axis of the output, the output's local slot and size, the number
  of local slots, and each operand as Strided where it is one (packed through tables, else by `pack`)."""
  dtype: DType
  sizes: tuple[int, int, int, int]
  tile: tuple[int, int, int, int, int]
  grid: tuple[int, int, int, int]
  operands: tuple[UOp, UOp]
  full: tuple[int, ...]
  groups: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]
  axes: tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]
  out: int
  out_size: int
  n_slots: int
  direct: tuple[Strided | None, Strided | None] = (None, None)

  def pack(self, b: bool) -> UOp:
    """The rangeify pack program of operand A (b False) or B (its pack buffer is local slot n_slots)."""
    nb, m, n, k = self.sizes
    mr, nr, kc, mc, nc = self.tile
    t, most = (nr, nc // nr) if b else (mr, mc // mr)
    return _pack(self.operands[b], self.full, self.groups[3], self.groups[0], self.groups[2 if b else 1],
                 (nb, n if b else m, k), t, most, kc, self.n_slots)


class Strided(NamedTuple):
  """An operand that is one buffer read at an address linear in the axes (a strided view, a transpose, a
  convolution's window over a staged padded input), maybe cast: packed by copying through per-axis offset tables
  (no index arithmetic per element). tables: (size, address step) of its batch axes, its own (row or column) axes
  and the K axes; the address is base + the sum of the three tables' offsets."""
  slot: int
  src: DType
  base: int
  tables: tuple[tuple[tuple[int, int], ...], ...]


def tile_sizes(m: Machine, itemsize: int) -> tuple[int, int, int, int, int]:
  """(MR, NR, KC, MC, NC) for this machine: NR two vectors, MR rows of accumulators with the registers left
  after the two B vectors and the broadcast A element (6 x 16 float32 with AVX2, 14 x 32 with AVX-512). KC: a B
  sliver as large as L1 (it streams through; each k step reads it once), MC: the A block half of L2. Measured
  in-process, alternating the kernels (AMD EPYC Zen 4, 32 KiB L1, 1 MiB L2, 2 threads, medians of 25): against
  KC 128 (a sliver of half L1) with MC a quarter of L2, KC 256 with MC half of L2 took 0.95 of the time at N=1024
  float32, 0.90 at N=256, 0.97 at N=512, 0.90 at N=1024 float64; KC 512 was no better at 1024, slower at 512."""
  lanes = m.lanes(itemsize)
  nr = 2 * lanes
  mr = max((m.registers - 3) // 2, 1)
  kc = max(m.l1 // (nr * itemsize) // 8 * 8, 16)
  mc = max(m.l2 // 2 // (kc * itemsize) // mr * mr, mr)
  nc = max(min(m.l3 // (2 * max(m.cores, 1)) // (kc * itemsize), 4096) // nr * nr, nr)
  return mr, nr, kc, mc, nc


def row_tile(m: int, tile: tuple[int, int, int, int, int]) -> tuple[int, int, int, int, int]:
  """The tile for M rows: MR lowered by up to a quarter where that pads M to far fewer rows (the last sliver's
  missing rows are computed and thrown away). M = 64 (a convolution's channels) is 5 slivers of 14 (70 rows) or of 13
  (65): 13 x 32 float32 with AVX-512. A gain under 2 % of M keeps MR (matmuls of 512 and 1024 rows keep 14)."""
  mr, nr, kc, mc, nc = tile
  padded = lambda r: -(-m // r) * r
  best = min(range(mr, -(-3 * mr // 4) - 1, -1), key=padded)          # (the larger of equal ones: the first)
  if (padded(mr) - padded(best)) * 50 <= m: return tile
  return best, nr, kc, max(mc // best * best, best), nc


def contraction(body: UOp, graph: bool = False) -> UOp | None:
  """The REDUCE(ADD) of a float32/float64 MUL that body is (through reshapes, which keep the row-major order), with
  no reduction in its operands (a kernel's: graph=True for a node of the whole graph, whose operands' reductions
  become kernels of their own). A REDUCE of a permuted MUL (a matmul's adjoint: g @ w.T, x.T @ g) is returned as
  the REDUCE of the MUL of the permuted operands: the same values, a node of its own."""
  r = body
  while r.op is Ops.RESHAPE: r = r.src[0]
  if r.op is not Ops.REDUCE or r.arg[0] is not Ops.ADD or r.dtype not in (dtypes.float32, dtypes.float64): return None
  if (m := r.src[0]).op is Ops.PERMUTE and m.src[0].op is Ops.MUL:
    r = r.replace(src=(m.src[0].replace(src=tuple(x.permute(m.arg) for x in m.src[0].src)),))
  if r.src[0].op is not Ops.MUL or not r.shape: return None
  below = [u for s in r.src[0].src for u in s.toposort() if u.op in (Ops.REDUCE, Ops.SCAN)]
  if below and not graph: return None
  # (in the graph a scan is a kernel of its own: the contraction reads its buffer)
  scans = {u: buf(0, prod(u.shape), u.dtype).reshape(u.shape) for u in below if u.op is Ops.SCAN}
  return r.substitute(scans) if scans else r


def _classify(r: UOp, ops: list[UOp]):
  """For contraction r with operands ops (r's MUL sources, maybe renumbered): (A and B, their values at the plain
  index, that index, the batch, row, column and K axes, (batch, M, N, K)), or None when it is too small to block."""
  no, full = len(r.shape), r.src[0].shape
  ctx = Ctx()
  idx = tuple(ctx.rng(s) if s > 1 else UOp.const(0) for s in full)
  vals = [simplify(rangeify(o, idx, ctx)) for o in ops]
  reads = lambda k, a: idx[a].op is Ops.RANGE and idx[a] in vals[k].ranges
  inner = max((a for a in range(no) if full[a] > 1 and not (reads(0, a) and reads(1, a))), default=None)
  if inner is not None and reads(0, inner): ops, vals = ops[::-1], vals[::-1]
  batch = tuple(a for a in range(no) if full[a] > 1 and reads(0, a) and reads(1, a))
  cols = tuple(a for a in range(no) if full[a] > 1 and reads(1, a) and not reads(0, a))
  rows = tuple(a for a in range(no) if full[a] > 1 and a not in batch and a not in cols)
  (nb, m, n), k = (prod(full[a] for a in g) for g in (batch, rows, cols)), prod(full[no:])
  if nb * m * n * k < MIN_WORK or min(m, n) < MIN_SIDE or k < 2: return None
  return ops, vals, idx, (batch, rows, cols, tuple(range(no, len(full)))), (nb, m, n, k)


def inner(body: UOp) -> UOp | None:
  """A contraction worth blocking that body reads through elementwise operations and movements only (an epilogue:
  x @ w + b, relu of it, a conv2d with bias, a transposed product): kernelize materializes it, so that it becomes
  a Gemm kernel. Contractions below another reduction (a softmax's, a sum's) are left to the kernel, where they fuse
  with it."""
  if contraction(body) is not None: return None
  stack, seen = [body], set()
  while stack:
    u = stack.pop()
    if u in seen: continue
    seen.add(u)
    if u.op is Ops.REDUCE:
      if worth(u): return u
    elif u.op in ALU or u.op in MOVEMENT: stack.extend(u.src)
  return None


def worth(u: UOp, graph: bool = False) -> bool:
  """Whether REDUCE u (of a kernel, or of the whole graph: `contraction`) is a contraction worth blocking (so
  kernelize leaves its reduction whole: the GEMM's own)."""
  return (c := contraction(u, graph)) is not None and _classify(c, list(c.src[0].src)) is not None


def plan(body: UOp, out: UOp, slots: tuple[int, ...]) -> Gemm | None:
  """The Gemm of a kernel computing shaped `body` into BUFFER `out`, whose buffers are renumbered to local slots by
  position in `slots` (UOp.localize), or None when it is not a contraction worth blocking."""
  r = contraction(body)
  if r is None: return None
  local = {b: UOp(Ops.BUFFER, (), ParamArg(slots.index(b.arg.slot), b.arg.dtype, b.arg.shape))
           for b in r.toposort() if b.op is Ops.BUFFER and b.arg.slot in slots}
  if len(local) != len({b for b in r.toposort() if b.op is Ops.BUFFER}): return None
  if (c := _classify(r, [o.substitute(local) for o in r.src[0].src])) is None: return None
  ops, vals, idx, (batch, rows, cols, kax), sizes = c
  no, full = len(r.shape), r.src[0].shape
  mr, nr, kc, mc, nc = tile = row_tile(sizes[1], tile_sizes(machine(), r.dtype.itemsize))
  strides = [prod(r.shape[a + 1:]) for a in range(no)]
  axes = tuple(tuple((full[a], strides[a]) for a in g) for g in (batch, rows, cols))
  direct = tuple(_strided(v, idx, full, (batch, own, kax)) for v, own in zip(vals, (rows, cols)))
  grid = _grid(sizes, mr, nr, nc, machine().cores)
  return Gemm(r.dtype, sizes, tile, grid, (ops[0], ops[1]), full, (batch, rows, cols, kax), axes,  # type: ignore
              slots.index(out.arg.slot), prod(r.shape), len(slots), (direct[0], direct[1]))


def _strided(v: UOp, rs: tuple[UOp, ...], full: tuple[int, ...],
             groups: tuple[tuple[int, ...], ...]) -> Strided | None:
  """An operand as Strided, from its value v at the plain index rs, when v is a load (maybe cast) of one buffer at
  an address linear in rs; else None."""
  if v.op is Ops.CAST and v.src[0].dtype.kind in "fiu": v = v.src[0]
  if v.op is not Ops.LOAD or v.src[0].op is not Ops.INDEX or v.src[0].src[0].op is not Ops.BUFFER: return None
  addr = v.src[0].src[1]
  if any(u.op is Ops.LOAD for u in addr.toposort()): return None
  zero = {r: UOp.const(0) for r in rs if r.op is Ops.RANGE}
  at = lambda r: simplify(addr.substitute({**zero, r: UOp.const(1)}) if r is not None else addr.substitute(zero))
  base = at(None)
  steps = [at(r) if r.op is Ops.RANGE else base for r in rs]
  if any(u.op is not Ops.CONST for u in steps + [base]): return None
  coefs = tuple(u.arg - base.arg for u in steps)
  linear = UOp.const(base.arg)
  for r, c in zip(rs, coefs):
    if c: linear = linear + r * c
  if (d := simplify(addr - linear)).op is not Ops.CONST or d.arg != 0: return None
  if any(c for a, c in enumerate(coefs) if not any(a in g for g in groups)): return None
  tables = tuple(tuple((full[a], coefs[a]) for a in g) for g in groups)
  return Strided(v.src[0].src[0].arg.slot, v.dtype, base.arg, tables)


def _grid(sizes: tuple[int, int, int, int], mr: int, nr: int, nc: int, cores: int) -> tuple[int, int, int, int]:
  """(row groups, column groups, rows per group, columns per group): at least one task per core where the sizes
  allow, columns split first (each task then packs all of A once per K block, a small part of its work).

  Where A is small beside B (a convolution: 64 x 576 weights, 576 x 25,088 im2col columns), packing it again per
  task costs little, and the columns are split further: into a multiple of the cores, TASKS_PER_CORE each when
  the columns allow. Tasks are taken dynamically, so equal shares and small ones keep both cores busy even when
  the host takes one of them for a while (W6's kernel on 2 cores, medians of C-harness runs: 7 column groups,
  4 + 3, 16.4-21.2 ms; 16 groups 15.5-17.3 ms)."""
  nb, m, n, _ = sizes
  up = lambda a, b: -(-a // b) * b
  ng, mg = -(-n // nc), 1
  if nb * ng < cores:
    want = -(-cores // nb)
    if n >= want * 2 * nr: ng = max(ng, want)
    else: mg = min(want, -(-m // mr))
  if mg == 1 and (nb * ng < TASKS_PER_CORE * cores or nb * ng % cores):
    most = min(n // (2 * nr), n // (4 * m), ng + TASKS_PER_CORE * cores)     # (A's packing per task <= B's / 4)
    tasks = lambda g: nb * -(-n // up(-(-n // g), nr))        # (g groups of columns rounded up to NR)
    if balanced := [g for g in range(ng + 1, most + 1) if tasks(g) % cores == 0]:
      ng = next((g for g in balanced if tasks(g) >= TASKS_PER_CORE * cores), balanced[-1])
  nt, mt = up(-(-n // ng), nr), up(-(-m // mg), mr) if mg > 1 else m
  return -(-m // mt), -(-n // nt), mt, nt


def _pack(x: UOp, full: tuple[int, ...], kax: tuple[int, ...], batch: tuple[int, ...], own: tuple[int, ...],
          sizes: tuple[int, int, int], t: int, most: int, kc: int, slot: int) -> UOp:
  """The lowered program packing a block of operand x (shape `full`: output axes, then the K axes `kax`): slivers
  of t rows (or columns) of its `own` axes, each KC-contiguous: pk[(s * kc + p) * t + q] = x(batch s0, row
  i0 + s * t + q (clamped to the last), k k0 + p). VARs: 0 the batch index, 1 i0, 2 k0, 3 the slivers (at most
  `most`), 4 kc."""
  nb, rows, k = sizes
  vb, vi, vk, vs, vkc = var(0, 0, nb - 1), var(1, 0, rows - 1), var(2, 0, k - 1), var(3, 1, most), var(4, 1, kc)
  rs, rk, rq = range_(most, 0, AxisType.LOOP, vs), range_(kc, 1, AxisType.LOOP, vkc), range_(t, 2)
  idx: list[UOp] = [UOp.const(0)] * len(full)
  def place(axes: tuple[int, ...], flat: UOp) -> None:
    for a, i in zip(axes, unravel(flat, tuple(full[a] for a in axes))): idx[a] = simplify(i)
  place(batch, vb)
  place(own, (vi + rs * t + rq).minimum(rows - 1))
  place(kax, (vk + rk).minimum(k - 1))     # (kc <= K - k0: the clamp only tells the bounds)
  val = rangeify(x, tuple(idx), Ctx())
  pk = buf(slot, most * t * kc, x.dtype)
  return simplify(sink(pk.index((rs * vkc + rk) * t + rq).store(val).end(rs, rk, rq)))


HELPERS = r"""#ifndef MT_GEMM_HELPERS
#define MT_GEMM_HELPERS
#include <stdlib.h>
#include <string.h>
/* off[i] = the offset of flat index i over axes of the given sizes and strides (row-major) */
static void mt_gemm_offsets(int64_t* off, int64_t n, int nax, const int64_t* size, const int64_t* stride) {
  for (int64_t i = 0; i < n; i++) { int64_t t = i, o = 0;
    for (int a = nax - 1; a >= 0; a--) { o += t % size[a] * stride[a]; t /= size[a]; }
    off[i] = o; } }
#endif
"""

def _micro(name: str, ct: str, vb: int, lanes: int, mr: int, nv: int) -> str:
  """The MR x NR register-tile kernel: c[MR*NR] = sum over kc of a sliver column times a b sliver row."""
  v = f"{name}_v"
  acc = [[f"c{r}_{q}" for q in range(nv)] for r in range(mr)]
  bcast = "{" + ", ".join(["x"] * lanes) + "}"
  body = [f"    {v} " + ", ".join(f"b{q} = *(const {v}*)(b + {q * lanes})" for q in range(nv)) + ";"]
  for r in range(mr):
    body.append(f"    x = a[{r}]; av = ({v}){bcast}; " + " ".join(f"{acc[r][q]} = {name}_fma(av, b{q}, {acc[r][q]});"
                                                               for q in range(nv)))
  stores = " ".join(f"memcpy(c + {(r * nv + q) * lanes}, &{acc[r][q]}, {vb});" for r in range(mr) for q in range(nv))
  return (vector_type(name, ct, vb) +
          f"__attribute__((noinline)) static void {name}_micro(int64_t kc, const {ct}* restrict a, "
          f"const {ct}* restrict b, "
          f"{ct}* restrict c) {{\n  {v} " + ", ".join(f"{a} = {{0}}" for row in acc for a in row) + ";\n"
          f"  {ct} x; {v} av;\n  for (int64_t p = 0; p < kc; p++, a += {mr}, b += {nv * lanes}) {{\n"
          + "\n".join(body) + f"\n  }}\n  {stores}\n}}\n")


def _call(fn: str, pack: UOp, args: dict[int, str], checked: bool) -> str:
  """A call of a pack function: its buffers (data<slot>, the pack buffer last), its VARs, checked mode's error."""
  bufs = sorted({u.arg.slot for u in pack.toposort() if u.op is Ops.BUFFER})
  a = [f"data{s}" if s != bufs[-1] else "pk" for s in bufs] + [args[v] for v in variables(pack)]
  return f"{fn}({', '.join(a + (['mt_err'] if checked else []))});"


def _direct(fn: str, d: Strided, ct: str, t: int, rows: int) -> str:
  """The pack function of a Strided operand: the same slivers as its rangeify pack program, copied through the
  offset tables ot (own axes) and kt (K axes, base included) from src (the batch offset added). The copy loops over
  whichever of k and the sliver's t elements is contiguous in memory, and reads runs directly where they are."""
  st = d.src.ctype
  own_unit = bool(d.tables[1]) and d.tables[1][-1][1] == 1
  head = (f"__attribute__((noinline)) static void {fn}(const {st}* restrict src, {ct}* restrict pk, "
          f"const int64_t* restrict ot, "
          f"const int64_t* restrict kt, int64_t i0, int64_t k0, int64_t ns, int64_t kc) {{\n"
          f"  const int64_t* restrict k = kt + k0;\n")
  if own_unit:
    # (a sliver that is not one run, a convolution's pixels across an output row, is copied run by run: the runs are
    # found once per sliver, and each is a contiguous copy; element by element through ot, W6's packing of B took a
    # fifth of its time)
    return head + (
      f"  int64_t c0[{t + 1}], at[{t}];\n"
      f"  for (int64_t s = 0; s < ns; s++) {{\n    int64_t j = i0 + s * {t}, n = 0;\n"
      f"    for (int64_t c = 0; c < {t}; c++) {{\n"
      f"      int64_t off = ot[j + c < {rows} ? j + c : {rows - 1}];\n"
      f"      if (!n || off != at[n - 1] + (c - c0[n - 1])) {{ c0[n] = c; at[n] = off; n++; }}\n    }}\n"
      f"    c0[n] = {t};\n"
      f"    for (int64_t p = 0; p < kc; p++) {{\n"
      f"      const {st}* restrict a = src + k[p]; {ct}* restrict o = pk + (s * kc + p) * {t};\n"
      f"      if (n == 1) {{ a += at[0]; for (int64_t c = 0; c < {t}; c++) o[c] = ({ct})a[c]; }}\n"
      f"      else for (int64_t r = 0; r < n; r++) {{\n"
      f"        const {st}* restrict b = a + at[r]; int64_t c1 = c0[r], w = c0[r + 1] - c1;\n"
      f"        for (int64_t c = 0; c < w; c++) o[c1 + c] = ({ct})b[c]; }}\n"
      f"    }}\n  }}\n}}\n")
  return head + (
    f"  int64_t q = 1;\n  while (q < kc && k[q] == k[0] + q) q++;\n"
    f"  if (q == kc) for (int64_t s = 0; s < ns; s++) {{\n"
    f"    const {st}* restrict a[{t}]; {ct}* restrict o = pk + s * kc * {t};\n"
    f"    for (int64_t r = 0; r < {t}; r++) {{ int64_t i = i0 + s * {t} + r; "
    f"a[r] = src + ot[i < {rows} ? i : {rows - 1}] + k[0]; }}\n"
    f"    for (int64_t p = 0; p < kc; p++) for (int64_t r = 0; r < {t}; r++) o[p * {t} + r] = ({ct})a[r][p];\n"
    f"  }}\n  else for (int64_t s = 0; s < ns; s++) for (int64_t r = 0; r < {t}; r++) {{\n"
    f"    int64_t i = i0 + s * {t} + r;\n"
    f"    const {st}* restrict a = src + ot[i < {rows} ? i : {rows - 1}]; {ct}* restrict o = pk + s * kc * {t} + r;\n"
    f"    for (int64_t p = 0; p < kc; p++) o[p * {t}] = ({ct})a[k[p]];\n  }}\n}}\n")


def render(g: Gemm, name: str, checked: bool = False) -> str:
  """The C of the kernel: the two pack functions, the micro-kernel and the blocked driver `name`, whose
  parameters are a loop kernel's (its buffers in local slot order, then checked mode's error buffer)."""
  ct = g.dtype.ctype
  nb, m, n, k = g.sizes
  mr, nr, kc, mc, nc = g.tile
  mg, ng, mt, nt = g.grid
  vb = machine().vector_bytes
  lanes = vb // g.dtype.itemsize
  params = [f"{'' if s == g.out else 'const '}{ct}* restrict data{s}" for s in range(g.n_slots)]
  if checked: params.append("int64_t* restrict mt_err")
  def table(v: str, axes) -> str:
    sz = ", ".join(str(s) for s, _ in axes) or "1"
    st = ", ".join(str(s) for _, s in axes) or "0"
    return f"  {{ static const int64_t sz[] = {{{sz}}}, st[] = {{{st}}}; mt_gemm_offsets({v}, " \
           f"{prod(s for s, _ in axes)}, {len(axes)}, sz, st); }}\n"
  store = f"data{g.out}[o] = pc ? data{g.out}[o] + tile[r * NR + q] : tile[r * NR + q];"
  if checked: store = f"if ((uint64_t)o < {g.out_size}ULL) {store} else mt_oob(mt_err, {g.out}, o);"
  # each operand is packed by its rangeify pack program, or (a Strided operand, unless checked) through tables
  packs, calls, ntab, tables = "", [], nb + m + n, ""
  for fn, b, d, t, own, i0, cnt in ((f"{name}_pa", False, g.direct[0], mr, m, "ic", "ms"),
                                    (f"{name}_pb", True, g.direct[1], nr, n, "jc", "ns")):
    if d is None or checked:
      packs += render_function(prog := g.pack(b), fn, checked)
      calls.append(_call(fn, prog, {0: "b", 1: i0, 2: "pc", 3: cnt, 4: "kc"}, checked))
      continue
    bt, ot, kt = (f"boff + {ntab + o}" for o in (0, nb, nb + own))
    tables += table(f"({bt})", d.tables[0]) + table(f"({ot})", d.tables[1]) + table(f"({kt})", d.tables[2])
    tables += f"  for (int64_t i = 0; i < K; i++) ({kt})[i] += {d.base};\n"
    ntab += nb + own + k
    packs += _direct(fn, d, ct, t, own)
    calls.append(f"{fn}(data{d.slot} + ({bt})[b], pk, {ot}, {kt}, {i0}, pc, {cnt}, kc);")
  pa, pb = calls
  up = lambda a, b: -(-a // b) * b
  apanel, bpanel = up(min(mc, up(mt, mr)) * min(kc, k), 64), min(nc, up(nt, nr)) * min(kc, k)   # (B 64-byte aligned)
  return (HELPERS + packs + _micro(name, ct, vb, lanes, mr, nr // lanes) +
          f"void {name}({', '.join(params)}) {{\n"
          f"  enum {{ MR = {mr}, NR = {nr}, KC = {kc}, MC = {mc}, NC = {nc} }};\n"
          f"  const int64_t M = {m}, N = {n}, K = {k}, MG = {mg}, NG = {ng}, MT = {mt}, NT = {nt};\n"
          f"  int64_t* boff = malloc(sizeof(int64_t) * {ntab});\n  if (!boff) abort();\n"
          f"  int64_t *roff = boff + {nb}, *coff = roff + M;\n"
          + table("boff", g.axes[0]) + table("roff", g.axes[1]) + table("coff", g.axes[2]) + tables +
          f"  #pragma omp parallel if(!mt_serial && {nb * mg * ng} > 1)\n  {{\n"
          # each thread's pack buffers, 64-byte aligned (the micro-kernel loads whole vectors from them)
          f"  char* raw = malloc(sizeof({ct}) * {apanel + bpanel} + 128);\n  if (!raw) abort();\n"
          f"  {ct}* pa = ({ct}*)(((uintptr_t)raw + 63) & ~(uintptr_t)63);\n"
          f"  {ct}* pbuf = pa + {apanel};\n"
          f"  {ct} tile[MR * NR];\n"
          f"  #pragma omp for schedule(dynamic)\n"
          f"  for (int64_t t = 0; t < {nb * mg * ng}; t++) {{\n"
          f"    int64_t b = t / (MG * NG), m0 = t / NG % MG * MT, n0 = t % NG * NT;\n"
          f"    int64_t m1 = m0 + MT < M ? m0 + MT : M, n1 = n0 + NT < N ? n0 + NT : N;\n"
          f"    for (int64_t jc = n0; jc < n1; jc += NC) {{\n"
          f"      int64_t ncb = n1 - jc < NC ? n1 - jc : NC, ns = (ncb + NR - 1) / NR;\n"
          f"      for (int64_t pc = 0; pc < K; pc += KC) {{\n"
          f"        int64_t kc = K - pc < KC ? K - pc : KC;\n"
          f"        {{ {ct}* pk = pbuf; {pb} }}\n"
          f"        for (int64_t ic = m0; ic < m1; ic += MC) {{\n"
          f"          int64_t mcb = m1 - ic < MC ? m1 - ic : MC, ms = (mcb + MR - 1) / MR;\n"
          f"          {{ {ct}* pk = pa; {pa} }}\n"
          f"          for (int64_t jr = 0; jr < ns; jr++) for (int64_t ir = 0; ir < ms; ir++) {{\n"
          f"            int64_t rn = mcb - ir * MR < MR ? mcb - ir * MR : MR;\n"
          f"            int64_t qn = ncb - jr * NR < NR ? ncb - jr * NR : NR;\n"
          f"            const int64_t *ro = roff + ic + ir * MR, *co = coff + jc + jr * NR;\n"
          # the output rows are fetched into L2 while the tile is computed (they come from L3 or memory; fetched
          # into L1, the 14 rows of a tile 4 KiB apart (N=1024 float32) share one set and evict each other)
          f"            for (int64_t r = 0; r < rn; r++) {{ {ct}* p = data{g.out} + boff[b] + ro[r] + co[0]; "
          f"__builtin_prefetch(p, 0, 2); __builtin_prefetch(p + qn - 1, 0, 2); }}\n"
          f"            {name}_micro(kc, pa + ir * MR * kc, pbuf + jr * NR * kc, tile);\n"
          + ("" if checked else
          # (a tile of contiguous output columns adds row by row in vector code, the last row block's too: conv2d's
          # 64 output channels end in a block of 8 rows, a fifth of its tiles)
          f"            if (qn == NR && co[NR - 1] - co[0] == NR - 1) {{\n"
          f"              for (int64_t r = 0; r < rn; r++) {{\n"
          f"                {ct}* restrict p = data{g.out} + boff[b] + ro[r] + co[0];\n"
          f"                if (pc) for (int64_t q = 0; q < NR; q++) p[q] += tile[r * NR + q];\n"
          f"                else for (int64_t q = 0; q < NR; q++) p[q] = tile[r * NR + q]; }}\n"
          f"              continue;\n            }}\n") +
          f"            for (int64_t r = 0; r < rn; r++) for (int64_t q = 0; q < qn; q++) {{\n"
          f"              int64_t o = boff[b] + ro[r] + co[q]; {store} }}\n"
          f"          }}\n        }}\n      }}\n    }}\n  }}\n  free(raw);\n  }}\n  free(boff);\n}}\n")
