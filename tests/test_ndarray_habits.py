"""The ndarray habits real code relies on: the methods NumPy users call, format() and round(), where(cond),
`t == None`, reductions with where=/initial=, reductions over axis 0/-1 of a 0-d array, NumPy functions that
minitensor leaves to NumPy, and the README's own hypothesis example."""
import warnings
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt

rng = np.random.default_rng(7)
A = rng.integers(-5, 6, (3, 4)).astype(np.float64)


def test_methods_match_numpy():
  cases = [lambda x: x.cumsum(), lambda x: x.cumsum(axis=1), lambda x: x.cumprod(axis=0, dtype=np.float32),
           lambda x: x.argsort(axis=0), lambda x: x.argsort(), lambda x: x.nonzero(), lambda x: x.repeat(2, axis=1),
           lambda x: x.repeat([1, 0, 2]), lambda x: x.take([0, -1, 2]), lambda x: x.take([[1], [0]], axis=1),
           lambda x: x.clip(-1, 2), lambda x: x.round(1), lambda x: x.trace(), lambda x: x.trace(offset=1),
           lambda x: x.diagonal(), lambda x: x.diagonal(-1), lambda x: x.conj(), lambda x: x.conjugate(),
           lambda x: x.dot(x.T), lambda x: x.copy(), lambda x: np.ptp(x, axis=1), lambda x: np.ptp(x)]
  for f in cases:
    mtt.assert_matches_numpy(f, A)
  for side in ("left", "right"):
    mtt.assert_matches_numpy(lambda x: x.searchsorted(x[::3] + 0.5 * (side == "left"), side=side), np.sort(A.ravel()))
  t = mt.asarray(A)
  assert t.ptp(axis=0).tolist() == np.ptp(A, axis=0).tolist() and float(mt.ptp(t)) == np.ptp(A)
  assert t.item(5) == A.item(5) and t[1, 2].item() == A[1, 2] and t.tobytes() == A.tobytes()
  assert t.T.tobytes() == A.T.tobytes() and t.tobytes("F") == A.tobytes("F")
  assert mt.asarray(np.arange(5, dtype=np.int8)).tobytes() == np.arange(5, dtype=np.int8).tobytes()


def test_sort_is_in_place_and_fill():
  a, t = A.copy(), mt.asarray(A)
  view = t[0]
  assert t.sort(axis=0) is None and a.sort(axis=0) is None
  np.testing.assert_array_equal(np.asarray(t), a)
  np.testing.assert_array_equal(np.asarray(view), a[0])                 # views see the sorted values
  t.sort()
  a.sort()
  np.testing.assert_array_equal(np.asarray(t), a)
  c = t.copy()
  c.fill(7)
  assert np.asarray(c).tolist() == [[7.0] * 4] * 3 and np.asarray(t).tolist() == a.tolist()


def test_format_and_round():
  t = mt.asarray(A)
  s = t.sum()
  assert f"{s:.2f}" == f"{A.sum():.2f}" and f"{t[0, 1]:>8.3e}" == f"{A[0, 1]:>8.3e}" and f"{s}" == f"{A.sum()}"
  assert format(t, "") == str(A) and f"{t}" == str(A)
  with pytest.raises(TypeError): f"{t:.2f}"                                  # as ndarray: arrays take no spec
  x = mt.asarray(np.array([1.25, 2.5, -0.5]))
  assert round(x[1]) == round(np.float64(2.5)) == 2 and type(round(x[1])) is int and round(x[2]) == 0
  np.testing.assert_array_equal(np.asarray(round(x, 1)), np.round(np.array([1.25, 2.5, -0.5]), 1))
  assert float(round(s / 7, 2)) == round(np.float64(A.sum() / 7), 2)
  with pytest.raises(TypeError): round(x)


def test_where_with_one_argument_and_none_comparisons():
  t = mt.asarray(A)
  got, want = mt.where(t > 1), np.where(A > 1)
  assert len(got) == len(want) and all(np.array_equal(np.asarray(g), w) for g, w in zip(got, want))
  with pytest.raises(ValueError): mt.where(t > 1, t)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    assert np.array_equal(np.asarray(t == None), A == None)  # noqa: E711
    assert np.array_equal(np.asarray(t != None), A != None)  # noqa: E711
  assert (t == None).dtype == np.bool_ and (t == None).shape == A.shape  # noqa: E711


REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "any", "all"]


@given(data=st.data())
def test_reductions_with_where_and_initial(data):
  shape = data.draw(mtt.shapes(max_dims=3))
  dtype = data.draw(st.sampled_from([np.float64, np.float32, np.int32, np.bool_]))
  x = data.draw(mtt.arrays(dtype, shape, elements=st.integers(-4, 4) if dtype == np.int32 else
                           st.booleans() if dtype == np.bool_ else st.sampled_from([0.0, -1.0, 2.0, 0.5, 3.0, np.nan])))
  mask_shape = data.draw(st.sampled_from([shape, shape[1:], ()]))
  mask = data.draw(mtt.arrays(np.bool_, mask_shape))
  name = data.draw(st.sampled_from(REDUCTIONS))
  axis = data.draw(mtt.axes(len(shape)))
  kw = {"where": mask, "axis": axis, "keepdims": data.draw(st.booleans())}
  if name in ("sum", "prod", "max", "min") and data.draw(st.booleans()):
    kw["initial"] = data.draw(st.sampled_from([-2, 0, 3]))
  if name in ("var", "std"): kw["ddof"] = data.draw(st.sampled_from([0, 1]))
  if dtype == np.bool_ and name in ("var", "std", "mean"): return            # NumPy: no bool loops there
  method = data.draw(st.booleans())

  def f(a):
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      return getattr(a, name)(**kw) if method else getattr(mt if isinstance(a, mt.Tensor) else np, name)(a, **kw)
  with np.errstate(all="ignore"): mtt.assert_matches_numpy(f, x)


def test_max_with_where_needs_initial():
  with pytest.raises(ValueError, match="initial"): mt.asarray(A).max(where=A > 0)
  z = np.zeros((0, 3))
  np.testing.assert_array_equal(np.asarray(mt.max(z, axis=0, initial=5)), np.max(z, axis=0, initial=5))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "mean", "var", "std"])
@pytest.mark.parametrize("axis", [0, -1, 1, (0,), None])
def test_reductions_of_a_0d_array_over_axis_0(name, axis):
  for keepdims in (False, True):
    if name.startswith("arg") and isinstance(axis, tuple): continue
    xp = lambda a: mt if isinstance(a, mt.Tensor) else np  # noqa: E731
    mtt.assert_matches_numpy(lambda a: getattr(xp(a), name)(a, axis=axis, keepdims=keepdims), np.array(2.5))


def test_unimplemented_numpy_functions_compute_with_numpy():
  t = mt.asarray(A)
  for got, want in [(np.pad(t, 1, mode="reflect"), np.pad(A, 1, mode="reflect")), (np.median(t), np.median(A)),
                    (np.pad(t, (1, 2), mode="edge"), np.pad(A, (1, 2), mode="edge")),
                    (np.percentile(t, 40, axis=1), np.percentile(A, 40, axis=1))]:
    np.testing.assert_array_equal(np.asarray(got), want)
  np.testing.assert_array_equal(np.asarray(np.pad(t, 1)), np.pad(A, 1))      # implemented: minitensor's
  assert isinstance(np.pad(t, 1), mt.Tensor)


def softmax(x):
  xp = mt if isinstance(x, mt.Tensor) else np
  e = xp.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


@given(data=st.data())
def test_readme_softmax_after_any_movement(data):
  """The README's example, verbatim: it used to fail when a chain reshaped to a 0-d array."""
  shape = data.draw(mtt.shapes(min_dims=1, min_side=1))
  x = data.draw(mtt.arrays(np.float32, shape, elements=st.floats(-10, 10, width=32)))
  chain = data.draw(mtt.movement_chains(shape))
  mtt.assert_matches_numpy(lambda a: softmax(chain.apply(a)), x)


def test_readme_example_0d_case():
  """The falsifying example hypothesis found: a (1,) array reshaped to ()."""
  x = np.zeros(1, np.float32)
  mtt.assert_matches_numpy(lambda a: softmax(a.reshape(())), x)
