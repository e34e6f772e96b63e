"""ends: unrolled copies of a loop's body each END the same shared loop; merge_ends makes them one END over a SINK
(the renderer opens each loop once)."""
from __future__ import annotations
from minitensor.backend.uop import Ops, UOp
from minitensor.backend.walk import PatternMatcher, UPat, graph_rewrite


def merge_ends(root: UOp) -> UOp:
  """Unrolled copies each END the same shared loop. Merge them into one END over a SINK."""
  groups: dict[tuple, list[UOp]] = {}
  for u in root.toposort():
    if u.op is Ops.END: groups.setdefault(u.src[1:], []).append(u)
  if all(len(g) == 1 for g in groups.values()): return root
  ctx = _Ends(groups)
  return graph_rewrite(root, _ends, ctx, ctx.memo)


class _Ends:
  """merge_ends' context: the ENDs of each loop (by their ranges, which rewriting leaves alone), the merged END of
  each loop once built, and the walk's memo, which building a merged END continues (its bodies are rewritten too)."""
  __slots__ = ("groups", "merged", "memo")

  def __init__(self, groups: dict[tuple, list[UOp]], merged: dict[tuple, UOp] | None = None, memo: dict | None = None):
    self.groups = groups
    self.merged = {} if merged is None else merged
    self.memo = {} if memo is None else memo

  def merge(self, e: UOp) -> UOp | None:
    """The one END of e's loop over every body that ends it (None: e is that END, or the loop's only one)."""
    loop = e.src[1:]
    if len(group := self.groups.get(loop, ())) < 2: return None
    if (m := self.merged.get(loop)) is None:
      bodies = [graph_rewrite(g.src[0], _ends, self, self.memo) for g in group]
      m = self.merged[loop] = UOp(Ops.END, (UOp(Ops.SINK, tuple(bodies)), *loop))
    return None if m is e else m


_ends = PatternMatcher([(UPat(Ops.END, name="e"), lambda ctx, e: ctx.merge(e))])
