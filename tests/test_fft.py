"""mt.fft against numpy.fft: values compared through np.asarray(result), so the tests hold whether a complex result
is a Tensor (once minitensor has complex dtypes) or NumPy's ndarray (before); real results are Tensors either way."""
import inspect
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt

rng = np.random.default_rng(1818)
NORMS = [None, "backward", "ortho", "forward"]
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn"]
REAL_RESULT = {"irfft", "hfft", "irfftn"}


def check(name: str, x: np.ndarray, **kw) -> None:
  got, want = getattr(mt.fft, name)(mt.asarray(x), **kw), getattr(np.fft, name)(x, **kw)
  if name in REAL_RESULT or want.dtype.kind != "c": assert isinstance(got, mt.Tensor), name
  g = np.asarray(got)
  assert g.shape == want.shape and g.dtype == want.dtype, (name, kw, g.shape, g.dtype, want.shape, want.dtype)
  np.testing.assert_allclose(g, want, rtol=1e-5 if want.dtype in (np.float32, np.complex64) else 1e-12, atol=1e-6)


@given(data=st.data())
def test_one_dimensional_transforms(data):
  shape = data.draw(mtt.shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
  dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32]))
  x = data.draw(mtt.arrays(dtype, shape, elements=st.integers(-50, 50) if dtype == np.int32 else
                           st.floats(-50, 50, width=np.dtype(dtype).itemsize * 8)))
  name = data.draw(st.sampled_from(ONE_D))
  axis = data.draw(st.integers(-len(shape), len(shape) - 1))
  n = data.draw(st.none() | st.integers(2, 8))
  if name in ("irfft", "hfft") and n is None and shape[axis] == 1: n = 2     # NumPy: the output needs >= 1 point
  check(name, x, n=n, axis=axis, norm=data.draw(st.sampled_from(NORMS)))


@pytest.mark.parametrize("name", N_D)
@pytest.mark.parametrize("norm", NORMS)
def test_n_dimensional_transforms(name, norm):
  x = rng.standard_normal((3, 4, 6))
  check(name, x, norm=norm)
  check(name, x, axes=(0, 2), norm=norm)
  check(name, x, s=(4, 4), axes=(-1, 0), norm=norm)
  check(name, x.astype(np.float32), axes=(1,), norm=norm)


def test_round_trips():
  x = rng.standard_normal((4, 8))
  np.testing.assert_allclose(np.asarray(mt.fft.irfft(mt.fft.rfft(x), n=8)), x, atol=1e-12)
  np.testing.assert_allclose(np.asarray(mt.fft.ifft(mt.fft.fft(x))).real, x, atol=1e-12)
  np.testing.assert_allclose(np.asarray(mt.fft.irfftn(mt.fft.rfftn(x), s=x.shape, axes=(0, 1))), x, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 11])
@pytest.mark.parametrize("d", [1.0, 0.25, 3])
def test_frequencies_are_lazy_and_exact(n, d):
  for name in ("fftfreq", "rfftfreq"):
    got = getattr(mt.fft, name)(n, d)
    assert got._data is None                                   # a graph: nothing computed yet
    want = getattr(np.fft, name)(n, d)
    g = np.asarray(got)
    assert g.dtype == want.dtype and np.array_equal(g, want), (name, g, want)
    assert np.asarray(getattr(mt.fft, name)(n, d=d, dtype=np.float32)).dtype == np.float32
  with pytest.raises(ValueError): mt.fft.fftfreq(0)
  with pytest.raises(ValueError): mt.fft.fftfreq(3, device="gpu")


@pytest.mark.parametrize("shape", [(5,), (4, 7), (2, 3, 6)])
def test_shifts(shape):
  x = rng.standard_normal(shape)
  for axes in [None, 0, -1, (0,), tuple(range(len(shape)))[::-1]]:
    for name in ("fftshift", "ifftshift"):
      mtt.assert_matches_numpy(lambda a: (mt if isinstance(a, mt.Tensor) else np).fft.__dict__[name](a, axes=axes), x)
      assert getattr(mt.fft, name)(mt.asarray(x) + 1, axes=axes)._data is None
  np.testing.assert_array_equal(np.asarray(mt.fft.ifftshift(mt.fft.fftshift(x))), x)


def test_errors_and_dispatch():
  with pytest.raises(ValueError): mt.fft.fft(np.float64(1.0))
  with pytest.raises(ValueError): mt.fft.fft(np.ones(4), norm="sideways")
  with pytest.raises(np.exceptions.AxisError): mt.fft.fftshift(np.ones(3), axes=2)
  t = mt.asarray(rng.standard_normal(8))
  np.testing.assert_allclose(np.asarray(np.fft.rfft(t)), np.fft.rfft(np.asarray(t)))     # numpy.fft -> mt.fft
  assert isinstance(np.fft.fftshift(t), mt.Tensor)


def test_signatures():
  for name in ONE_D + N_D + ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]:
    ps = list(inspect.signature(getattr(mt.fft, name)).parameters.values())
    assert ps[0].kind is inspect.Parameter.POSITIONAL_ONLY, name
    want = {"n", "axis", "norm"} if name in ONE_D else {"s", "axes", "norm"} if name in N_D else \
           {"d", "dtype", "device"} if "freq" in name else {"axes"}
    assert want <= {p.name for p in ps}, name
