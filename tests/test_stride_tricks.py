"""minitensor.lib.stride_tricks against NumPy: sliding_window_view (a lazy, read-only view: every axis choice,
repeated axes, windows of 0 and of the whole axis, errors) and the checked as_strided."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt
from minitensor import views
from minitensor.backend.runtime import stats
from minitensor.lib.stride_tricks import as_strided, sliding_window_view

NP_SWV = np.lib.stride_tricks.sliding_window_view
swv = lambda x, *a, **k: (sliding_window_view if isinstance(x, mt.Tensor) else NP_SWV)(x, *a, **k)


@given(data=st.data())
def test_sliding_window_view(data):
  shape = data.draw(mtt.shapes(min_dims=1, max_dims=3, max_side=6))
  a = data.draw(mtt.arrays(mtt.dtypes(), shape))
  axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                             st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=3).map(tuple)))
  axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
  win = tuple(data.draw(st.integers(0, shape[k] + 1)) for k in axes)
  win = win[0] if isinstance(axis, int) and data.draw(st.booleans()) else win
  mtt.assert_matches_numpy(lambda x: swv(x, win, axis=axis), a, rtol=0, atol=0)
  mtt.assert_matches_numpy(lambda x: swv(x * 2, win, axis=axis).sum(axis=-1), a)


def test_sliding_window_view_is_a_lazy_read_only_view():
  z = mt.arange(20)
  before = stats.compiles, stats.graph_hits, stats.graph_misses
  w = sliding_window_view(z, window_shape=3)
  assert (stats.compiles, stats.graph_hits, stats.graph_misses) == before      # nothing computed
  assert w.shape == (18, 3)
  z[0] = 100                                                                 # the view follows its base
  np.testing.assert_array_equal(np.asarray(w)[0], [100, 1, 2])
  with pytest.raises(ValueError, match="read-only"): w[0, 0] = 1
  got = np.lib.stride_tricks.sliding_window_view(mt.ones((16, 16)), (4, 4))   # NumPy's name dispatches here
  assert isinstance(got, mt.Tensor) and got.shape == (13, 13, 4, 4)
  assert mt.lib.stride_tricks.sliding_window_view is sliding_window_view
  for bad in (lambda f: f(np.ones((3, 3)), 2), lambda f: f(np.ones(3), -1), lambda f: f(np.ones(3), 4),
              lambda f: f(np.ones(3), (2, 2), axis=0), lambda f: f(np.ones(3), 2, axis=1)):
    with pytest.raises(Exception) as e: bad(NP_SWV)
    with pytest.raises(type(e.value)): bad(sliding_window_view)
  with pytest.raises(ValueError, match="writeable"): sliding_window_view(z, 2, writeable=True)


def test_as_strided_in_bounds_as_numpy():
  z = np.arange(1, 15, dtype=np.uint32)
  for shape, strides in (((11, 4), (4, 4)), ((7,), (8,)), ((3, 2), (8, 4)), ((2, 3), (0, 4)), ((0, 5), (4, 4))):
    got = as_strided(mt.asarray(z), shape=shape, strides=strides)
    want = np.lib.stride_tricks.as_strided(z, shape=shape, strides=strides)
    assert isinstance(got, mt.Tensor) and (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(np.asarray(got), want)
  Z = np.random.default_rng(0).integers(0, 5, (10, 10))
  C = as_strided(mt.asarray(Z), shape=(8, 8, 3, 3), strides=(80, 8, 80, 8))
  np.testing.assert_array_equal(np.asarray(C), np.lib.stride_tricks.as_strided(Z, (8, 8, 3, 3), (80, 8, 80, 8)))
  np.testing.assert_array_equal(np.asarray(as_strided(mt.asarray(Z))), Z)
  with pytest.raises(ValueError, match="read-only"): C[0, 0, 0, 0] = 1
  T = mt.asarray(Z)
  for v, w in ((T.T, Z.T), (T[1:, 2:], Z[1:, 2:]), (T[::-1], Z[::-1]), (T[:, ::2], Z[:, ::2]), (T[3], Z[3])):
    st = tuple(s * 8 for s in views.strides_of(v))             # a view's strides over its base: NumPy's
    assert st == w.strides
    for shape, strides in ((v.shape, st), ((2,), st[:1]), ((2, 2), (st[0], 8))):
      np.testing.assert_array_equal(np.asarray(as_strided(v, shape, strides)),
                                    np.lib.stride_tricks.as_strided(w, shape, strides))
  T[1, 2] = -1                                                  # a view of the base: it follows later writes
  np.testing.assert_array_equal(np.asarray(as_strided(T.T, (2,), (80,)))[:1], [Z[0, 0]])
  with pytest.raises(ValueError, match="outside"): as_strided(mt.asarray(z), shape=(12, 4), strides=(4, 4))
  with pytest.raises(ValueError, match="outside"): as_strided(mt.asarray(z), shape=(2,), strides=(-4,))
  with pytest.raises(ValueError, match="multiples"): as_strided(mt.asarray(z), shape=(2,), strides=(2,))
