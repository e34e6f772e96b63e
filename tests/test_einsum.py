"""minitensor.einsum against numpy.einsum.

Hypothesis draws whole einsum problems: 1-3 operands over a small label pool, repeated labels (diagonals),
size-1 axes that broadcast, "..." with broadcast dimensions, implicit or explicit (permuted, partial) outputs,
and the dtypes bool, int8 (sums wrap), int64, float32 and float64. Sizes stay in {0, 1, 2, 3}: every distinct
problem is a C compile. Malformed subscripts must raise ValueError where NumPy does.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend.uop import Ops

DTYPES = [np.bool_, np.int8, np.int64, np.float32, np.float64]


def check(got, want, rtol=1e-6) -> None:
  assert isinstance(got, mt.Tensor)
  g, w = np.asarray(got), np.asarray(want)
  assert (g.dtype, g.shape) == (w.dtype, w.shape)
  if w.dtype.kind == "f": np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)
  else: np.testing.assert_array_equal(g, w)


def operand(rng: np.random.Generator, shape, dtype) -> np.ndarray:
  if dtype == np.bool_: return rng.random(shape) < 0.6
  if np.dtype(dtype).kind == "i": return rng.integers(-100, 100, shape).astype(dtype)
  return rng.standard_normal(shape).astype(dtype)


@st.composite
def problems(draw):
  """(subscripts, shapes, dtype): a valid einsum call."""
  pool = draw(st.lists(st.sampled_from("abcdeAB"), min_size=1, max_size=4, unique=True))
  size = {c: draw(st.sampled_from([2, 3, 1, 0])) for c in pool}
  ell = tuple(draw(st.lists(st.integers(2, 3), max_size=2)))
  terms, shapes, used = [], [], []
  for _ in range(draw(st.integers(1, 3))):
    labels = draw(st.lists(st.sampled_from(pool), max_size=3))
    ones = {c for c in labels if draw(st.integers(0, 5)) == 5}              # axes of size 1 that broadcast
    shape = [1 if c in ones else size[c] for c in labels]
    term = "".join(labels)
    if ell and draw(st.booleans()):
      k, pos = draw(st.integers(0, len(ell))), draw(st.integers(0, len(labels)))
      dims = [1 if draw(st.integers(0, 3)) == 3 else n for n in ell[len(ell) - k:]]
      term, shape = term[:pos] + "..." + term[pos:], shape[:pos] + dims + shape[pos:]
    terms.append(term); shapes.append(tuple(shape)); used += labels
  s = ",".join(terms)
  if draw(st.booleans()):
    out = draw(st.permutations(sorted(set(used))))
    out = "".join(out[:draw(st.integers(0, len(out)))])
    if "..." in s: out = (lambda p: out[:p] + "..." + out[p:])(draw(st.integers(0, len(out))))
    s += "->" + out
  return s, shapes, draw(st.sampled_from(DTYPES))


@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(problems(), st.integers(0, 2**32 - 1))
def test_einsum_matches_numpy(problem, seed):
  s, shapes, dtype = problem
  rng = np.random.default_rng(seed)
  ops = [operand(rng, sh, dtype) for sh in shapes]
  check(mt.einsum(s, *ops), np.einsum(s, *ops), rtol=1e-4 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("s, shapes", [
  ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ii", [(4, 4)]), ("ii->i", [(4, 4)]),
  ("iij->ji", [(3, 3, 2)]), ("iii->i", [(3, 3, 3)]), ("...ii->...i", [(2, 3, 3)]), ("i,i->", [(0,), (0,)]),
  ("ij,j->i", [(0, 3), (3,)]), ("...,...", [(), ()]), ("", [()]), ("->", [()]), ("ab...,cd", [(2, 3, 5), (2, 2)]),
  ("i...", [(2, 4, 3)]), ("Ba", [(2, 3)]), ("bA", [(2, 3)]), ("ij,ij->", [(2, 3), (2, 3)]), ("i j -> j", [(2, 3)]),
  ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("bij,bjk->bik", [(2, 3, 4), (1, 4, 2)]), ("i,j", [(3,), (2,)]),
])
def test_einsum_cases(s, shapes):
  rng = np.random.default_rng(0)
  ops = [rng.standard_normal(sh) for sh in shapes]
  check(mt.einsum(s, *ops), np.einsum(s, *ops), rtol=1e-12)


@pytest.mark.parametrize("s, shapes", [
  ("ij,jk->ik", [(2, 2), (3, 4)]), ("i->ii", [(3,)]), ("i->j", [(3,)]), ("ij->i", [(3,)]), ("i,j", [(3,)]),
  ("i", [(3,), (3,)]), ("i.j", [(3, 3)]), ("i->i->i", [(3,)]), ("i$", [(3,)]), ("ii->i", [(3, 4)]),
  ("...i->i", [(2, 3)]), ("a...b", [(2,)]), ("i...j...", [(2, 3, 4)]), ("ij", [(3,)]), ("i-j", [(3, 3)]),
])
def test_einsum_errors(s, shapes):
  ops = [np.ones(sh) for sh in shapes]
  with pytest.raises(ValueError): np.einsum(s, *ops)
  with pytest.raises(ValueError): mt.einsum(s, *ops)


def test_einsum_sublists_and_dtype():
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
  check(mt.einsum(a, [0, 1], b, [1, 2], [0, 2]), np.einsum(a, [0, 1], b, [1, 2], [0, 2]), rtol=1e-12)
  check(mt.einsum(a, [30, 0]), np.einsum(a, [30, 0]))
  check(mt.einsum(a, [Ellipsis, 0], [0, Ellipsis]), np.einsum(a, [Ellipsis, 0], [0, Ellipsis]))
  i = np.arange(6, dtype=np.int32).reshape(2, 3)
  check(mt.einsum("ij->j", i, dtype=np.float64), np.einsum("ij->j", i, dtype=np.float64))
  with pytest.raises(TypeError): mt.einsum("ij->j", a, dtype=np.int64)
  with pytest.raises(ValueError): mt.einsum(a, [52, 0])
  with pytest.raises(ValueError): mt.einsum("i")


def test_einsum_one_reduce_per_contraction():
  """A chain is contracted pairwise: two REDUCEs of matrix-product size, not one over an n^4 product."""
  a, b, c = (np.ones((8, 8)) for _ in range(3))
  r = mt.einsum("ij,jk,kl->il", a, b, c)
  reduces = [u for u in r.uop.toposort() if u.op is Ops.REDUCE]
  assert len(reduces) == 2 and all(u.src[0].shape == (8, 8, 8) for u in reduces)
  assert len([u for u in mt.einsum("ij->", a).uop.toposort() if u.op is Ops.REDUCE]) == 1
  assert not any(u.op is Ops.REDUCE for u in mt.einsum("ij->ji", a).uop.toposort())
  check(r, np.einsum("ij,jk,kl->il", a, b, c))
