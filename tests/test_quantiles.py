"""minitensor.quantiles against NumPy: percentile, quantile and median (axes, keepdims, every method, NaN and
inf) and interp (exactly NumPy's values: NaN, inf, repeated xp, left/right, one point)."""
import warnings
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt

xp = lambda a: mt if isinstance(a, mt.Tensor) else np
METHODS = ["linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf", "averaged_inverted_cdf",
           "closest_observation", "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased",
           "normal_unbiased"]


@given(data=st.data())
def test_percentile_quantile_median(data):
  dtype = data.draw(st.sampled_from([np.int8, np.int64, np.uint8, np.float32, np.float64, np.bool_]))
  shape = data.draw(mtt.shapes(min_dims=1, max_dims=3))
  a = data.draw(mtt.arrays(dtype, shape))
  axis = data.draw(mtt.axes(len(shape)))
  keepdims, method = data.draw(st.booleans()), data.draw(st.sampled_from(METHODS))
  q = data.draw(st.one_of(st.floats(0, 100), st.lists(st.floats(0, 100), min_size=1, max_size=3)))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    mtt.assert_matches_numpy(lambda x: xp(x).percentile(x, q, axis=axis, method=method, keepdims=keepdims), a,
                             rtol=0, atol=0)
    mtt.assert_matches_numpy(lambda x: xp(x).quantile(x, np.asarray(q) / 100, axis=axis, method=method), a,
                             rtol=0, atol=0)
    mtt.assert_matches_numpy(lambda x: xp(x).median(x, axis=axis, keepdims=keepdims), a, rtol=0, atol=0)


def test_quantile_out_errors_and_dispatch():
  a = np.arange(12.0).reshape(3, 4)
  out = mt.zeros(4)
  assert mt.median(mt.asarray(a), axis=0, out=out) is out
  np.testing.assert_array_equal(np.asarray(out), np.median(a, axis=0))
  o = np.zeros(3)
  assert mt.percentile(a, 50, axis=1, out=o) is o and np.array_equal(o, np.percentile(a, 50, axis=1))
  got = np.percentile(mt.asarray(a), [10, 90], axis=1)            # np.percentile(t) is minitensor's
  assert isinstance(got, mt.Tensor) and np.array_equal(np.asarray(got), np.percentile(a, [10, 90], axis=1))
  for bad in (lambda m: m.percentile(a, 101), lambda m: m.quantile(a, 0.5, method="bad"),
              lambda m: m.median(a, axis=2)):
    with pytest.raises(Exception) as e: bad(np)
    with pytest.raises(type(e.value)): bad(mt)


FLOATS = st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0, -1.5, 3e38, -3e38, np.inf, -np.inf, np.nan])


@given(data=st.data())
def test_interp_matches_numpy_exactly(data):
  n = data.draw(st.integers(1, 8))
  xp_ = np.sort(data.draw(mtt.arrays(np.float64, n, elements=st.one_of(
    st.floats(-10, 10), st.sampled_from([0.0, 1.0, np.inf, -np.inf])))))
  fp = data.draw(mtt.arrays(data.draw(st.sampled_from([np.float64, np.float32, np.int32])), n))
  xd = data.draw(st.sampled_from([np.float64, np.float32, np.int64]))
  x = data.draw(mtt.arrays(xd, data.draw(mtt.shapes(max_dims=2)), elements=st.integers(-20, 20) if xd == np.int64
                           else None if data.draw(st.booleans()) else st.one_of(st.floats(-12, 12, width=32), FLOATS)))
  kw = data.draw(st.sampled_from([{}, {"left": -7.0}, {"right": np.nan}, {"left": 1, "right": 2}]))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    mtt.assert_matches_numpy(lambda v: xp(v).interp(v, xp_, fp, **kw), x, rtol=0, atol=0)


def test_interp_forms_and_errors():
  x, xp_, fp = np.linspace(-1, 5, 13), np.array([0.0, 1, 1, 2, 4]), np.array([0.0, 1, 5, 3, np.inf])
  got = mt.interp(mt.asarray(x), mt.asarray(xp_), mt.asarray(fp))
  np.testing.assert_array_equal(np.asarray(got), np.interp(x, xp_, fp))
  assert isinstance(np.interp(mt.asarray(x), xp_, fp), mt.Tensor)
  np.testing.assert_array_equal(np.asarray(mt.interp(x, xp_, fp + 1j)), np.interp(x, xp_, fp + 1j))
  np.testing.assert_array_equal(np.asarray(mt.interp(x, [0, 2, 4], [1, 2, 3], period=3)),
                                np.interp(x, [0, 2, 4], [1, 2, 3], period=3))
  assert float(mt.interp(2.5, [1, 2, 3], [3, 2, 0])) == np.interp(2.5, [1, 2, 3], [3, 2, 0])
  for bad in (lambda m: m.interp(x, [], []), lambda m: m.interp(x, [1, 2], [1]),
              lambda m: m.interp(x, [[1, 2]], [[1, 2]])):
    with pytest.raises(ValueError): bad(np)
    with pytest.raises(ValueError): bad(mt)
