"""mt.lib.stride_tricks.sliding_window_view against numpy.lib.stride_tricks.sliding_window_view: shapes, values,
repeated and negative axes, and NumPy's errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.exceptions import AxisError
from numpy.lib.stride_tricks import sliding_window_view as np_swv
import minitensor as mt

swv = mt.lib.stride_tricks.sliding_window_view


@st.composite
def windows(draw):
  shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
  axes = draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=3))
  left = list(shape)
  window = []
  for a in axes:
    w = draw(st.integers(0, left[a]))
    left[a] -= max(w - 1, 0)
    window.append(w)
  return shape, tuple(window), tuple(axes)


@settings(max_examples=25)
@given(windows(), st.sampled_from([np.float32, np.int64, np.bool_]))
def test_matches_numpy(case, dtype):
  shape, window, axes = case
  x = (np.arange(int(np.prod(shape))).reshape(shape) % 5).astype(dtype)
  want, got = np_swv(x, window, axes), swv(mt.asarray(x), window, axes)
  assert got.shape == want.shape and got.dtype == want.dtype
  np.testing.assert_array_equal(np.asarray(got), want)


def test_every_axis_and_lazy_inputs():
  x = np.arange(30.0).reshape(5, 6)
  np.testing.assert_array_equal(np.asarray(swv(mt.asarray(x) * 2, (2, 3))), np_swv(x * 2, (2, 3)))
  np.testing.assert_array_equal(np.asarray(swv(x.tolist(), 4, axis=1)), np_swv(x, 4, axis=1))


@pytest.mark.parametrize("args,kw,exc", [
  (((2,),), {}, ValueError),                   # axis None: one window length per axis
  (((2, 2),), {"axis": 0}, ValueError),        # window and axis lengths differ
  (((-1,),), {"axis": 0}, ValueError),
  (((6,),), {"axis": 1}, ValueError),          # larger than the axis
  (((2,),), {"axis": 2}, AxisError),
])
def test_errors_as_numpy(args, kw, exc):
  x = np.zeros((3, 5))
  with pytest.raises(exc):
    np_swv(x, *args, **kw)
  with pytest.raises(exc):
    swv(mt.asarray(x), *args, **kw)
  with pytest.raises(NotImplementedError):
    swv(mt.asarray(x), 2, axis=0, writeable=True)
