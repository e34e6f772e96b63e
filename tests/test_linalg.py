"""mt.linalg against numpy.linalg: every function, its named tuples, laziness where the docs promise it, and
NumPy's exceptions (LinAlgError for singular and non-square matrices)."""
import inspect
import math
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt

rng = np.random.default_rng(18)
FLOATS = [np.float32, np.float64]


def xp(a):
  return mt if isinstance(a, mt.Tensor) else np


def lazy(t) -> bool:
  """Whether t is still an unrealized graph (nothing computed yet)."""
  return isinstance(t, mt.Tensor) and t._data is None


def spd(n: int, dtype, batch=()) -> np.ndarray:
  a = rng.standard_normal(batch + (n, n))
  return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


# ---------------------------------------------------------------------- lazy functions
@given(data=st.data())
def test_vector_norm_matches_numpy(data):
  shape = data.draw(mtt.shapes(min_dims=1, max_dims=3))
  dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32]))
  x = data.draw(mtt.arrays(dtype, shape, elements=st.integers(-20, 20) if dtype == np.int32 else
                           st.floats(-20, 20, width=np.dtype(dtype).itemsize * 8)))
  axis = data.draw(st.none() | mtt.axes(len(shape)).filter(lambda a: a is not None))
  ord_ = data.draw(st.sampled_from([2, 1, math.inf, -math.inf, 0, 3, 0.5]))
  keepdims = data.draw(st.booleans())
  mtt.assert_matches_numpy(lambda a: xp(a).linalg.vector_norm(a, axis=axis, keepdims=keepdims, ord=ord_), x)


@pytest.mark.parametrize("ord_", ["fro", 1, -1, math.inf, -math.inf, 2, -2, "nuc"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_matrix_norm(ord_, dtype):
  x = rng.standard_normal((2, 3, 4)).astype(dtype)
  for keepdims in (False, True):
    mtt.assert_matches_numpy(lambda a: xp(a).linalg.matrix_norm(a, ord=ord_, keepdims=keepdims), x)
  if ord_ not in (2, -2, "nuc"): assert lazy(mt.linalg.matrix_norm(x, ord=ord_))
  for empty in (np.zeros((0, 3), dtype), np.zeros((2, 3, 0), dtype)):      # 0 or NumPy's ValueError
    mtt.assert_matches_numpy(lambda a: xp(a).linalg.matrix_norm(a, ord=ord_), empty)


@pytest.mark.parametrize("ord_", [None, "fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
def test_norm_numpy_dispatch(ord_):
  m, v, b = rng.standard_normal((3, 4)), rng.standard_normal(5), rng.standard_normal((2, 3, 4))
  mtt.assert_matches_numpy(lambda a: xp(a).linalg.norm(a, ord=ord_), m)
  mtt.assert_matches_numpy(lambda a: xp(a).linalg.norm(a, ord=ord_, axis=(2, 0), keepdims=True), b)
  if not isinstance(ord_, str):
    mtt.assert_matches_numpy(lambda a: xp(a).linalg.norm(a, ord=ord_), v)
    mtt.assert_matches_numpy(lambda a: xp(a).linalg.norm(a, ord=ord_, axis=1), b)
  mtt.assert_matches_numpy(lambda a: xp(a).linalg.norm(a), b)                    # flattened 2-norm
  mtt.assert_matches_numpy(lambda a: xp(a).linalg.norm(a), np.arange(6).reshape(2, 3))   # ints: float64
  with pytest.raises(ValueError): mt.linalg.norm(b, ord=1)
  with pytest.raises(ValueError): mt.linalg.norm(v, ord="fro")


def test_products_trace_diagonal():
  a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
  v, w = rng.standard_normal(4), rng.standard_normal(6)
  cases = [(lambda x, y: xp(x).linalg.matmul(x, y), a, b), (lambda x, y: xp(x).linalg.tensordot(x, y, axes=1), a, b[0]),
           (lambda x, y: xp(x).linalg.tensordot(x, y, axes=([1, 2], [0, 1])), a, rng.standard_normal((3, 4, 2))),
           (lambda x, y: xp(x).linalg.vecdot(x, y), a, v), (lambda x, y: xp(x).linalg.vecdot(x, y, axis=1), b, b),
           (lambda x, y: xp(x).linalg.outer(x, y), v, w)]
  for f, x, y in cases:
    mtt.assert_matches_numpy(f, x, y)
    assert lazy(f(mt.asarray(x), mt.asarray(y)))
  for k in (-2, 0, 1, 5):
    mtt.assert_matches_numpy(lambda x: xp(x).linalg.trace(x, offset=k), a)
    mtt.assert_matches_numpy(lambda x: xp(x).linalg.diagonal(x, offset=k), a)
  mtt.assert_matches_numpy(lambda x: xp(x).linalg.trace(x, dtype=np.float32), a)
  mtt.assert_matches_numpy(lambda x: xp(x).linalg.trace(x), np.arange(18, dtype=np.int8).reshape(2, 3, 3))
  mtt.assert_matches_numpy(lambda x: xp(x).linalg.matrix_transpose(x), a)
  assert lazy(mt.linalg.trace(a)) and lazy(mt.linalg.matrix_transpose(mt.asarray(a) + 1))
  with pytest.raises(ValueError): mt.linalg.outer(a, v)
  with pytest.raises(ValueError): mt.linalg.trace(v)


@pytest.mark.parametrize("shapes,axis", [(((3,), (3,)), -1), (((4, 3), (3,)), -1), (((2, 1, 3), (5, 3)), -1),
                                         (((3, 4), (3, 4)), 0), (((2, 3, 2), (2, 3, 2)), 1)])
def test_cross(shapes, axis):
  x, y = (rng.integers(-9, 9, s).astype(np.float64) for s in shapes)
  mtt.assert_matches_numpy(lambda a, b: xp(a).linalg.cross(a, b, axis=axis), x, y)
  mtt.assert_matches_numpy(lambda a, b: xp(a).linalg.cross(a, b, axis=axis), x.astype(np.int8), y.astype(np.int8))
  assert lazy(mt.linalg.cross(x, y, axis=axis))
  with pytest.raises(ValueError): mt.linalg.cross(np.ones(2), np.ones(2))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 16, -1, -3])
def test_matrix_power(n):
  x = (np.eye(3) + rng.standard_normal((2, 3, 3)) / 4)
  mtt.assert_matches_numpy(lambda a: xp(a).linalg.matrix_power(a, n), x)
  if n > 1: assert lazy(mt.linalg.matrix_power(x, n))
  ints = rng.integers(-3, 3, (3, 3))
  if n >= 0: mtt.assert_matches_numpy(lambda a: xp(a).linalg.matrix_power(a, n), ints)
  t = mt.asarray(x)
  r = mt.linalg.matrix_power(t, 1)
  r += 1                                    # a new Tensor: the input is not changed
  np.testing.assert_array_equal(np.asarray(t), x)
  with pytest.raises(np.linalg.LinAlgError): mt.linalg.matrix_power(np.ones((2, 3)), 2)
  with pytest.raises(TypeError): mt.linalg.matrix_power(x, 1.5)


# ---------------------------------------------------------------------- LAPACK through NumPy
@pytest.mark.parametrize("dtype", FLOATS)
def test_factorizations_match_numpy(dtype):
  a = rng.standard_normal((2, 4, 4)).astype(dtype)
  r = rng.standard_normal((2, 5, 3)).astype(dtype)
  s = spd(4, dtype, (2,))
  rhs, vec = rng.standard_normal((2, 4, 2)).astype(dtype), rng.standard_normal(4).astype(dtype)
  cases = [("det", (a,), {}), ("slogdet", (a,), {}), ("inv", (a,), {}), ("solve", (a, rhs), {}),
           ("solve", (a[0], vec), {}), ("cholesky", (s,), {}), ("cholesky", (s,), {"upper": True}), ("qr", (r,), {}),
           ("qr", (r,), {"mode": "complete"}),
           ("qr", (r,), {"mode": "r"}), ("svd", (r,), {}), ("svd", (r,), {"full_matrices": False}),
           ("svd", (r,), {"compute_uv": False}), ("svdvals", (r,), {}), ("eigh", (s,), {}),
           ("eigh", (s,), {"UPLO": "U"}),
           ("eigvalsh", (s,), {}), ("pinv", (r,), {}), ("pinv", (r,), {"rtol": 0.5}), ("matrix_rank", (r,), {}),
           ("matrix_rank", (np.ones((3, 3), dtype),), {})]
  for name, args, kw in cases:
    mtt.assert_matches_numpy(lambda *xs: getattr(xp(xs[0]).linalg, name)(*xs, **kw), *args)
  x, res, rank, sv = mt.linalg.lstsq(r[0], rhs[0, :, :1][:3].repeat(5, 0)[:5])
  want = np.linalg.lstsq(r[0], rhs[0, :, :1][:3].repeat(5, 0)[:5])
  for g, w in zip((x, res, sv), (want[0], want[1], want[3])):
    assert isinstance(g, mt.Tensor)
    np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5)
  assert rank == want[2] and type(rank) is int


def test_named_results():
  s = spd(3, np.float64)
  e = mt.linalg.eigh(s)
  assert isinstance(e, mt.linalg.EighResult) and e._fields == ("eigenvalues", "eigenvectors")
  np.testing.assert_allclose(np.asarray((e.eigenvectors * e.eigenvalues) @ e.eigenvectors.mT), s, atol=1e-10)
  q = mt.linalg.qr(s)
  assert isinstance(q, mt.linalg.QRResult) and q._fields == ("Q", "R")
  np.testing.assert_allclose(np.asarray(q.Q @ q.R), s, atol=1e-10)
  u = mt.linalg.svd(s)
  assert isinstance(u, mt.linalg.SVDResult) and u._fields == ("U", "S", "Vh")
  np.testing.assert_allclose(np.asarray((u.U * u.S[..., None, :]) @ u.Vh), s, atol=1e-10)
  d = mt.linalg.slogdet(s)
  assert isinstance(d, mt.linalg.SlogdetResult) and d._fields == ("sign", "logabsdet")
  np.testing.assert_allclose(float(d.sign) * math.exp(float(d.logabsdet)), np.linalg.det(s))
  assert all(isinstance(v, mt.Tensor) for v in (*e, *q, *u, *d))


def test_errors_are_numpys():
  sing = np.array([[1.0, 2.0], [2.0, 4.0]])
  for f in (lambda: mt.linalg.inv(sing), lambda: mt.linalg.solve(sing, np.ones(2)),
            lambda: mt.linalg.cholesky(-np.eye(2)), lambda: mt.linalg.det(np.ones((2, 3))),
            lambda: mt.linalg.inv(np.ones(3))):
    with pytest.raises(np.linalg.LinAlgError) as e: f()
  assert "shape" in str(e.value) and mt.linalg.LinAlgError is np.linalg.LinAlgError
  with pytest.raises(np.linalg.LinAlgError, match="inv: Singular matrix"): mt.linalg.inv(sing)
  with pytest.raises(ValueError): mt.linalg.matrix_norm(np.ones(3))
  with pytest.raises(ValueError): mt.linalg.matrix_norm(np.ones((2, 2)), ord=3)


def test_numpy_linalg_calls_dispatch_to_minitensor():
  t = mt.asarray(spd(3, np.float64))
  for name in ("norm", "det", "inv", "cholesky", "matrix_rank", "svdvals"):
    r = getattr(np.linalg, name)(t)
    assert isinstance(r, mt.Tensor), name
    np.testing.assert_allclose(np.asarray(r), getattr(np.linalg, name)(np.asarray(t)), rtol=1e-12)


def test_signatures():
  """Positional-only first parameters; the standard's keywords by name."""
  for name, params in {"vector_norm": ["axis", "keepdims", "ord"], "matrix_norm": ["keepdims", "ord"],
                       "svd": ["full_matrices"], "qr": ["mode"], "pinv": ["rtol"], "matrix_rank": ["rtol"],
                       "cholesky": ["upper"], "trace": ["offset", "dtype"], "diagonal": ["offset"], "cross": ["axis"],
                       "vecdot": ["axis"], "tensordot": ["axes"]}.items():
    sig = inspect.signature(getattr(mt.linalg, name))
    assert list(sig.parameters.values())[0].kind is inspect.Parameter.POSITIONAL_ONLY, name
    assert set(params) <= set(sig.parameters), name
