"""minitensor.extra and minitensor.sorting against NumPy: results (dtype, shape, values), edge shapes, errors.

Results are exact except where the summation order differs from NumPy's (sums of products): those are held to a
bound relative to the sum of magnitudes. Scans are sequential like NumPy's: equal bit for bit, overflow included.
Hypothesis draws shapes with size-0 and size-1 axes; the example counts are kept low because each distinct graph
is one C compile.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import minitensor as mt

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64]
FEW = settings(max_examples=max(4, settings.default.max_examples // 6))
shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)


def check(got, want, tol: float = 0.0, scale=None) -> None:
  """got equals want in dtype and shape; values exactly, or floats within tol * scale (default |want|)."""
  if isinstance(want, tuple):
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want): check(g, w, tol, scale)
    return
  assert isinstance(got, mt.Tensor), type(got)
  g, w = np.asarray(got), np.asarray(want)
  assert (g.dtype, g.shape) == (w.dtype, w.shape)
  if tol and w.dtype.kind == "f":
    bound = tol * (np.abs(w) if scale is None else scale) + np.finfo(w.dtype).tiny
    assert np.array_equal(np.isnan(g), np.isnan(w)) and np.all((g == w) | (np.abs(g - w) <= bound))
  else: np.testing.assert_array_equal(g, w)


def same(f, tol: float = 0.0) -> None:
  """f(np) and f(mt) agree, or both raise NumPy's exception type."""
  try: want = f(np)
  except Exception as e:
    with pytest.raises(type(e)): f(mt)
    return
  check(f(mt), want, tol)


def arr(data, shape, dtype) -> np.ndarray:
  if np.dtype(dtype).kind in "biu": return data.draw(hnp.arrays(dtype, shape))
  return data.draw(hnp.arrays(dtype, shape, elements=st.floats(-100, 100, width=np.dtype(dtype).itemsize * 8)))


# ---------------------------------------------------------------------- scans
def bits_equal(got, want) -> None:
  """Same dtype, shape and values, NaN where NumPy has NaN, and the sign of every zero."""
  g, w = np.asarray(got), np.asarray(want)
  assert (g.dtype, g.shape) == (w.dtype, w.shape)
  np.testing.assert_array_equal(g, w)
  if w.dtype.kind == "f": assert np.array_equal(np.signbit(g)[~np.isnan(w)], np.signbit(w)[~np.isnan(w)])


@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(data=st.data(), shape=shapes)
def test_cumsum_cumprod(dtype, data, shape):
  a = arr(data, shape, dtype)
  axis = data.draw(st.sampled_from([None, *range(-len(shape), len(shape))]))
  bits_equal(mt.cumsum(a, axis), np.cumsum(a, axis))
  bits_equal(mt.cumprod(a, axis), np.cumprod(a, axis))


SPECIAL = [0.0, -0.0, 1.0, -1.5, 3e38, -3e38, 1e308, -1e308, 1e-30, 1e-45, np.inf, -np.inf, np.nan, 65504.0, 7e4]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@FEW
@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
def test_scans_overflow_like_numpy(dtype, data, shape):
  """Sequential like NumPy's: once a prefix overflows to inf it stays inf (or becomes NaN), bit for bit."""
  a = data.draw(hnp.arrays(np.float64, shape, elements=st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True))))
  with np.errstate(all="ignore"):
    a = a.astype(dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    for f in ("cumsum", "cumprod"): bits_equal(getattr(mt, f)(a, axis), getattr(np, f)(a, axis))


def test_scan_overflow_cases():
  with np.errstate(all="ignore"):
    for a in (np.array([1e308, 1e308, -1e308]), np.array([1e30, 1e30, 1e-30, 1e-30], np.float32),
              np.array([np.inf, -np.inf, 1.0]), np.array([3e38, 3e38, -3e38, -3e38], np.float32)):
      for f in ("cumsum", "cumprod"):
        bits_equal(getattr(mt, f)(a), getattr(np, f)(a))
        m = np.stack([a, a[::-1]])
        bits_equal(getattr(mt, f)(m.T, axis=0), getattr(np, f)(m.T, axis=0))
        bits_equal(getattr(mt, f)(m, axis=1), getattr(np, f)(m, axis=1))
  rng = np.random.default_rng(1)
  x = rng.standard_normal((300, 257)).astype(np.float32) * 1e3       # long float32 chains, accumulated in float32
  for ax in (0, 1): bits_equal(mt.cumsum(x, ax), np.cumsum(x, ax))
  bits_equal(mt.cumsum(x[:, ::3].T, 1), np.cumsum(x[:, ::3].T, 1))


def test_scan_wraps_and_dtypes():
  i8 = np.array([100, 100, 100, -128, 7], np.int8)
  for f in ("cumsum", "cumprod"):
    for d in (None, np.int8, np.uint8, np.int64, np.float32, bool):
      check(getattr(mt, f)(i8, dtype=d), getattr(np, f)(i8, dtype=d))
  big = np.array([2**62, 2**62, 2**62], np.int64)
  check(mt.cumsum(big), np.cumsum(big))
  check(mt.cumsum(np.float32(3.0)), np.cumsum(np.float32(3.0)))
  long = np.arange(1000, dtype=np.int64) * 7919 % 1000 - 500
  check(mt.cumsum(long), np.cumsum(long))
  check(mt.cumsum(long.reshape(10, 100), axis=0), np.cumsum(long.reshape(10, 100), axis=0))
  with pytest.raises(np.exceptions.AxisError): mt.cumsum(i8, axis=1)


@pytest.mark.parametrize("shape, axis, include", [((5,), None, False), ((5,), None, True), ((3, 4), 1, True),
                                                  ((3, 4), -2, False), ((0, 2), 0, True), ((), None, False)])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.float32])
def test_cumulative_sum(shape, axis, include, dtype):
  a = (np.arange(int(np.prod(shape))) % 5).astype(dtype).reshape(shape)
  same(lambda xp: xp.cumulative_sum(a, axis=axis, include_initial=include))
  same(lambda xp: xp.cumulative_sum(a, axis=axis, dtype=np.int16))
  with pytest.raises(ValueError): mt.cumulative_sum(np.ones((2, 2)))


@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(data=st.data(), shape=shapes)
def test_diff(dtype, data, shape):
  a = arr(data, shape, dtype)
  n, axis = data.draw(st.integers(0, 3)), data.draw(st.integers(-len(shape), len(shape) - 1))
  same(lambda xp: xp.diff(a, n, axis))
  if dtype != np.bool_: same(lambda xp: xp.diff(a, 1, axis, prepend=a.dtype.type(1), append=np.take(a, [0], axis)))


def test_diff_errors():
  same(lambda xp: xp.diff(np.array(3)))
  same(lambda xp: xp.diff(np.ones(3), -1))


# ---------------------------------------------------------------------- triangles and diagonals
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float64])
@FEW
@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), k=st.integers(-4, 4))
def test_tril_triu(dtype, data, shape, k):
  a = arr(data, shape, dtype)
  same(lambda xp: xp.tril(a, k))
  same(lambda xp: xp.triu(a, k=k))


@FEW
@given(shape=hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=4), data=st.data())
def test_diagonal_trace(shape, data):
  a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
  nd = len(shape)
  off, a1, a2 = data.draw(st.integers(-4, 4)), data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
  same(lambda xp: xp.diagonal(a, off, a1, a2))
  same(lambda xp: xp.trace(a, off, a1, a2))
  same(lambda xp: xp.trace(a.astype(np.float32), off, a1, a2, dtype=np.float64))


@pytest.mark.parametrize("n", [0, 1, 4])
@pytest.mark.parametrize("k", [-2, 0, 3])
def test_diag(n, k):
  v = np.arange(1, n + 1, dtype=np.int16)
  same(lambda xp: xp.diag(v, k))
  same(lambda xp: xp.diag(np.arange(12.).reshape(3, 4), k))
  same(lambda xp: xp.diag(np.ones((2, 2, 2)), k))
  same(lambda xp: xp.diag(np.array(3.0), k))


# ---------------------------------------------------------------------- gathers
@pytest.mark.parametrize("dtype", [np.bool_, np.int64, np.float32])
@FEW
@given(data=st.data(), shape=shapes)
def test_take(dtype, data, shape):
  a = arr(data, shape, dtype)
  axis = data.draw(st.sampled_from([None, *range(-len(shape), len(shape))]))
  n = a.size if axis is None else shape[axis]
  idx = data.draw(hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3),
                             elements=st.integers(-n - 2, n + 2)))
  for mode in ("raise", "wrap", "clip"):      # NumPy 2.4 loops forever wrapping into an empty axis: compare with clip
    same(lambda xp: xp.take(a, idx, axis=axis, mode="clip" if xp is np and mode == "wrap" and not n else mode))


def test_take_index_kinds():
  a = np.arange(10.).reshape(2, 5)
  for idx in ([True, False], [1.0], [], 3, np.array(-1), [[0, 1], [1, 0]]): same(lambda xp: xp.take(a, idx))
  same(lambda xp: xp.take(a, [0, 4], axis=1))
  same(lambda xp: xp.take(np.array(5), 0))
  same(lambda xp: xp.take(a, [1], axis=2))
  same(lambda xp: xp.take(np.ones((2, 0)), [1], axis=1, mode="wrap"))


@FEW
@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
def test_take_along_axis(data, shape):
  a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) * 1.5
  axis = data.draw(st.integers(-len(shape), len(shape) - 1))
  ishape = tuple(data.draw(st.sampled_from([1, s])) for s in shape)
  ishape = ishape[:axis % len(shape)] + (data.draw(st.integers(0, 4)),) + ishape[axis % len(shape) + 1:]
  n = shape[axis]
  idx = data.draw(hnp.arrays(np.int64, ishape, elements=st.integers(-n, n - 1)))
  same(lambda xp: xp.take_along_axis(a, idx, axis))
  same(lambda xp: xp.take_along_axis(a, np.argsort(a, axis=axis), axis))


def test_take_along_axis_errors():
  a = np.arange(5)
  for idx, axis in ((np.array([1.0]), 0), (np.ones((2, 2), int), 0), (np.array([5]), 0), (np.array([-6]), 0),
                    (np.array([1, 2]), None), (np.ones((1, 1), int), None)):
    same(lambda xp: xp.take_along_axis(a, idx, axis))


# ---------------------------------------------------------------------- grids and products
@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("sizes", [(), (3,), (2, 3), (2, 0, 4), (1, 2, 3, 2)])
def test_meshgrid(indexing, sparse, sizes):
  xs = [np.arange(n, dtype=[np.int8, np.float32, np.int64, np.float64][k]) for k, n in enumerate(sizes)]
  same(lambda xp: xp.meshgrid(*xs, sparse=sparse, indexing=indexing))
  with pytest.raises(ValueError): mt.meshgrid(*xs, indexing="yx")


@pytest.mark.parametrize("da, db", [(np.bool_, np.bool_), (np.int8, np.int8), (np.uint8, np.int32),
                                    (np.float32, np.int64)])
@pytest.mark.parametrize("sa, sb", [((3,), (4,)), ((2, 3), (3,)), ((2, 0), (4, 0)), ((), (3,)), ((2, 1, 3), (4, 3))])
def test_outer_inner_vecdot(da, db, sa, sb):
  rng = np.random.default_rng(0)
  a, b = (rng.integers(-9, 10, s).astype(d) for s, d in ((sa, da), (sb, db)))
  same(lambda xp: xp.outer(a, b))
  same(lambda xp: xp.inner(a, b), 1e-6)
  same(lambda xp: xp.vecdot(a, b), 1e-6)
  same(lambda xp: xp.matrix_transpose(a))


def test_vecdot_axis():
  a, b = np.arange(24.).reshape(2, 3, 4), np.arange(12.).reshape(3, 4)
  same(lambda xp: xp.vecdot(a, b, axis=-2))
  same(lambda xp: xp.vecdot(a, b[:, :1], axis=-1))
  with pytest.raises(ValueError): mt.vecdot(a, np.ones(3))


@pytest.mark.parametrize("equal_nan", [False, True])
@pytest.mark.parametrize("da, db", [(np.float64, np.float64), (np.float32, np.float32), (np.int8, np.float32),
                                    (np.bool_, np.float64), (np.uint8, np.int8)])
def test_isclose(equal_nan, da, db):
  v = np.array([0, 1, -1, 1e-9, 1e9, 2.5, np.inf, -np.inf, np.nan, 100])
  with np.errstate(invalid="ignore"):
    a, b = v.astype(da), (v[::-1] if db == np.float64 else v * (1 + 1e-6)).astype(db)
  same(lambda xp: xp.isclose(a, b, equal_nan=equal_nan))
  same(lambda xp: xp.isclose(a[:, None], b, rtol=0.5, atol=1, equal_nan=equal_nan))
  same(lambda xp: xp.isclose(a, 1))
  same(lambda xp: xp.isclose(2.0, b))
  assert mt.allclose(a, a, equal_nan=equal_nan) == np.allclose(a, a, equal_nan=equal_nan)
  assert mt.allclose(a, b) == np.allclose(a, b)


# ---------------------------------------------------------------------- sorting, searching, sets
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float32, np.float64])
@FEW
@given(data=st.data(), shape=shapes)
def test_sort_argsort(dtype, data, shape):
  a = data.draw(hnp.arrays(dtype, shape,
                           elements=st.sampled_from([0, 1, 2, 3]).map(dtype) if dtype != np.bool_ else st.booleans()))
  if dtype in (np.float32, np.float64) and a.size: a.flat[0] = np.nan
  axis = data.draw(st.sampled_from([None, *range(-len(shape), len(shape))]))
  same(lambda xp: xp.argsort(a, axis=axis, kind="stable"))
  same(lambda xp: xp.sort(a, axis=axis))
  if axis is not None:      # descending and stable: a stable sort by minus the rank (NaN ranks highest, so first)
    key = -np.unique(a, return_inverse=True)[1].reshape(a.shape)
    check(mt.argsort(a, axis=axis, descending=True), np.argsort(key, axis=axis, kind="stable"))
    check(mt.sort(a, axis=axis, descending=True),
          np.take_along_axis(a, np.argsort(key, axis=axis, kind="stable"), axis))


def test_nonzero():
  a = np.array([[0, 1, 0], [2, 0, 3]])
  same(lambda xp: xp.nonzero(a))
  same(lambda xp: xp.nonzero(a > 5))
  same(lambda xp: xp.nonzero(np.array(1)))


@pytest.mark.parametrize("x", [np.array([3, 1, 2, 1, 3, 3]), np.array([[2.5, np.nan, 1], [np.nan, 2.5, -0.0]]),
                               np.array([], np.int8), np.array([True, False, True]), np.array(7)])
def test_unique(x):
  same(lambda xp: xp.unique(x))
  same(lambda xp: xp.unique(x, equal_nan=False))
  v, i, inv, c = np.unique(x.ravel(), return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
  want = tuple(np.asarray(r)
               for r in (v, i.astype(np.int64), inv.reshape(x.shape).astype(np.int64), c.astype(np.int64)))
  r = mt.unique_all(x)
  check(tuple(r), want)
  assert r._fields == ("values", "indices", "inverse_indices", "counts")
  check(tuple(mt.unique_counts(x)), (want[0], want[3]))
  check(tuple(mt.unique_inverse(x)), (want[0], want[2]))
  check(mt.unique_values(x), want[0])
  check(mt.unique_values(x), np.sort(np.unique_values(x)))


@given(data=st.data())
def test_unique_returns_as_numpy(data):
  from minitensor.testing import arrays, dtypes, shapes
  a = data.draw(arrays(dtype=dtypes(), shape=shapes(0, 3, 0, 4)))
  flags = data.draw(st.tuples(st.booleans(), st.booleans(), st.booleans()))
  axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
  kw = dict(zip(("return_index", "return_inverse", "return_counts"), flags), axis=axis,
            equal_nan=data.draw(st.booleans()))
  try: want = np.unique(a, **kw)
  except ValueError as e:
    with pytest.raises(type(e)): mt.unique(mt.asarray(a), **kw)
    return
  got = mt.unique(mt.asarray(a), **kw)
  assert isinstance(got, tuple) == isinstance(want, tuple)
  for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
    assert isinstance(g, mt.Tensor) and np.asarray(g).dtype == w.dtype
    np.testing.assert_array_equal(np.asarray(g), w)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("side", ["left", "right"])
@FEW
@given(data=st.data())
def test_searchsorted(dtype, side, data):
  vals = st.sampled_from([-3, -1, 0, 1, 2, 5, 9]).map(dtype)
  a = np.sort(data.draw(hnp.arrays(dtype, data.draw(st.sampled_from([0, 1, 5, 16])), elements=vals)))
  v = data.draw(hnp.arrays(dtype, data.draw(st.sampled_from([(), (3,), (2, 4)])), elements=vals))
  if np.dtype(dtype).kind == "f" and a.size:
    a[-1], v.flat[0] = np.nan, np.nan
  same(lambda xp: xp.searchsorted(a, v, side=side))
  same(lambda xp: xp.searchsorted(a, 1.5, side))
  perm = np.random.default_rng(0).permutation(a.size)
  same(lambda xp: xp.searchsorted(a[perm], v, side=side, sorter=np.argsort(a[perm], kind="stable")))


def test_searchsorted_errors():
  same(lambda xp: xp.searchsorted(np.ones((2, 2)), 1))
  with pytest.raises(ValueError): mt.searchsorted(np.ones(3), 1, side="middle")


@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("e, t", [(np.arange(-3, 6).reshape(3, 3), [1, 3, -2, 3]),
                                  (np.array([1.0, np.nan, 2.5]), [np.nan, 2.5]),
                                  (np.array([1, 2]), [1.0, 2.5]), (np.arange(4), []), (np.array(3), np.arange(5)),
                                  (np.array([-0.0, 1]), [0.0])])
def test_isin(e, t, invert):
  same(lambda xp: xp.isin(e, t, invert=invert))
