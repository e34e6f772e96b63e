"""The nan-reductions (minitensor/nan_reductions.py) against NumPy's: values, dtypes, shapes, errors and warnings,
for every dtype, shapes with 0- and 1-sized axes, NaN and inf."""
import warnings
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
from minitensor.testing import arrays, dtypes, shapes

REDUCE = ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanargmax", "nanargmin"]
SCAN = ["nancumsum", "nancumprod"]
REALIZED = ["nanmedian", "nanpercentile", "nanquantile"]


def _call(mod, name, a, **kw):
  args = (50,) if name == "nanpercentile" else (0.3,) if name == "nanquantile" else ()
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try: return getattr(mod, name)(a, *args, **kw)
    except (ValueError, TypeError) as e: return e


def _check(got, want, dt):
  if isinstance(want, Exception):
    assert isinstance(got, type(want)), (got, want)
    return
  assert not isinstance(got, Exception), got
  g = np.asarray(got)
  assert g.dtype == np.asarray(want).dtype and g.shape == np.shape(want), (g.dtype, np.asarray(want).dtype, g.shape)
  rtol = 1e-4 if np.dtype(dt) in (np.float32, np.complex64) else 1e-9
  np.testing.assert_allclose(g, want, rtol=rtol, atol=1e-300 if rtol < 1e-6 else 1e-30, equal_nan=True)


@given(data=st.data())
def test_nan_reductions_match_numpy(data):
  dt = data.draw(dtypes() | st.just(np.dtype(np.complex128)))
  a = data.draw(arrays(dtype=dt, shape=shapes(0, 3, 0, 4)))
  if dt.kind in "iu": a = a % 7          # products and variances of large integers overflow differently
  axis = data.draw(st.none() | st.integers(-max(a.ndim, 1), max(a.ndim, 1) - 1)) if a.ndim else None
  keep = data.draw(st.booleans())
  t = mt.asarray(a)
  got, want = [], []
  with np.errstate(all="ignore"):
    for n in REDUCE:
      if dt.kind == "c" and n in ("nanmax", "nanmin", "nanargmax", "nanargmin"): continue
      kw = {"axis": axis, "keepdims": keep}
      if n in ("nanvar", "nanstd"): kw["ddof"] = data.draw(st.sampled_from([0, 1]))
      got.append(_call(mt, n, t, **kw))
      want.append(_call(np, n, a, **kw))
    for n in SCAN:
      got.append(_call(mt, n, t, axis=axis))
      want.append(_call(np, n, a, axis=axis))
  mt.realize(*[g for g in got if isinstance(g, mt.Tensor)])
  for g, w in zip(got, want): _check(g, w, dt)


def test_keywords_and_dispatch():
  a = np.array([[1.0, np.nan, 3.0, -np.inf], [np.nan, 2.0, np.nan, 5.0]], np.float32)
  t, m = mt.asarray(a), np.array([[True, True, False, True], [False, True, True, True]])
  cases = [("nansum", dict(axis=1, dtype=np.float64, initial=2.0, where=m)), ("nanprod", dict(axis=0, initial=3.0)),
           ("nanmax", dict(axis=1, initial=-10.0, where=m)), ("nanmin", dict(axis=0, initial=0.0)),
           ("nanmean", dict(axis=1, where=m, dtype=np.float64)), ("nanvar", dict(axis=1, ddof=1, where=m)),
           ("nanstd", dict(axis=1, correction=1)), ("nancumsum", dict(axis=1, dtype=np.float64)),
           ("nanmedian", dict(axis=1)), ("nanpercentile", dict(axis=1)), ("nanquantile", dict(axis=0))]
  for name, kw in cases:
    got, want = _call(mt, name, t, **kw), _call(np, name, a, **kw)
    _check(got, want, np.float32)
    assert type(_call(np, name, t, **kw)) is mt.Tensor, name                # np.nan*(tensor) stays minitensor
  o, w = mt.zeros(4, mt.float32), np.zeros(4, np.float32)
  assert mt.nansum(t, axis=0, out=o) is o
  _check(o, np.nansum(a, axis=0, out=w), np.float32)
  assert np.nansum(t, axis=0).uop.op is not mt.Tensor(np.zeros(1)).uop.op         # lazy, not a realized buffer


def test_all_nan_slices_warn_and_raise_as_numpy():
  a = np.array([[np.nan, np.nan], [1.0, np.nan]])
  t = mt.asarray(a)
  for name, msg in (("nanmax", "All-NaN slice"), ("nanmin", "All-NaN slice"), ("nanmean", "Mean of empty slice"),
                    ("nanvar", "Degrees of freedom")):
    with pytest.warns(RuntimeWarning, match=msg): want = getattr(np, name)(a, axis=1)
    with pytest.warns(RuntimeWarning, match=msg): got = getattr(mt, name)(t, axis=1)
    _check(got, want, np.float64)
  for name in ("nanargmax", "nanargmin"):
    with pytest.raises(ValueError, match="All-NaN"): getattr(np, name)(a, axis=1)
    with pytest.raises(ValueError, match="All-NaN"): getattr(mt, name)(t, axis=1)
    with pytest.raises(ValueError, match="All-NaN"): getattr(mt, name)(t * 1.0, axis=1)     # lazy input too
    b = np.array([[np.nan, 2.0, -np.inf], [1.0, np.nan, np.nan]])
    np.testing.assert_array_equal(getattr(mt, name)(mt.asarray(b), axis=0), getattr(np, name)(b, axis=0))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    np.asarray(mt.nanmax(t * 1.0, axis=1))          # a lazy input is not computed for the warning
