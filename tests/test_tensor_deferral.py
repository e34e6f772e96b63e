"""NumPy's deferral rules in Tensor's operators and ufuncs (tensor.binop, tensor.defers, interop's NEP 13 check).

Modelled on dask's test_binary_operation_type_precedence: for an array type above Tensor in the type-casting
hierarchy (dask arrays, xarray objects, pandas objects), `op(upper, t)` and `op(t, upper)` are the upper type, for
every operator and for NumPy's ufuncs, and their values are NumPy's. Types that opt out of ufuncs
(`__array_ufunc__ = None`) or state a higher `__array_priority__` get the operator; building `t + dask_array`
computes nothing.
"""
import operator
import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr
import minitensor as mt
import minitensor.dask  # noqa: F401  (registers Tensor as a dask chunk type)

A = np.linspace(0.5, 3.0, 24).reshape(4, 6)
B = np.linspace(1.0, 2.0, 24).reshape(4, 6)[::-1].copy()
OPS = [operator.add, operator.eq, operator.gt, operator.ge, operator.lt, operator.le, operator.mod, operator.mul,
       operator.ne, operator.pow, operator.sub, operator.truediv, operator.floordiv, np.add, np.subtract, np.hypot]
UPPER = {
  "dask": (lambda a: da.from_array(a, chunks=(2, 3)), da.Array, lambda r: r.compute()),
  "xarray": (lambda a: xr.DataArray(a, dims=("x", "y")), xr.DataArray, lambda r: r.data),
  "pandas": (lambda a: pd.Series(a), pd.Series, lambda r: r.to_numpy()),      # (pandas takes 2-d ndarrays only)
}


# pandas itself defers ufuncs other than its operators' (np.hypot) to every other __array_ufunc__
# (pandas.core.arraylike.array_ufunc), so there both sides refuse, as for any duck array pandas does not know
@pytest.mark.parametrize("kind,op", [(k, op) for k in UPPER for op in OPS if not (k == "pandas" and op is np.hypot)],
                         ids=lambda x: getattr(x, "__name__", x))
def test_binary_operation_type_precedence(kind, op):
  make, typ, data = UPPER[kind]
  a, b = (A.ravel(), B.ravel()) if kind == "pandas" else (A, B)
  up, t = make(a), mt.asarray(b)
  for got, want in ((op(up, t), op(a, b)), (op(t, up), op(b, a))):
    assert type(got) is typ, f"{op.__name__}({kind}, Tensor) gave {type(got).__name__}"
    np.testing.assert_allclose(np.asarray(data(got)), want, rtol=1e-12)


def test_matmul_and_divmod_defer():
  d, t = da.from_array(A, chunks=(2, 3)), mt.asarray(B.T)
  for got, want in ((t @ d, B.T @ A), (d @ t, A @ B.T)):
    assert type(got) is da.Array
    np.testing.assert_allclose(np.asarray(got.compute()), want, rtol=1e-12)
  q, r = divmod(mt.asarray(B), da.from_array(A, chunks=2))
  assert type(q) is type(r) is da.Array
  np.testing.assert_array_equal(np.asarray(q.compute()), B // A)
  np.testing.assert_allclose(np.asarray(r.compute()), B % A, rtol=1e-12)


def test_xarray_and_pandas_keep_their_labels():
  s = pd.Series([1.0, 2.0, 3.0, 4.0], index=list("abcd"))
  got = mt.asarray([1.0, 0.0, 1.0, 0.0]) + s
  assert type(got) is pd.Series and list(got.index) == list("abcd")
  np.testing.assert_array_equal(got.to_numpy(), np.array([1.0, 0, 1, 0]) + s.to_numpy())
  x = xr.DataArray(A, dims=("x", "y"), coords={"x": [10, 20, 30, 40]})
  got = mt.asarray(B) * x
  assert got.dims == ("x", "y") and list(got.x.values) == [10, 20, 30, 40] and isinstance(got.data, mt.Tensor)
  np.testing.assert_allclose(np.asarray(got.data), B * A, rtol=1e-12)


def test_opting_out_of_ufuncs_and_priority():
  class NoUfuncs:           # NEP 13: __array_ufunc__ = None takes the operator, not in place
    __array_ufunc__ = None
    def __radd__(self, other): return "radd"
    def __rsub__(self, other): return "rsub"
    def __rmatmul__(self, other): return "rmatmul"
    def __rlt__(self, other): return "rlt"
    def __gt__(self, other): return "gt"      # t < x falls back to x > t
  class Priority:           # the legacy rule: a higher __array_priority__ with a reflected operator
    __array_priority__ = 1000.0
    def __radd__(self, other): return "prio"
  class LowPriority:
    __array_priority__ = 1.0
    def __radd__(self, other): return "low"
    def __array__(self, dtype=None, copy=None): return np.ones(3)
  t = mt.asarray([1.0, 2.0, 3.0])
  assert (t + NoUfuncs(), t - NoUfuncs(), t @ NoUfuncs(), t < NoUfuncs()) == ("radd", "rsub", "rmatmul", "gt")
  assert np.asarray(A).__add__(NoUfuncs()) is NotImplemented and t.__add__(NoUfuncs()) is NotImplemented
  assert t + Priority() == "prio"
  got = t + LowPriority()                 # Tensor's priority (100) is higher: the Tensor computes
  assert isinstance(got, mt.Tensor) and np.array_equal(np.asarray(got), [2.0, 3.0, 4.0])
  with pytest.raises(TypeError):          # NumPy: a ufunc refuses an operand that opted out
    np.add(t, NoUfuncs())


def test_in_place_operators_write_the_values_into_the_tensor():
  t, d = mt.asarray(B), da.from_array(A, chunks=(2, 3))
  alias = t
  t += d
  t *= xr.DataArray(A, dims=("x", "y"))
  assert t is alias and isinstance(t, mt.Tensor)
  np.testing.assert_allclose(np.asarray(t), (B + A) * A, rtol=1e-12)
  class Priority:
    __array_priority__ = 1000.0
    def __radd__(self, other): return "prio"
  u = mt.asarray(B)
  u += Priority()
  assert u == "prio"


def test_mt_ufuncs_on_a_dask_array_are_dask_arrays():
  d = da.from_array(A, chunks=(2, 3))
  for got, want in ((mt.exp(d), np.exp(A)), (mt.add(mt.asarray(B), d), B + A), (np.add(mt.asarray(B), d), B + A)):
    assert type(got) is da.Array
    np.testing.assert_allclose(np.asarray(got.compute()), want, rtol=1e-12)


def test_building_tensor_plus_dask_array_computes_nothing():
  calls = []
  def counting(dsk, keys, **kwargs):
    calls.append(keys)
    return dask.get(dsk, keys, **kwargs)
  d, t = da.from_array(A, chunks=(2, 3)), mt.asarray(B) * 2     # a lazy Tensor too
  with dask.config.set(scheduler=counting):
    built = [t + d, d + t, np.add(t, d), t * d - d, mt.exp(d) / t, t @ d.T]
    assert not calls, f"building computed {len(calls)} times"
    got = built[0].compute()
  assert len(calls) == 1 and isinstance(got, mt.Tensor)
  np.testing.assert_allclose(np.asarray(got), B * 2 + A, rtol=1e-12)
