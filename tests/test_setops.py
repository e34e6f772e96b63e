"""minitensor.setops against NumPy: the set operations (every dtype, NaN, empty inputs) and array_equal/equiv."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt

xp = lambda a: mt if isinstance(a, mt.Tensor) else np


def small(dtype):
  """Values that repeat (so the sets overlap), with NaN and inf for floats."""
  d = np.dtype(dtype)
  if d.kind == "b": return st.booleans()
  if d.kind == "f": return st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0, np.nan, np.inf, -np.inf])
  return st.integers(0 if d.kind == "u" else -3, 4)


@given(data=st.data())
def test_set_operations(data):
  d1, d2 = data.draw(mtt.dtypes()), data.draw(mtt.dtypes())
  a = data.draw(mtt.arrays(d1, data.draw(mtt.shapes(max_dims=2)), elements=small(d1)))
  b = data.draw(mtt.arrays(d2, data.draw(mtt.shapes(max_dims=2)), elements=small(d2)))
  for f in (lambda x, y: xp(x).intersect1d(x, y), lambda x, y: xp(x).union1d(x, y),
            lambda x, y: xp(x).setdiff1d(x, y), lambda x, y: xp(x).setxor1d(x, y),
            lambda x, y: xp(x).intersect1d(x, y, return_indices=True)):
    mtt.assert_matches_numpy(f, a, b, rtol=0, atol=0)
  u = np.unique(a)
  mtt.assert_matches_numpy(lambda x, y: xp(x).setdiff1d(x, y, assume_unique=True), u, b, rtol=0, atol=0)
  mtt.assert_matches_numpy(lambda x, y: xp(x).isin(x, y).ravel(), a, b, rtol=0, atol=0)
  got = mt.in1d(mt.asarray(a), b, invert=True)
  np.testing.assert_array_equal(np.asarray(got), ~np.isin(a, b).ravel())


@given(data=st.data())
def test_array_equal_and_equiv(data):
  dtype = data.draw(mtt.dtypes())
  shape = data.draw(mtt.shapes(max_dims=3))
  a = data.draw(mtt.arrays(dtype, shape, elements=small(dtype)))
  b = data.draw(st.one_of(st.just(a.copy()), mtt.arrays(dtype, shape, elements=small(dtype)),
                          mtt.arrays(dtype, data.draw(mtt.broadcastable_shapes(shape)), elements=small(dtype))))
  for kw in ({}, {"equal_nan": True}):
    got = mt.array_equal(mt.asarray(a), mt.asarray(b), **kw)
    assert type(got) is bool and got == np.array_equal(a, b, **kw)
  assert mt.array_equiv(mt.asarray(a), b) == np.array_equiv(a, b)
  assert mt.array_equiv(a, mt.ones((7, 9))) == np.array_equiv(a, np.ones((7, 9)))


def test_array_equal_of_complex_nan_and_lists():
  a = np.array([complex(np.nan, 1), 1j])
  b = np.array([complex(1, np.nan), 1j])
  assert mt.array_equal(mt.asarray(a), b, equal_nan=True) == np.array_equal(a, b, equal_nan=True) is True
  assert mt.array_equal(mt.asarray(a), b) is False
  assert mt.array_equal([1, 2], [1, 2]) and not mt.array_equal([1, 2], [1, 2, 3])
  assert np.array_equal(mt.arange(3), np.arange(3)) is True        # np.array_equal(t) dispatches to minitensor's


def test_set_operations_dispatch_and_errors():
  t = mt.asarray([3, 1, 2, 3])
  got = np.intersect1d(t, [3, 4])
  assert isinstance(got, mt.Tensor) and np.asarray(got).tolist() == [3]
  assert isinstance(np.union1d(t, t), mt.Tensor) and isinstance(np.setxor1d(t, [1]), mt.Tensor)
  with pytest.raises(TypeError): mt.union1d(t)
