"""Functions and forms of real NumPy programs against NumPy: range indices, the stacks, tri, cov, corrcoef, the
random shuffles and permutations, isinstance, and NumPy's file functions on Tensors.

Results are exact except cov/corrcoef, whose sums run in another order than NumPy's: those are held to a
dtype-aware bound relative to the largest entry. Their data are small integers, so a constant variable centres
to exact zeros in both libraries and the NaNs of a zero variance fall in the same places. Each distinct graph
is one C compile: the example counts are kept low.
"""
import io
import warnings
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import minitensor as mt
from minitensor.backend.runtime import stats

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64]
FEW = settings(max_examples=max(4, settings.default.max_examples // 3))


def kernel_path() -> tuple[int, int, int]:
  """Counters that move whenever a Tensor is realized (a compile, or a hit or miss of the graph cache)."""
  return stats.compiles, stats.graph_hits, stats.graph_misses


def outcome(f, ns):
  """f(ns) as an ndarray, or the type of the exception it raised."""
  try: r = f(ns)
  except Exception as e: return type(e)
  if ns is mt: assert isinstance(r, mt.Tensor), type(r)
  return np.asarray(r)


def same(f) -> None:
  """f(np) and f(mt) agree exactly (dtype, shape, values), or both raise NumPy's exception type."""
  want, got = outcome(f, np), outcome(f, mt)
  while isinstance(want, type) and want.__module__.startswith("numpy._"): want = want.__mro__[1]   # UFuncTypeError...
  if isinstance(want, type): assert got is want or (isinstance(got, type) and issubclass(got, want)), (got, want)
  else:
    assert not isinstance(got, type), got
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


def close(got, want, rtol32: float, rtol64: float) -> None:
  """Same dtype, shape, NaN and inf positions; finite entries within rtol * max(1, largest |entry|)."""
  assert isinstance(got, mt.Tensor), type(got)
  g, w = np.asarray(got), np.asarray(want)
  assert (g.dtype, g.shape) == (w.dtype, w.shape)
  fin = np.isfinite(w)
  np.testing.assert_array_equal(g[~fin], w[~fin])
  scale = max(1.0, float(np.abs(w[fin]).max(initial=0)))
  assert np.all(np.abs(g[fin] - w[fin]) <= (rtol32 if w.dtype == np.float32 else rtol64) * scale), (g, w)


def values(data, shape, dtype) -> np.ndarray:
  """Small integers of dtype (exact in every dtype, so sums and means of few of them are exact)."""
  lo = 0 if np.dtype(dtype).kind in "bu" else -8
  return data.draw(hnp.arrays(np.int64, shape, elements=st.integers(lo, 8))).astype(dtype)


# ---------------------------------------------------------------------- a range in an index
A = np.arange(24.0).reshape(4, 6)
RANGE_INDICES = [range(2), ([0, 2], range(2)), (range(3), [5, 0, 1]), (slice(None), range(5, 0, -2)), range(0),
                 (range(-1, -4, -1), 2), (Ellipsis, range(1, 3)), (range(2), None), range(4, 6), (range(2), range(3))]


@pytest.mark.parametrize("idx", RANGE_INDICES, ids=str)
def test_range_index_reads_and_assigns_as_numpy(idx):
  same(lambda m: m.asarray(A)[idx])
  region = outcome(lambda m: A[idx], np)
  if isinstance(region, type): return
  v = -1.0 - np.arange(region.shape[-1]) if region.ndim else -1.0     # broadcast along the rows of the region

  def assign(m):
    x = mt.asarray(A) if m is mt else A.copy()
    x[idx] = v
    return x
  same(assign)


# ---------------------------------------------------------------------- stacks
STACKS = ["hstack", "vstack", "dstack", "column_stack"]


@FEW
@given(data=st.data(), base=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), k=st.integers(1, 3))
def test_stacks_match_numpy(data, base, k):
  arrays = []
  for _ in range(k):
    shape = list(base)
    change = data.draw(st.sampled_from(["same", "same", "resize", "drop"]))
    if change == "resize" and shape: shape[data.draw(st.integers(0, len(shape) - 1))] = data.draw(st.integers(0, 3))
    if change == "drop" and shape: shape.pop(0)
    arrays.append(values(data, tuple(shape), data.draw(st.sampled_from(DTYPES))))
  lazy = [mt.asarray(a) * 1 if a.dtype != np.bool_ else mt.asarray(a) for a in arrays]   # unrealized inputs
  for name in STACKS:
    before = kernel_path()
    try: r = getattr(mt, name)(lazy)
    except Exception: r = None
    assert kernel_path() == before, f"{name} realized something"
    same(lambda m: getattr(m, name)([m.asarray(a) for a in arrays] if m is mt else arrays))
    if r is not None: same(lambda m: getattr(np, name)(lazy if m is mt else arrays))   # NumPy dispatches to minitensor


@pytest.mark.parametrize("name", ["hstack", "vstack"])
@pytest.mark.parametrize("dtype,casting", [(np.float32, "same_kind"), (np.int8, "same_kind"), (np.int8, "unsafe"),
                                           (None, "no"), (None, "safe"), (np.int64, "equiv"), (None, "bogus")])
def test_hstack_vstack_dtype_and_casting(name, dtype, casting):
  a, b = np.arange(6, dtype=np.int32).reshape(2, 3), np.linspace(-2, 2, 6).reshape(2, 3)
  same(lambda m: getattr(m, name)([a, b], dtype=dtype, casting=casting))
  same(lambda m: getattr(m, name)([a, a.astype(np.int64)], dtype=dtype, casting=casting))


@pytest.mark.parametrize("name", STACKS)
def test_stack_errors(name):
  same(lambda m: getattr(m, name)([]))
  same(lambda m: getattr(m, name)(x for x in [np.ones(2)]))
  same(lambda m: getattr(m, name)([np.ones((2, 3)), np.ones((3, 2))]))
  same(lambda m: getattr(m, name)(np.arange(6).reshape(2, 3)))    # an array is iterated over its first axis
  same(lambda m: getattr(m, name)(mt.asarray(np.arange(6).reshape(2, 3)) if m is mt else np.arange(6).reshape(2, 3)))
  with pytest.raises(ValueError, match=name):
    getattr(mt, name)([np.ones((2, 3)), np.ones((3, 2))])


def test_row_stack_is_deprecated_vstack():
  a, b = np.arange(3), np.arange(3.0)
  with pytest.warns(DeprecationWarning, match="row_stack"): r = mt.row_stack([a, b])
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    want = np.row_stack([a, b])
    got_np = np.row_stack([mt.asarray(a), mt.asarray(b)])     # NumPy's alias calls np.vstack: dispatched
  assert isinstance(got_np, mt.Tensor)
  for g in (r, got_np): np.testing.assert_array_equal(np.asarray(g), want)


def test_numpy_stacks_on_tensors_return_tensors():
  ts = [mt.asarray(np.arange(6.0).reshape(2, 3)), mt.asarray(np.ones((2, 3), np.float32))]
  for name in STACKS + ["concatenate", "stack"]:
    r = getattr(np, name)(ts)
    assert isinstance(r, mt.Tensor), name
    np.testing.assert_array_equal(np.asarray(r), getattr(np, name)([np.asarray(t) for t in ts]))
  r = np.vstack(ts, dtype=np.float32)
  assert isinstance(r, mt.Tensor) and r.dtype == np.float32


# ---------------------------------------------------------------------- tri
@FEW
@given(N=st.integers(-1, 5), M=st.one_of(st.none(), st.integers(-1, 5)), k=st.integers(-6, 6),
       dtype=st.sampled_from(DTYPES))
def test_tri_matches_numpy(N, M, k, dtype):
  same(lambda m: m.tri(N, M, k, dtype))


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2, -1), (2.5,), (3, 3.5), (3, None, 0.5), (200, 3, 130), ("3",)],
                         ids=str)
def test_tri_odd_arguments_as_numpy(args):
  same(lambda m: m.tri(*args))


# ---------------------------------------------------------------------- cov and corrcoef
@FEW
@given(data=st.data(), V=st.integers(0, 3), N=st.integers(1, 5), dtype=st.sampled_from(DTYPES),
       out=st.sampled_from([None, np.float32, np.float64]), rowvar=st.booleans(), bias=st.booleans(),
       with_y=st.booleans(), weights=st.sampled_from(["", "f", "a", "fa"]))
def test_cov_corrcoef_match_numpy(data, V, N, dtype, out, rowvar, bias, with_y, weights):
  one_d = V == 1 and data.draw(st.booleans())
  shape = (N,) if one_d else (V, N) if rowvar else (N, V)
  m = values(data, shape, dtype)
  y = values(data, (N,) if one_d else (1, N) if rowvar else (N, 1), dtype) if with_y else None
  f = data.draw(hnp.arrays(np.int64, N, elements=st.integers(1, 3))) if "f" in weights else None
  a = data.draw(hnp.arrays(np.float64, N, elements=st.sampled_from([0.5, 1.0, 1.5, 2.0]))) if "a" in weights else None
  ddof = data.draw(st.sampled_from([None, 0, 1]))
  if N - (ddof if ddof is not None else 0 if bias else 1) <= 0: ddof = 0      # divisors <= 0: test_cov_edges
  kw = dict(rowvar=rowvar, bias=bias, ddof=ddof, fweights=f, aweights=a, dtype=out)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)                             # NaNs of zero variances
    want_c, want_r = np.cov(m, y, **kw), np.corrcoef(m, y, rowvar, dtype=out)
    t = mt.asarray(m) + 0 if dtype != np.bool_ else mt.asarray(m)             # an unrealized input
    before = kernel_path()
    got_c, got_r = mt.cov(t, y, **kw), mt.corrcoef(t, y, rowvar, dtype=out)
    assert kernel_path() == before, "cov/corrcoef realized something"
    close(got_c, want_c, 1e-5, 1e-12)
    close(got_r, want_r, 1e-5, 1e-12)
    close(np.cov(t, y, **kw), want_c, 1e-5, 1e-12)                              # np.cov dispatches to minitensor
    close(np.corrcoef(t, y, rowvar, dtype=out), want_r, 1e-5, 1e-12)


COV_EDGES = [(np.array([[1.0, 2, 4], [3, 1, 0]]), dict(ddof=3)), (np.array([[1.0, 2, 4], [3, 1, 0]]), dict(ddof=5)),
             (np.array([[1.0], [2.0]]), {}), (np.zeros((2, 0)), {}), (np.zeros(0), {}), (np.array([2.5]), {}),
             (np.array([[1.0, 2, 4], [3, 1, 0]]), dict(fweights=[0, 1, 0])), (np.array(3.0), {}),
             (np.array([[1.0, 2, 4], [3, 1, 0]]), dict(aweights=[0, 2.0, 0], ddof=1))]


@pytest.mark.parametrize("m,kw", COV_EDGES, ids=lambda x: str(getattr(x, "shape", x)))
def test_cov_edges_warn_and_match_numpy_inf_nan(m, kw):
  with warnings.catch_warnings(record=True) as w_np:
    warnings.simplefilter("always")
    want = np.cov(m, **kw)
  with warnings.catch_warnings(record=True) as w_mt:
    warnings.simplefilter("always")
    got = mt.cov(m, **kw)
  dof = [str(x.message) for x in w_np if "Degrees of freedom" in str(x.message)]
  assert dof == [str(x.message) for x in w_mt if "Degrees of freedom" in str(x.message)]
  assert isinstance(got, mt.Tensor) and (got.dtype, got.shape) == (want.dtype, want.shape)
  np.testing.assert_array_equal(np.asarray(got), want)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    same(lambda ns: ns.corrcoef(m))


def test_cov_shapes_of_empty_and_single_variable():
  for m in (np.zeros((0, 3)), np.zeros((0, 0)), [[1.0, 2.0, 4.0]], [1.0, 2.0, 4.0], [[1, 2, 3], [3, 3, 3], [1, 0, 1]]):
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", RuntimeWarning)                     # [3, 3, 3]: a zero variance, NaNs
      close(mt.cov(m), np.cov(m), 1e-5, 1e-12)
      close(mt.corrcoef(m), np.corrcoef(m), 1e-5, 1e-12)


COV_ERRORS = [dict(ddof=1.5), dict(fweights=[1.5, 1, 1]), dict(fweights=[[1, 1, 1]]), dict(fweights=[1, 1]),
              dict(fweights=[-1, 1, 1]), dict(aweights=[1, 1]), dict(aweights=[-1.0, 1, 1]),
              dict(aweights=[[1.0, 1, 1]]), dict(fweights=[0, 0, 0]), dict(dtype=np.int64), dict(dtype=bool),
              dict(y=np.ones((2, 4))), dict(y=np.ones((2, 2, 3))), dict(fweights=2)]


@pytest.mark.parametrize("kw", COV_ERRORS, ids=str)
def test_cov_errors_as_numpy(kw):
  m = np.array([[1.0, 2, 4], [3, 1, 0]])
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    same(lambda ns: ns.cov(m, **kw))
  same(lambda ns: ns.cov(np.ones((2, 2, 2))))
  with pytest.raises(ValueError, match="cov"): mt.cov(np.ones((2, 2, 2)))


# ---------------------------------------------------------------------- shuffle and permutation
SHAPES = [(7,), (5, 3), (4, 0), (0, 3), (1,), (6, 2, 2), (40,)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_legacy_shuffle_and_permutation_follow_numpys_stream(shape):
  a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
  for seed in (0, 3):
    np.random.seed(seed)
    want = a.copy()
    np.random.shuffle(want)
    want_p, want_i, want_next = np.random.permutation(a), np.random.permutation(shape[0]), np.random.rand()
    mt.random.seed(seed)
    t = mt.asarray(a) * 1                                    # an unrealized tensor
    before = kernel_path()
    mt.random.shuffle(t)
    got_p, got_i = mt.random.permutation(a), mt.random.permutation(shape[0])
    assert kernel_path() == before, "shuffle/permutation realized something"
    for g, w in ((t, want), (got_p, want_p), (got_i, want_i)):
      assert isinstance(g, mt.Tensor) and (g.dtype, g.shape) == (w.dtype, w.shape)
      np.testing.assert_array_equal(np.asarray(g), w)
    assert float(mt.random.rand()) == want_next               # the same number of draws as NumPy's


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_generator_shuffle_and_permutation_follow_numpys_stream(shape):
  a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
  for axis in range(-len(shape), len(shape)):
    g_np, g_mt = np.random.default_rng(7), mt.random.default_rng(7)
    want, t = a.copy(), mt.asarray(a)
    g_np.shuffle(want, axis=axis)
    g_mt.shuffle(t, axis=axis)
    for g, w in ((t, want), (g_mt.permutation(a, axis=axis), g_np.permutation(a, axis=axis)),
                 (g_mt.permutation(shape[axis]), g_np.permutation(shape[axis]))):
      assert isinstance(g, mt.Tensor) and (g.dtype, g.shape) == (w.dtype, w.shape)
      np.testing.assert_array_equal(np.asarray(g), w)
    assert float(g_mt.random()) == g_np.random()


def test_shuffle_of_other_objects_and_errors_as_numpy():
  np.random.seed(1)
  want = list(range(6))
  np.random.shuffle(want)
  mt.random.seed(1)
  got = list(range(6))
  mt.random.shuffle(got)
  assert got == want
  g_np, g_mt = np.random.default_rng(2), mt.random.default_rng(2)
  a, b = np.arange(12).reshape(3, 4), np.arange(12).reshape(3, 4)
  g_np.shuffle(a, axis=1)
  g_mt.shuffle(b, axis=1)
  np.testing.assert_array_equal(a, b)
  for f in (lambda r: r.shuffle(np.array(5.0)), lambda r: r.permutation(np.array(5.0)), lambda r: r.permutation(2.5),
            lambda r: r.permutation(-1)):
    same(lambda m: f(m.random))
    same(lambda m: f(m.random.default_rng(0)))
  same(lambda m: m.random.default_rng(0).shuffle(np.zeros((2, 3)), axis=2))
  with pytest.raises(TypeError): mt.random.shuffle(mt.asarray(5.0))
  with pytest.raises(np.exceptions.AxisError): mt.random.default_rng(0).shuffle(mt.zeros((2, 3)), axis=2)


def test_module_streams_are_independent_of_numpys_global_state():
  mt.random.seed(5)
  np.random.seed(9)
  np.random.rand(3)
  p = mt.random.permutation(10)
  mt.random.seed(5)
  np.testing.assert_array_equal(np.asarray(p), np.asarray(mt.random.permutation(10)))


def test_numpys_own_shuffle_of_a_small_tensor():
  a = np.arange(6.0)
  np.random.seed(4)
  want = a.copy()
  np.random.shuffle(want)
  np.random.seed(4)
  t = mt.asarray(a)
  with pytest.warns(UserWarning, match="Sequence"): np.random.shuffle(t)    # NumPy swaps elements through t[i]
  np.testing.assert_array_equal(np.asarray(t), want)


# ---------------------------------------------------------------------- isinstance and files
def test_a_tensor_is_not_an_ndarray():
  t = mt.asarray(np.arange(3.0))
  assert not isinstance(t, np.ndarray) and isinstance(t, mt.Tensor)
  assert isinstance(np.asarray(t), np.ndarray) and isinstance(t, (np.ndarray, mt.Tensor))
  assert hasattr(t, "__array_namespace__") and t.__array_namespace__() is mt


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64, np.bool_])
def test_numpy_files_round_trip_tensors(tmp_path, dtype):
  a = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
  t = (mt.asarray(a).T + 0).astype(dtype)                    # lazy: saving realizes it
  np.save(tmp_path / "t.npy", t)
  back = np.load(tmp_path / "t.npy")
  assert back.dtype == a.dtype and back.shape == (4, 3)
  np.testing.assert_array_equal(back, a.T)
  np.testing.assert_array_equal(np.asarray(mt.asarray(back)), a.T)
  np.savez(tmp_path / "z.npz", t=t, u=mt.asarray(a))
  with np.load(tmp_path / "z.npz") as z:
    np.testing.assert_array_equal(z["t"], a.T)
    np.testing.assert_array_equal(z["u"], a)
  fmt = "%.18e" if np.dtype(dtype).kind == "f" else "%d"
  got, want = io.StringIO(), io.StringIO()
  np.savetxt(got, t, fmt=fmt)
  np.savetxt(want, a.T, fmt=fmt)
  assert got.getvalue() == want.getvalue()
  np.savetxt(tmp_path / "t.txt", mt.asarray(a), delimiter=",")
  back = np.loadtxt(tmp_path / "t.txt", delimiter=",")
  np.testing.assert_array_equal(np.asarray(mt.asarray(back).astype(dtype)), a)
