"""The Array API 2024.12 additions: namespaces per version, DLPack in both directions, devices, the 2024.12
functions against NumPy, and array-agnostic code written only against x.__array_namespace__()."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
          "float64"]


# ---------------------------------------------------------------------- versions
def test_namespace_versions():
  x = mt.asarray([1.0, 2.0])
  assert mt.__array_api_version__ == "2025.12"
  assert x.__array_namespace__() is mt and x.__array_namespace__(api_version="2025.12") is mt
  assert type(mt.meshgrid(x, x)) is tuple and type(mt.broadcast_arrays(x, x)) is tuple
  assert mt.__array_namespace_info__().devices() == ("cpu",)
  for v in ("2021.12", "2022.12", "2023.12", "2024.12"):
    ns = x.__array_namespace__(api_version=v)
    assert ns.__array_api_version__ == v and ns.add is mt.add and ns.linalg is mt.linalg and ns.fft is mt.fft
    grids, arrays = ns.meshgrid(x, x, indexing="ij"), ns.broadcast_arrays(x, x[:, None])
    assert type(grids) is list and type(arrays) is list
    for got, want in zip(grids + arrays, list(np.meshgrid([1.0, 2.0], [1.0, 2.0], indexing="ij")) +
                         list(np.broadcast_arrays(np.array([1.0, 2.0]), np.array([[1.0], [2.0]])))):
      np.testing.assert_array_equal(np.asarray(got), want)
    assert ns.__array_namespace_info__().devices() == ["cpu"]
    assert mt.__array_api_version__ == "2025.12"                 # the copy leaves minitensor alone
  with pytest.raises(ValueError, match="api_version"): x.__array_namespace__(api_version="2020.10")


# ---------------------------------------------------------------------- DLPack and devices
@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_round_trips_without_copies(dtype):
  a = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
  t = mt.from_dlpack(a)                                          # NumPy -> minitensor: wraps a's memory
  assert isinstance(t, mt.Tensor) and t.dtype == a.dtype and np.shares_memory(np.asarray(t), a)
  np.testing.assert_array_equal(np.asarray(t), a)
  r = (t + t).astype(dtype)                                      # lazy: __dlpack__ realizes it
  b = np.from_dlpack(r)                                          # minitensor -> NumPy: the realized buffer itself
  assert np.shares_memory(b, np.asarray(r)) and not b.flags.writeable
  np.testing.assert_array_equal(b, (a + a).astype(dtype))
  back = mt.from_dlpack(b)
  assert np.shares_memory(np.asarray(back), np.asarray(r))
  c = np.from_dlpack(r, copy=True)
  assert c.flags.writeable and not np.shares_memory(c, np.asarray(r))
  assert not np.shares_memory(np.asarray(mt.from_dlpack(a, copy=True)), a)


def test_dlpack_edges():
  t = mt.asarray(np.arange(6.0)) * 2
  assert t.__dlpack_device__() == (1, 0) and t.device == "cpu" and t.to_device("cpu") is t
  with pytest.raises(ValueError): t.to_device("gpu")

  class Legacy:                              # a consumer of DLPack < 1.0: no read-only flag, so it gets a copy
    def __dlpack__(self, **kw): return t.__dlpack__()
    def __dlpack_device__(self): return t.__dlpack_device__()
  old = np.from_dlpack(Legacy())
  np.testing.assert_array_equal(old, np.arange(6.0) * 2)
  assert not np.shares_memory(old, np.asarray(t))
  class Legacy2:
    def __init__(self, x): self.x = x
    def __dlpack__(self, **kw): return self.x.__dlpack__(copy=False)
    def __dlpack_device__(self): return (1, 0)

  class Sharing:                             # DLPack < 1.0 and copy=False: writable memory shared, as NumPy's
    def __dlpack__(self, **kw): return t.__dlpack__(copy=False)
    def __dlpack_device__(self): return t.__dlpack_device__()
  before = t + 0
  before.realize()
  shared = np.from_dlpack(Sharing())
  assert np.shares_memory(shared, np.asarray(t)) and np.array_equal(shared, np.arange(6.0) * 2)   # no copy
  t[0] = 5.0                                  # the Tensor stays writable; earlier results keep their values
  assert float(t[0]) == 5.0 and np.array_equal(np.asarray(before), np.arange(6.0) * 2)
  np.testing.assert_array_equal(np.from_dlpack(Legacy2(t[1:])), np.asarray(t[1:]))    # a view: a copy of it
  with pytest.raises(BufferError, match="read-only"): mt.broadcast_to(t, (2, 6)).__dlpack__(copy=False)
  with pytest.raises(BufferError): t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
  assert mt.from_dlpack(t) is t and mt.from_dlpack(t, copy=True) is not t
  strided = np.arange(12.0).reshape(3, 4)[:, ::2]                # not contiguous: copied
  np.testing.assert_array_equal(np.asarray(mt.from_dlpack(strided)), strided)
  with pytest.raises(ValueError): mt.from_dlpack(strided, copy=False)
  with pytest.raises(ValueError): mt.from_dlpack(strided, device="gpu")


# ---------------------------------------------------------------------- 2024.12 functions
@given(data=st.data())
def test_nextafter(data):
  dtype = data.draw(st.sampled_from([np.float32, np.float64]))
  shape = data.draw(mtt.shapes(max_dims=2))
  x1, x2 = (data.draw(mtt.arrays(dtype, shape)) for _ in range(2))
  mtt.assert_matches_numpy(lambda a, b: (mt if isinstance(a, mt.Tensor) else np).nextafter(a, b), x1, x2,
                           rtol=0, atol=0)


@given(data=st.data())
def test_cumulative_prod(data):
  shape = data.draw(mtt.shapes(min_dims=1, max_dims=3))
  dtype = data.draw(st.sampled_from([np.int32, np.float64, np.bool_]))
  x = data.draw(mtt.arrays(dtype, shape, elements=st.integers(-3, 3) if dtype == np.int32 else
                           st.booleans() if dtype == np.bool_ else st.floats(-2, 2)))
  axis = data.draw(st.integers(-len(shape), len(shape) - 1)) if len(shape) > 1 else data.draw(st.none() | st.just(0))
  initial = data.draw(st.booleans())
  mtt.assert_matches_numpy(lambda a: (mt if isinstance(a, mt.Tensor) else np).cumulative_prod(
    a, axis=axis, include_initial=initial), x)
  with pytest.raises(ValueError): mt.cumulative_prod(np.ones((2, 2)))


def test_other_2024_functions():
  a = np.array([[3.0, -1.0, 2.0, 2.0], [0.5, 4.0, -2.0, 1.0]])
  s = np.sort(a, axis=-1)
  for f in (lambda xp, x: xp.diff(x, axis=0), lambda xp, x: xp.reciprocal(x),
            lambda xp, x: xp.take_along_axis(x, xp.argsort(x, axis=1), axis=1),
            lambda xp, x: xp.count_nonzero(x > 1, axis=1)):
    mtt.assert_matches_numpy(lambda x: f(mt if isinstance(x, mt.Tensor) else np, x), a)
  for side in ("left", "right"):
    np.testing.assert_array_equal(np.asarray(mt.searchsorted(s[0], a[1], side=side)),
                                  np.searchsorted(s[0], a[1], side=side))


# ---------------------------------------------------------------------- array-agnostic code
def agnostic(x, y):
  """Code written only against the array's namespace, as a library supporting several array types is."""
  xp = x.__array_namespace__()
  z = (x - xp.mean(x, axis=-1, keepdims=True)) / xp.std(x, axis=-1, keepdims=True, correction=1)
  e = xp.exp(z - xp.max(z, axis=-1, keepdims=True))
  p = e / xp.sum(e, axis=-1, keepdims=True)
  g = xp.linalg.matmul(x, xp.linalg.matrix_transpose(y))
  return (p, xp.linalg.vector_norm(p, axis=-1), xp.cumulative_sum(p, axis=1, include_initial=True),
          xp.where(p > 0.2, p, xp.zeros_like(p)), xp.linalg.trace(g), xp.linalg.matrix_norm(g, ord=1),
          xp.fft.fftshift(x, axes=(-1,)), xp.concat([x, y], axis=0), xp.linalg.cross(x[:, :3], y[:, :3]),
          xp.astype(xp.argmax(x, axis=1), xp.int32), xp.nextafter(x, y), xp.linalg.det(g[:, :3] @ g[:3, :]))


def test_array_agnostic_code_runs_on_numpy_and_minitensor():
  rng = np.random.default_rng(2024)
  x, y = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
  want = agnostic(x, y)
  got = agnostic(mt.asarray(x), mt.asarray(y))
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert isinstance(g, mt.Tensor)
    assert g.shape == w.shape and g.dtype == w.dtype
    np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------- 2025.12, and the conformance suite's findings
def test_2025_12_additions():
  a = np.array([[2.0, 1.0], [-1.0, 0.5]], np.float32)           # complex eigenvalues
  s = np.array([[2.0, 0.0], [0.0, 3.0]])                         # real ones: still complex, as the standard says
  for m, cd in ((a, np.complex64), (s, np.complex128)):
    w, v = mt.linalg.eig(mt.asarray(m))
    assert w.dtype == v.dtype == cd and mt.linalg.eigvals(mt.asarray(m)).dtype == cd
    np.testing.assert_allclose(np.asarray(mt.asarray(m).astype(cd) @ v), np.asarray(v * w[None, :]), atol=1e-5)
    np.testing.assert_allclose(np.sort_complex(np.asarray(mt.linalg.eigvals(mt.asarray(m)))),
                               np.sort_complex(np.linalg.eigvals(m).astype(cd)), rtol=1e-5)
  assert mt.linalg.eig(mt.asarray(s))._fields == ("eigenvalues", "eigenvectors")
  assert mt.broadcast_shapes((2, 1), (3,)) == (2, 3)
  np.testing.assert_array_equal(np.asarray(mt.isin(mt.asarray([1, 2, 3]), 2, invert=True)), [True, False, True])
  np.testing.assert_array_equal(np.asarray(mt.searchsorted(mt.asarray([1.0, 2.0, 3.0]), 2.5)), 2)


def test_conformance_findings():
  z = mt.asarray(np.array([1j, 2j, 3j]))
  w = mt.asarray(np.array([1, 2j, 3]))
  assert complex(mt.linalg.vecdot(z, w)) == complex(np.vecdot(np.array([1j, 2j, 3j]), np.array([1, 2j, 3])))
  assert complex(mt.vecdot(z, w)) == 4 - 10j
  for upper in (False, True):                                   # complex Hermitian: the bounds of a complex WHERE
    h = mt.broadcast_to(mt.eye(3, dtype=mt.complex64), (2, 3, 3))
    r = mt.linalg.cholesky(h, upper=upper)
    assert r.dtype == mt.complex64 and bool(mt.all(r == (mt.triu(r) if upper else mt.tril(r))))
  a = np.array([[4, 2 - 1j], [2 + 1j, 3]])
  np.testing.assert_allclose(np.asarray(mt.linalg.cholesky(mt.asarray(a))), np.linalg.cholesky(a))
  e = mt.copysign(mt.zeros(0, mt.float32), 0)
  assert e.shape == (0,) and e.dtype == mt.float32
  x = np.array([-np.nan, np.nan, -0.0, 0.0, -np.inf, 1.0], np.float32)
  np.testing.assert_array_equal(np.asarray(mt.signbit(mt.asarray(x))), np.signbit(x))
  lazy = mt.signbit(mt.asarray(x) * 1)
  assert lazy.uop.op is mt.Tensor(lazy.uop).uop.op and lazy.uop.op.name == "SIGNBIT"      # an op: lazy, fused
  np.testing.assert_array_equal(np.asarray(lazy), np.signbit(x))
  np.testing.assert_array_equal(np.asarray(mt.copysign(1.0, mt.asarray(x))), np.copysign(1.0, x))
  assert bool(mt.signbit(-0.0)) and not bool(mt.signbit(0))
