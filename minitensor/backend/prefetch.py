"""prefetch: the rows a loop fetches ahead (render_c emits them at the top of the loop).

Hardware prefetchers follow a stream only within a 4 KiB page, so each new row of a row pass (a row sum, a column
sum's rows, a layernorm's or softmax's passes over each row) otherwise starts cold from memory. Two kinds:
`rows_to_prefetch`, the whole next row of a loop over dense rows of concrete size, and `heads_to_prefetch`, the
first lines of the rows a reduce loop reads a few iterations ahead (a column sum's block of each row, at concrete
or symbolic sizes), which starts the hardware's stream before the loop gets there.
"""
from __future__ import annotations
import math
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import AxisType, Ops, UOp, bounds, memory_of

ROW_PREFETCH = (512, 1 << 15)    # the bytes of a row that _rows prefetches: at least a few lines, at most half L1
_ROW_OPS = (Ops.ADD, Ops.MUL, Ops.CONST, Ops.RANGE, Ops.VAR)
# heads_to_prefetch: how many iterations of the reduce loop ahead (a jammed column sum steps 4 rows an iteration:
# 16 rows), and the shortest block of a row (bytes) worth it
HEAD_AHEAD = 4
HEAD_MIN_RUN = 256
PAGE = 4096



def rows_to_prefetch(prog: list) -> dict[UOp, list[tuple[int, UOp, int, int, int]]]:
  """The rows to prefetch at the top of each loop: a loop whose body reads a row of a buffer in inner loops (a row
  sum's, a column sum's rows, or a layernorm's and softmax's passes over each row) has the next iteration's row
  fetched while it works on this one. Per loop r: (buffer slot, the row's start at this iteration, its length n,
  itemsize, 1 if the kernel also writes that buffer) of every load (or store) whose address is start + an offset
  the inner loops keep within 0..n-1, reaching at least n / 2 elements, where start moves by n per iteration of r
  (consecutive dense rows: the next one is fetched whole). Hardware prefetchers follow a stream only within a 4 KiB
  page, so each new row otherwise started cold from memory. In a C harness (2 threads, Zen 3, medians) a (4096,
  1024) layernorm took 1.6-1.8 ms against 1.9-2.5 ms; softmax, whose output row is read back (the stash) and
  fetched for writing, 2.4-2.7 against 2.7-2.9 ms; the row sums 0.52-0.54 against 0.69-0.76 ms; the column sum's
  first kernel 0.48-0.52 against 0.51-0.58 ms. A row pass (a loop that fetches a row it reads) also fetches, for
  writing, the next row it stores: layernorm's whole call, 6 alternating runs of each, 1.66-2.47 ms (median 1.9)
  against 2.05-2.28 ms (2.1); softmax's 3.48-3.78 against 3.53-4.37 ms."""
  stack: list[tuple] = []         # per open loop: (range, ranges opened inside, loads and stores inside)
  out: dict[UOp, list] = {}
  stored = {b.arg.slot for s in prog
            if s.kind == "node" and s.u.op is Ops.STORE and (b := accessed(s.u)).op is Ops.BUFFER}
  for s in prog:
    if s.kind == "open":
      for f in stack: f[1].add(s.u)
      stack.append((s.u, set(), []))
    elif s.kind == "close":
      r, inner, accesses = stack.pop()
      if rows := _row_accesses(r, inner, accesses, stored): out[r] = rows
    elif s.u.op is Ops.LOAD or s.u.op is Ops.STORE:
      for f in stack: f[2].append(s.u)
  return out


def accessed(u: UOp) -> UOp:
  """The BUFFER or ALLOC a LOAD or STORE accesses."""
  return memory_of(u.src[0].src[0])


def _row_accesses(r: UOp, inner: set, accesses: list[UOp], stored: set[int]) -> list[tuple[int, UOp, int, int, int]]:
  rows: dict[tuple, tuple] = {}
  read = False
  for x in accesses:
    b, addr = accessed(x), x.src[0].src[1]
    if b.op is not Ops.BUFFER or r not in addr.ranges or not inner & addr.ranges: continue
    # (an address over a symbolic size: its rows' length is a size too, not one this loop can fetch ahead; and
    # simplifying it for every loop cost 1.8 ms a kernel, 12 % of a cold run of the README's hypothesis example)
    if any(u.op is Ops.VAR for u in addr.toposort()): continue
    start = simplify(addr.substitute({q: UOp.const(0, q.dtype) for q in inner & addr.ranges}))
    if r not in start.ranges or any(u.op not in _ROW_OPS for u in start.toposort()): continue
    step = simplify(start.substitute({r: r + 1}) - start)
    if step.op is not Ops.CONST: continue
    lo, hi = bounds(simplify(addr - start))
    reads = math.prod(q.arg.size for q in inner & addr.ranges)
    if not (0 <= lo <= hi < step.arg and 2 * reads >= step.arg): continue       # (a dense row: not a tile's column)
    n, size = step.arg, b.dtype.itemsize
    if ROW_PREFETCH[0] <= n * size <= ROW_PREFETCH[1]:
      read = read or x.op is Ops.LOAD
      rows.setdefault((b.arg.slot, start), (b.arg.slot, start, n, size, int(b.arg.slot in stored)))
  return list(rows.values()) if read else []      # (a row pass; a tiled transpose's output strip is not one)


def heads_to_prefetch(prog: list) -> dict[UOp, list[tuple[int, UOp, int]]]:
  """The row heads to prefetch at the top of each reduce loop: per loop r, (buffer slot, the address HEAD_AHEAD
  iterations of r ahead, itemsize) of every LOAD in a VECTOR loop directly inside r that reads a contiguous block of
  at least HEAD_MIN_RUN bytes along its lanes, from a start that r moves by a page or more (or by a symbolic size)
  per iteration: the rows of a column sum, each read in a block of columns. Its first two lines are fetched; the
  hardware then streams the rest of the block. In-process, alternating with the same (4096, 1024) float32 input
  (AMD EPYC Zen 4, 2 threads, medians of 60 x 5 calls, three runs): the symbolic column sum's kernel 231-239 us
  without, 189-200 with; a C harness's column blocks 194-209 -> 175-182 us (its row blocks 176-228). Loops that
  rows_to_prefetch fetches whole rows for are left to it."""
  stack: list[UOp] = []
  out: dict[UOp, dict[tuple, tuple[int, UOp, int]]] = {}
  for s in prog:
    if s.kind == "open": stack.append(s.u)
    elif s.kind == "close": stack.pop()
    elif s.u.op is Ops.LOAD and len(stack) >= 2 and stack[-1].arg.kind is AxisType.VECTOR and \
        stack[-2].arg.kind is AxisType.REDUCE:
      lane, r = stack[-1], stack[-2]
      b, addr = accessed(s.u), s.u.src[0].src[1]
      size = b.dtype.itemsize if b.op is Ops.BUFFER else 0
      if not size or lane.arg.size * size < HEAD_MIN_RUN or r not in addr.ranges: continue
      # (no simplify: on a symbolic address it cost 45 ms a column sum's kernel; the address is start + lane)
      if (start := _without(addr, lane)) is None or any(u.op not in _ROW_OPS for u in start.toposort()) or \
          (step := _slope(start, r)) is None or \
          (step.op is Ops.CONST and abs(step.arg) * size < PAGE):
        continue
      ahead = start + step * HEAD_AHEAD
      out.setdefault(r, {}).setdefault((b.arg.slot, ahead), (b.arg.slot, ahead, size))
  return {r: list(v.values()) for r, v in out.items()}


def _without(x: UOp, lane: UOp) -> UOp | None:
  """x, a sum with lane as one of its terms (at any depth of ADDs) and nowhere else, without that term; else None."""
  if x.op is not Ops.ADD: return None
  a, b = x.src if lane in x.src[0].ranges else x.src[::-1]
  if lane in b.ranges: return None
  if a is lane: return b
  return None if (rest := _without(a, lane)) is None else rest + b


def _slope(x: UOp, r: UOp) -> UOp | None:
  """How far x (sums and products of constants, sizes and loops) moves when loop r steps by one: a CONST or a
  product of sizes, or None where it is not linear in r or does not move (no simplify: the renderer's C compiler
  folds the head's address)."""
  if r not in x.ranges: return None
  if x is r: return UOp.const(1, r.dtype)
  if x.op is Ops.ADD:
    parts = [p for p in (_slope(s, r) for s in x.src) if p is not None]
    if len(parts) != sum(r in s.ranges for s in x.src): return None
    if len(parts) == 1: return parts[0]
    if parts[0].op is Ops.CONST and parts[1].op is Ops.CONST:
      return UOp.const(parts[0].arg + parts[1].arg, r.dtype) if parts[0].arg + parts[1].arg else None
    return parts[0] + parts[1]
  if x.op is Ops.MUL and sum(r in s.ranges for s in x.src) == 1:
    inner, k = (x.src[0], x.src[1]) if r in x.src[0].ranges else (x.src[1], x.src[0])
    if (d := _slope(inner, r)) is None or any(u.op is Ops.RANGE for u in k.toposort()): return None
    if d.op is Ops.CONST and k.op is Ops.CONST: return UOp.const(d.arg * k.arg, r.dtype)
    return k if d.op is Ops.CONST and d.arg == 1 else d * k
  return None
