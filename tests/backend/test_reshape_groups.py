"""ranges.reshape_groups: a RESHAPE's index map cut into independent pieces (kept axes pass their index through),
checked against NumPy's own ravel/unravel at every index, and, in a symbolic program, cut only where the cut holds
at every size the program serves."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend.ranges import apply_movement_op, reshape_groups
from minitensor.backend.runtime import stats
from minitensor.backend.uop import Ops, UOp, buf, prod, var


@st.composite
def reshapes(draw):
  """A source and a target shape of the same element count: factors grouped two ways, 1s put anywhere."""
  factors = draw(st.lists(st.integers(1, 4), min_size=0, max_size=5))
  def grouping():
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(factors) - 1)), max_size=3))) if len(factors) > 1 else []
    parts = [prod(factors[a:b]) for a, b in zip([0, *cuts], [*cuts, len(factors)])] if factors else []
    for _ in range(draw(st.integers(0, 2))): parts.insert(draw(st.integers(0, len(parts))), 1)
    return tuple(parts)
  return grouping(), grouping()


@settings(max_examples=300, deadline=None)
@given(reshapes())
def test_the_pieces_map_every_index_as_numpy_does(case):
  src, dst = case
  groups = reshape_groups(src, dst)
  assert [i for (i0, i1), _ in groups for i in range(i0, i1)] == list(range(len(src)))
  assert [j for _, (j0, j1) in groups for j in range(j0, j1)] == list(range(len(dst)))
  for (i0, i1), (j0, j1) in groups: assert prod(src[i0:i1]) == prod(dst[j0:j1])
  r = buf(0, prod(src)).reshape(src).reshape(dst)
  if r.op is not Ops.RESHAPE: return                   # (the same shape: no reshape is built)
  src, dst = r.src[0].shape, r.shape                   # (a () source is the flat buffer's (1,))
  for k in range(prod(dst)):
    at = np.unravel_index(k, dst) if dst else ()
    got = apply_movement_op(r, tuple(UOp.const(int(v)) for v in at))
    assert all(g.op is Ops.CONST for g in got)
    flat = np.ravel_multi_index(at, dst) if dst else 0
    want = np.unravel_index(flat, src) if src else ()
    assert tuple(g.arg for g in got) == tuple(int(v) for v in want), (src, dst, at)


def test_kept_axes_and_ones_are_pieces_of_their_own():
  assert reshape_groups((8, 64, 58, 58), (8, 64, 58, 1, 58)) == \
    [((0, 1), (0, 1)), ((1, 2), (1, 2)), ((2, 3), (2, 3)), ((3, 3), (3, 4)), ((3, 4), (4, 5))]
  assert reshape_groups((8, 64, 3, 56, 177), (8, 64, 3, 56, 3, 59))[-1] == ((4, 5), (4, 6))
  assert reshape_groups((1722368,), (8, 64, 58, 58)) == [((0, 1), (0, 4))]
  assert reshape_groups((4, 0), (0, 4)) == [((0, 2), (0, 2))]           # (no element: one piece)


def test_a_symbolic_cut_needs_the_same_sizes_on_both_sides():
  """At (2, 3, 6) -> (6, 2, 3) the element counts 2 * 3 and 6 agree, but a program whose sizes are VARs also serves
  (4, 5, 7) -> (7, 4, 5), where they do not: no cut there."""
  tokens: dict = {}
  def size(n): return n if n < 2 else tokens.setdefault(n, var(len(tokens), 2, 1 << 20))
  assert reshape_groups((2, 3, 6), (6, 2, 3)) == [((0, 2), (0, 1)), ((2, 3), (1, 3))]
  assert reshape_groups((2, 3, 6), (6, 2, 3), size) == [((0, 3), (0, 3))]
  assert reshape_groups((5, 2, 3), (5, 6), size) == [((0, 1), (0, 1)), ((1, 3), (1, 2))]


def test_one_symbolic_program_serves_reshapes_whose_counts_agree_by_chance(monkeypatch):
  """The three graphs share one compiled program (a graph hit each after the first); each matches NumPy. (Checked
  mode compiles per shape: the test sets the default mode.)"""
  monkeypatch.delenv("MINITENSOR_CHECK", raising=False)
  for cases in ([((2, 3, 6), (6, 2, 3)), ((4, 5, 7), (7, 4, 5)), ((3, 5, 8), (8, 3, 5))],
                [((16, 32, 512), (512, 16, 32)), ((20, 30, 700), (700, 20, 30)), ((24, 20, 600), (600, 24, 20))]):
    c0, hits = stats.compiles, stats.graph_hits       # (the second: graphs over 64K elements, a large program)
    for src, dst in cases:
      x = np.arange(prod(src), dtype=np.float32).reshape(src)
      got = np.asarray(((mt.asarray(x) * 2).reshape(dst) + 1).T)
      np.testing.assert_array_equal(got, ((x * 2).reshape(dst) + 1).T)
    assert stats.graph_hits - hits == 2 and stats.compiles - c0 <= 1
