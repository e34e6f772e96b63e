"""xarray as a client: DataArrays holding Tensors keep Tensor data through rolling, coarsen, reductions and the
other methods, with NumPy's values (the same call on the same data held as an ndarray is the oracle).

Modelled on xarray's duck-array tests (xarray/tests/test_duck_array_wrapping.py): a namespace table names the
array type and constructor, and each case checks `isinstance(result.data, Array)`; here also the values.
Reductions with xarray's default skipna=True on float data go through the nan-functions (np.nanmean, ...), which
dispatch to minitensor's (lazy) nan-reductions: both spellings are tested.
"""
import importlib
import numpy as np
import pytest
import xarray as xr

NAMESPACE_ARRAYS = {"minitensor": {"attrs": {"array": "Tensor", "constructor": "asarray"}}}
DATA = np.asarray([[1.0, 2.0, 3.0, np.nan, 5.0, 0.5], [-1.0, 4.0, 2.5, 7.0, -3.0, 1.5]])
INTS = np.arange(24).reshape(4, 6) % 7

CASES = {
  "rolling_construct": lambda a: a.rolling(x=3).construct("window"),
  "rolling_mean": lambda a: a.rolling(x=3).mean(),
  "rolling_sum_center": lambda a: a.rolling(x=3, center=True, min_periods=1).sum(),
  "rolling_max": lambda a: a.rolling(x=2).max(),
  "rolling_std": lambda a: a.rolling(x=3, min_periods=2).std(),
  "rolling_reduce": lambda a: a.rolling(x=3).reduce(np.max),
  "rolling_2d": lambda a: a.rolling(x=2, y=2).sum(),
  "cumulative_sum": lambda a: a.cumulative("x").sum(skipna=False),
  "coarsen_construct": lambda a: a.coarsen(x=2).construct(x=("xc", "xw")),
  "coarsen_sum": lambda a: a.coarsen(x=2).sum(),
  "coarsen_reduce": lambda a: a.coarsen(x=3).reduce(np.mean),
  "coarsen_trim": lambda a: a.coarsen(x=4, boundary="trim").reduce(np.max),
  "sum": lambda a: a.sum("x"),
  "sum_noskip": lambda a: a.sum(skipna=False),
  "mean_noskip": lambda a: a.mean("x", skipna=False),
  "max_noskip": lambda a: a.max("y", skipna=False),
  "min_noskip": lambda a: a.min(skipna=False),
  "prod_noskip": lambda a: a.prod("x", skipna=False),
  "std_noskip": lambda a: a.std("x", skipna=False),
  "var_noskip": lambda a: a.var("x", ddof=1, skipna=False),
  "cumsum_noskip": lambda a: a.cumsum("x", skipna=False),
  "argmax_noskip": lambda a: a.argmax("x", skipna=False),
  "mean_skipna": lambda a: a.mean("x"),
  "std_skipna": lambda a: a.std("x"),
  "var_skipna": lambda a: a.var("y", ddof=1),
  "max_skipna": lambda a: a.max("y"),
  "min_skipna": lambda a: a.min(),
  "prod_skipna": lambda a: a.prod("x"),
  "median_skipna": lambda a: a.median("y"),
  "cumsum_skipna": lambda a: a.cumsum("y"),
  "argmin_skipna": lambda a: a.argmin("y"),
  "coarsen_mean_skipna": lambda a: a.coarsen(x=2).mean(),
  "rolling_mean_skipna": lambda a: a.rolling(x=3, min_periods=1).mean(),
  "all": lambda a: (a > 1).all("x"),
  "any": lambda a: (a > 1).any(),
  "weighted_noskip": lambda a: a.weighted(xr.DataArray(np.arange(6.0), dims="x")).sum("x", skipna=False),
  "groupby_noskip": lambda a: a.groupby("y").sum(skipna=False),
  "diff": lambda a: a.diff("x"),
  "shift": lambda a: a.shift(x=1),
  "roll": lambda a: a.roll(x=2),
  "pad": lambda a: a.pad(x=1),
  "where": lambda a: a.where(a > 1, -1.0),
  "fillna": lambda a: a.fillna(0.0),
  "isnull": lambda a: a.isnull(),
  "clip": lambda a: a.clip(0.0, 3.0),
  "dot": lambda a: a.dot(a, dim="x"),
  "isel": lambda a: a.isel(x=[0, 2, 5]),
  "sel": lambda a: a.sel(x=slice(1, 4)),
  "concat": lambda a: xr.concat([a, a], dim="x"),
  "stack": lambda a: a.stack(z=("y", "x")),
  "transpose": lambda a: a.T,
  "astype": lambda a: a.astype(np.float32),
  "arithmetic": lambda a: (a * 2 - a.mean("x", skipna=False)) / 3,
}
INT_CASES = {
  "mean_int": lambda a: a.mean("x"),
  "std_int": lambda a: a.std(),
  "coarsen_mean_int": lambda a: a.coarsen(x=3).mean(),
  "coarsen_max_int": lambda a: a.coarsen(x=2, y=2).max(),
  "rolling_mean_int": lambda a: a.rolling(y=2).mean(),
}


@pytest.fixture(params=list(NAMESPACE_ARRAYS))
def namespace(request):
  xp = importlib.import_module(request.param)
  attrs = NAMESPACE_ARRAYS[request.param]["attrs"]
  return getattr(xp, attrs["array"]), getattr(xp, attrs["constructor"])


def dataarray(data, constructor):
  y, x = data.shape
  return xr.DataArray(constructor(data), dims=("y", "x"), coords={"y": np.arange(y), "x": np.arange(x)}, name="foo")


def check(result, want, Array) -> None:
  assert isinstance(result.data, Array), f"the data became {type(result.data).__name__}"
  assert result.dims == want.dims and result.shape == want.shape
  got = np.asarray(result.data)
  assert got.dtype == want.dtype
  np.testing.assert_allclose(got, want.data, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", list(CASES) + list(INT_CASES))
def test_dataarray_methods_keep_tensor_data(namespace, name):
  Array, constructor = namespace
  f, data = (CASES[name], DATA) if name in CASES else (INT_CASES[name], INTS)
  check(f(dataarray(data, constructor)), f(dataarray(data, np.asarray)), Array)


def test_dataset_and_apply_ufunc(namespace):
  Array, constructor = namespace
  ds = xr.Dataset({"a": (("y", "x"), constructor(DATA)), "b": (("x",), constructor(DATA[1]))})
  want = xr.Dataset({"a": (("y", "x"), DATA), "b": (("x",), DATA[1])})
  for f in (lambda d: (d.a + d.b).rolling(x=2).sum(), lambda d: xr.apply_ufunc(np.exp, d.a),
            lambda d: d.map(lambda v: v * 2).a, lambda d: d.coarsen(x=2).sum().b):
    check(f(ds), f(want), Array)
