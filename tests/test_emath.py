"""minitensor.emath against numpy.emath: complex results out of the real domain, real ones inside it."""
import warnings
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
import minitensor.emath
import minitensor.testing as mtt

UNARY = ["sqrt", "log", "log2", "log10", "arccos", "arcsin", "arctanh"]


@pytest.mark.parametrize("name", UNARY)
@given(a=mtt.arrays(st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.complex128]),
                    mtt.shapes(max_dims=2)))
def test_unary(name, a):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    mtt.assert_matches_numpy(lambda x: getattr(mt.emath if isinstance(x, mt.Tensor) else np.emath, name)(x), a,
                             rtol=0, atol=0)


@given(x=mtt.arrays(np.float64, mtt.shapes(max_dims=2), elements=st.floats(-5, 5)),
       p=st.sampled_from([2, 0.5, -1.5, 3]), n=st.sampled_from([2, 3.0, -2.0]))
def test_power_and_logn(x, p, n):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    mtt.assert_matches_numpy(lambda v: (mt.emath if isinstance(v, mt.Tensor) else np.emath).power(v, p), x,
                             rtol=0, atol=0)
    mtt.assert_matches_numpy(lambda v: (mt.emath if isinstance(v, mt.Tensor) else np.emath).logn(n, v), x,
                             rtol=0, atol=0)


def test_scalars_and_dispatch():
  r = mt.emath.sqrt(-1)
  assert isinstance(r, mt.Tensor) and r.dtype == np.complex128 and complex(r) == 1j
  assert mt.emath.sqrt(4).dtype == np.float64 and float(mt.emath.log(mt.asarray(np.e))) == 1.0
  got = np.emath.log(mt.asarray([-1.0, 1.0]))                   # numpy.emath on a Tensor is minitensor's
  assert isinstance(got, mt.Tensor) and np.array_equal(np.asarray(got), np.emath.log([-1.0, 1.0]))
  assert mt.emath is minitensor.emath and "emath" in dir(mt)
