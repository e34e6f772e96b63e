"""split: an output loop whose body compares its index with constants becomes one loop per stretch of the index
where every comparison has one value (index splitting).

A pad reads its input at a clamped index and selects the fill where the index is outside; a concatenation reads
each part that way and adds the parts. Per element, that is two comparisons, two clamps and a select per part,
and the clamped loads keep gcc from vectorizing the loop: a (8, 64, 56, 56) pad by 1 ran at 8 GB/s. Split where
the comparisons change, each stretch's loop has them constant: simplify folds them, the clamps (whose bounds the
stretch's range now meets) and the select, and the loop becomes a plain copy of a contiguous run.

Contract: `split_loops(program)` returns a program that stores the same values at the same addresses. It splits the
innermost loop of an END whose statement holds no loops of its own (no END, accumulator or AFTER below it), that no
other END closes and no AFTER waits for, of concrete size and kind LOOP, whose body reads no buffer it writes (the
stretches are sibling loops, in no promised order), at every point where a comparison (< or <=) of an expression
affine in that loop's index alone (with integer constants) changes its value, when there are at most MAX_STRETCHES
stretches. Each stretch is a loop of its own (a constant where it is one element long) nested where the split loop
was; other loops and programs are returned as they are.
"""
from __future__ import annotations
from minitensor.backend.symbolic import affine, simplify
from minitensor.backend.uop import AxisType, Ops, UOp, range_

MAX_STRETCHES = 8


def split_loops(program: UOp) -> UOp:
  """program (a SINK of the loop world) with each splittable loop split at its comparisons' switch points."""
  nodes = program.toposort()
  ends = [u for u in nodes if u.op is Ops.END]
  closers: dict[UOp, int] = {}
  for e in ends:
    for r in e.src[1:]: closers[r] = closers.get(r, 0) + 1
  fresh = 1 + max((u.arg.idx for u in nodes if u.op is Ops.RANGE), default=-1)
  ordered = {s for u in nodes if u.op is Ops.AFTER for s in u.src[1:]}      # ENDs that statements must follow
  swap: dict[UOp, UOp] = {}
  for e in ends:
    r = max(e.src[1:], key=lambda x: x.arg.idx)        # the innermost loop this END closes
    if r.arg.kind is not AxisType.LOOP or r.arg.var is not None or closers[r] != 1 or e in ordered: continue
    body = e.src[0].toposort()
    if any(u.op in (Ops.END, Ops.AFTER, Ops.ALLOC) for u in body): continue
    written = {u.src[0].src[0].arg.slot for u in body if u.op is Ops.STORE}
    if any(u.op is Ops.LOAD and u.src[0].src[0].arg.slot in written for u in body): continue     # (in any order)
    cuts = _cuts(body, r)
    if not cuts or len(cuts) + 1 > MAX_STRETCHES: continue
    stretches = []
    for lo, hi in zip([0, *cuts], [*cuts, r.arg.size]):
      if hi - lo == 1: stretches.append(simplify(e.src[0].substitute({r: UOp.const(lo, r.dtype)})))
      else:
        s = range_(hi - lo, fresh)
        fresh += 1
        stretches.append(simplify(e.src[0].substitute({r: s + lo})).end(s))
    rest = tuple(x for x in e.src[1:] if x is not r)
    swap[e] = UOp(Ops.SINK, tuple(stretches)).end(*rest)
  return program.substitute(swap) if swap else program


def _cuts(body: list[UOp], r: UOp) -> list[int]:
  """The indices in (0, size of r) where a comparison in body of an expression affine in r alone changes value."""
  n, cuts = r.arg.size, set()
  for u in body:
    if (u.op is not Ops.CMPLT and u.op is not Ops.CMPLE) or u.src[0].dtype is not r.dtype: continue
    if (a := affine(simplify(u.src[0] - u.src[1]), (r,))) is None or a[1][0] == 0: continue
    c0, (slope,) = a
    holds = (lambda x: slope * x + c0 < 0) if u.op is Ops.CMPLT else (lambda x: slope * x + c0 <= 0)
    lo, hi = 0, n            # the first index in (0, n) where the comparison's value differs from its value at 0
    first = holds(0)
    while hi - lo > 1:
      mid = (lo + hi) // 2
      if holds(mid) == first: lo = mid
      else: hi = mid
    if hi < n: cuts.add(hi)
  return sorted(cuts)
