"""sizes: the sizes a symbolic lowering's index arithmetic uses.

A symbolic program serves every graph of its structure (realize.structure): each distinct size >= 2 of the graph
is a VAR, the C argument s<k> with k its position in the structure's sizes. opt.py's actions split a loop by a
factor f; at a symbolic size n the factor need not divide n, so the loop runs over n // f blocks of f and then a
tail of n % f iterations (rangeify's tails), or over ceil(n / f) blocks whose last one is partial (a VECTOR
axis: its lanes run min(f, n - block * f) iterations). Those counts are kernel arguments too: VARs numbered after
the graph's, each with the rule the runtime computes it by from the graph's sizes (`derived`, kept in the Plan:
plans.Plan.derived), so no kernel divides in its loop heads and each whole block's trip count is a constant.
"""
from __future__ import annotations
from minitensor.backend.uop import Ops, UOp, var

ORDER_LANES = 8
# elements a small graph's reductions read in all from which its symbolic program adds them in lanes (AMD EPYC Zen 5,
# float64, a specialization's kernel, medians of 500 runs, without / with lanes: the sum of (20, 2000) 23.1 / 6.6 us,
# of (200, 200) 22.0 / 6.4 us, row std of (200, 200) 13.0 / 7.0 us; (64, 7) 2.6 us either way), while lanes double
# a small program's C and its lowering (a softmax of (5, 7): 1.0 -> 2.0 ms of lowering, 1.0 -> 2.7 KB of C)
ORDER_WORK = 4096


def order_lanes(reduced: int) -> int:
  """The lanes of the ordered reduces (reduce_rule.ordered) of a small graph's symbolic program whose reductions read
  `reduced` elements in all: ORDER_LANES from ORDER_WORK on, else 0 (each adds its terms in order). The class is part
  of the graph's structural key (realize.structure), so each symbolic program serves graphs of one class; its plan
  keeps its lanes, which its specializations take (realize.specialize)."""
  return ORDER_LANES if reduced >= ORDER_WORK else 0


QUOTIENT, REMAINDER, CEILING = 0, 1, 2          # how a derived size follows from a graph size n and a factor f
KINDS = (QUOTIENT, REMAINDER, CEILING)


class Sizes:
  """A symbolic lowering's sizes: `of`, each size of the graph (>= 2, as it was first seen) -> its VAR; `derived`,
  the VARs of splits, (VAR index, factor, QUOTIENT | REMAINDER | CEILING) -> VAR, in the order they were made."""

  def __init__(self, sizes: tuple[int, ...], top: int):
    self.of: dict[int, UOp] = {n: var(k, 2, top) for k, n in enumerate(sizes)}
    self.derived: dict[tuple[int, int, int], UOp] = {}

  def get(self, n: int) -> UOp | None: return self.of.get(n)

  def split(self, v: UOp, f: int) -> tuple[UOp, UOp]:
    """(v // f, v % f) of the size VAR v as VARs: the whole blocks and the tail of a loop over v split by f."""
    return self.derive(v, f, QUOTIENT), self.derive(v, f, REMAINDER)

  def derive(self, v: UOp, f: int, kind: int) -> UOp:
    """The VAR of v // f, v % f or ceil(v / f) (kind) for the size VAR v of the graph."""
    assert v.op is Ops.VAR and v.arg.idx < len(self.of) and f >= 2, (v, f)
    key = (v.arg.idx, f, kind)
    if (d := self.derived.get(key)) is None:
      lo, hi = v.arg.lo, v.arg.hi
      bounds = (0, min(f - 1, hi)) if kind == REMAINDER else (lo // f, hi // f) if kind == QUOTIENT else \
        (-(-lo // f), -(-hi // f))
      d = self.derived[key] = var(len(self.of) + len(self.derived), *bounds)
    return d

  def table(self) -> tuple[tuple[int, int, int], ...]:
    """The derived sizes as the plan keeps them: (graph size position, factor, kind), in VAR index order (the k-th
    is size s<len(of) + k>)."""
    return tuple(self.derived)


def extend(sizes: tuple[int, ...], derived: tuple[tuple[int, int, int], ...]) -> tuple[int, ...]:
  """The graph's sizes followed by the derived ones a plan's kernels take (Sizes.table)."""
  return sizes + tuple(sizes[k] // f if kind == QUOTIENT else sizes[k] % f if kind == REMAINDER else -(-sizes[k] // f)
                       for k, f, kind in derived)
