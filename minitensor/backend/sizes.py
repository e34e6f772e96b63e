"""sizes: the sizes a symbolic lowering's index arithmetic uses.

A symbolic program serves every graph of its structure (realize.structure): each distinct size >= 2 of the graph
is a VAR, the C argument s<k> with k its position in the structure's sizes. opt.py's actions split a loop by a
factor f; at a symbolic size n the factor need not divide n, so the loop runs over n // f blocks of f and then a
tail of n % f iterations (rangeify's tails). Those two are kernel arguments too: VARs numbered after the graph's,
each with the rule the runtime computes it by from the graph's sizes (`derived`, kept in the Plan: realize.Plan
.derived), so no kernel divides in its loop heads and the C compiler sees each block's trip count as a constant.
"""
from __future__ import annotations
from minitensor.backend.uop import Ops, UOp, var


class Sizes:
  """A symbolic lowering's sizes: `of`, each size of the graph (>= 2, as it was first seen) -> its VAR; `derived`,
  the quotient and remainder VARs of splits, (VAR index, factor, is remainder) -> VAR, in the order they were made."""

  def __init__(self, sizes: tuple[int, ...], top: int):
    self.of: dict[int, UOp] = {n: var(k, 2, top) for k, n in enumerate(sizes)}
    self.derived: dict[tuple[int, int, bool], UOp] = {}

  def get(self, n: int) -> UOp | None: return self.of.get(n)

  def split(self, v: UOp, f: int) -> tuple[UOp, UOp]:
    """(v // f, v % f) of the size VAR v as VARs: the blocks and the tail of a loop over v split by f."""
    assert v.op is Ops.VAR and f >= 2, (v, f)
    return self._derived(v, f, False), self._derived(v, f, True)

  def _derived(self, v: UOp, f: int, rem: bool) -> UOp:
    key = (v.arg.idx, f, rem)
    if (d := self.derived.get(key)) is None:
      lo, hi = v.arg.lo, v.arg.hi
      bounds = (0, min(f - 1, hi)) if rem else (lo // f, hi // f)
      d = self.derived[key] = var(len(self.of) + len(self.derived), *bounds)
    return d

  def table(self) -> tuple[tuple[int, int, int], ...]:
    """The derived sizes as the plan keeps them: (graph size position, factor, 1 for the remainder else 0), in
    VAR index order (the k-th is size s<len(of) + k>)."""
    return tuple((k, f, int(rem)) for (k, f, rem) in self.derived)


def extend(sizes: tuple[int, ...], derived: tuple[tuple[int, int, int], ...]) -> tuple[int, ...]:
  """The graph's sizes followed by the derived ones a plan's kernels take (Sizes.table)."""
  return sizes + tuple(sizes[k] % f if rem else sizes[k] // f for k, f, rem in derived)
