"""cost: what a lowering costs, read by kernelize's cost model (the lowering's Ctx keeps its memo and reduce tables;
this reads them once the program is built)."""
from __future__ import annotations
from typing import NamedTuple
from minitensor.backend.ranges import Ctx
from minitensor.backend.uop import ALU, AxisType, Ops, UOp, prod


class Lowering(NamedTuple):
  """What a lowering costs, for kernelize's cost model (the Ctx's memo and reduce tables stay rangeify's own).
  reduce_work: per REDUCE lowered with loops, the iterations its accumulators run over all the places it was put
  (the output loops around each times its reduce size); evaluations: per ALU node of the shaped graph, the times the
  program computes it (the output loops around each place its value was put)."""
  reduce_work: dict[UOp, int]
  evaluations: dict[UOp, int]


def summarize(ctx: Ctx, program: UOp) -> Lowering:
  """The Lowering of `program`, lowered with ctx. A loop lives inside the loops of the index that created it: an
  accumulator's loops are its index's loops and the loops around those."""
  kinds = (AxisType.LOOP, AxisType.THREAD)
  out_ranges = sorted((r for r in program.toposort() if r.op is Ops.RANGE and r.arg.kind in kinds),
                      key=lambda r: r.arg.idx)
  around: dict[UOp, frozenset] = {r: frozenset(out_ranges[:k]) for k, r in enumerate(out_ranges)}
  def closure(rs: frozenset) -> frozenset: return rs.union(*(around.get(r, frozenset()) for r in rs))
  work: dict[UOp, int] = {}
  for (u, rs), parts in ctx.reduce_ranges.items():
    enclosing = closure(rs)
    # (a split's tail loop runs after the blocks, inside the same loops: reduce_rule._tailed)
    tail = [t.loop] if (t := ctx.tails.get((u, rs))) is not None else []
    for r in [r for r, _ in parts] + tail:
      if r.op is Ops.RANGE: around[r] = enclosing
    work[u] = work.get(u, 0) + prod(r.arg.size for r in enclosing) * prod(u.src[0].shape[len(u.shape):])
  evals: dict[UOp, int] = {}
  live: dict[UOp, frozenset] = {}
  for (u, _), v in ctx.memo.items():
    if u.op in ALU: evals[u] = evals.get(u, 0) + prod(r.arg.size for r in closure(_open(v, live)))
  return Lowering(work, evals)


def _open(v: UOp, live: dict[UOp, frozenset]) -> frozenset:
  """The loops v is inside: the RANGEs it mentions that no END on the way has closed (live: the walk's memo)."""
  for u in v.toposort(live):
    o = frozenset((u,)) if u.op is Ops.RANGE else frozenset().union(*(live[s] for s in u.src))
    live[u] = o - frozenset(u.src[1:]) if u.op is Ops.END else o
  return live[v]
