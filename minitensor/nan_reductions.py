"""NumPy's nan-reductions, lazy: NaN elements are replaced by the reduction's neutral value with a WHERE over isnan
(as NumPy's own `_replace_nan`), then the ordinary reduction runs.

    nansum nanprod nancumsum nancumprod     NaN as 0 (1 for the products); integers and bool have no NaN
    nanmax nanmin                           NaN as -inf/+inf, then NaN again where a slice holds only NaN
                                            (numpy.fmax.reduce's result)
    nanargmax nanargmin                     NaN as -inf/+inf, then argmax/argmin; an all-NaN slice raises
                                            ValueError, so these compute whether some slice is all NaN now
    nanmean nanvar nanstd                   sums over the non-NaN elements divided by their counts (NaN for no
                                            element, or for counts - ddof <= 0)
    nanmedian nanpercentile nanquantile     NumPy on the realized values (median and quantiles sort)

NumPy's RuntimeWarnings ("All-NaN slice encountered", "Mean of empty slice", "Degrees of freedom <= 0 for slice.")
need the values: they are given when the input is already realized (NumPy checks its values), and not for a lazy
input, which is not computed for a warning. `np.nansum(t)` and the others reach these through
Tensor.__array_function__ (interop.py), so xarray's skipna reductions stay Tensors.
"""
from __future__ import annotations
import warnings
import numpy as np
from minitensor.functions import fmax, fmin
from minitensor.interop import copyto, to_numpy
from minitensor.numpy_rules import normalize_axes
from minitensor.tensor import Tensor, apply_ufunc, asarray
from minitensor.tensor import where as select

__all__ = ["nansum", "nanprod", "nanmax", "nanmin", "nanargmax", "nanargmin", "nanmean", "nanvar", "nanstd",
           "nancumsum", "nancumprod", "nanmedian", "nanpercentile", "nanquantile"]


def _has_nan(t: Tensor) -> bool: return t.dtype.kind in "fc"
def _isnan(t: Tensor) -> Tensor: return apply_ufunc(np.isnan, t)
def _replaced(t: Tensor, v) -> Tensor: return select(_isnan(t), v, t) if _has_nan(t) else t


def _out(r: Tensor, out):
  """r, or r written into out (a Tensor or an ndarray, NumPy's unsafe casting of reductions); returns out."""
  if out is None: return r
  if isinstance(out, tuple): (out,) = out
  if isinstance(out, Tensor): copyto(out, r.astype(out.dtype) if r.dtype != out.dtype else r)
  else: np.copyto(out, r._value(), casting="unsafe")
  return out


def _warn_if(t: Tensor, check, message: str) -> None:
  """NumPy's RuntimeWarning when `check` holds of t's realized values (nothing is computed for a lazy t)."""
  if (v := t._realized()) is not None and _has_nan(t) and check(v): warnings.warn(message, RuntimeWarning, stacklevel=3)


def _axes(t: Tensor, axis, name: str):
  return None if axis is None else normalize_axes(axis, t.ndim, name)


def nansum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=True):
  """Sum treating NaN as zero (numpy.nansum; lazy).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
  dtype : data-type, optional
  out : Tensor or ndarray, optional
  keepdims : bool, default False
  initial : scalar, optional
  where : array_like of bool, optional

  Returns
  -------
  Tensor
  """
  t = asarray(a)
  return _out(_replaced(t, 0).sum(axis, dtype, keepdims, initial=initial, where=where), out)


def nanprod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=True):
  """Product treating NaN as one (numpy.nanprod; lazy).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
  dtype : data-type, optional
  out : Tensor or ndarray, optional
  keepdims : bool, default False
  initial : scalar, optional
  where : array_like of bool, optional

  Returns
  -------
  Tensor
  """
  t = asarray(a)
  return _out(_replaced(t, 1).prod(axis, dtype, keepdims, initial=initial, where=where), out)


def _extreme(a, axis, out, keepdims: bool, initial, where, kind: str):
  t = asarray(a)
  if not _has_nan(t): return _out(getattr(t, kind)(axis, keepdims, initial=initial, where=where), out)
  if t.dtype.kind == "c":
    f = fmax if kind == "max" else fmin
    return _out(f.reduce(t, axis=axis, keepdims=keepdims, where=where,
                         **({} if initial is None else {"initial": initial})), out)
  nan = _isnan(t)
  r = getattr(select(nan, -np.inf if kind == "max" else np.inf, t), kind)(axis, keepdims, initial=initial, where=where)
  if initial is None:
    m = nan if where is True else nan | ~asarray(where).astype(bool)
    r = select(m.all(axis, keepdims=keepdims), np.nan, r)
    if where is True: _warn_if(t, lambda v: np.isnan(v).all(axis=_axes(t, axis, f"nan{kind}")).any(),
                               "All-NaN slice encountered")
  return _out(r, out)


def nanmax(a, axis=None, out=None, keepdims: bool = False, initial=None, where=True):
  """Maximum ignoring NaN (numpy.nanmax; lazy): NaN where a slice holds only NaN (with NumPy's RuntimeWarning
  when a's values are already computed).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
  out : Tensor or ndarray, optional
  keepdims : bool, default False
  initial : scalar, optional
  where : array_like of bool, optional
      Needs initial.

  Returns
  -------
  Tensor
  """
  return _extreme(a, axis, out, keepdims, initial, where, "max")


def nanmin(a, axis=None, out=None, keepdims: bool = False, initial=None, where=True):
  """Minimum ignoring NaN (numpy.nanmin; lazy): NaN where a slice holds only NaN (with NumPy's RuntimeWarning
  when a's values are already computed).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
  out : Tensor or ndarray, optional
  keepdims : bool, default False
  initial : scalar, optional
  where : array_like of bool, optional
      Needs initial.

  Returns
  -------
  Tensor
  """
  return _extreme(a, axis, out, keepdims, initial, where, "min")


def _arg(a, axis, out, keepdims: bool, kind: str):
  t = asarray(a)
  if _has_nan(t):
    nan = _isnan(t)
    v = t._realized()
    allnan = np.isnan(v).all(axis=axis).any() if v is not None else bool((nan.all(axis) if axis is not None
                                                                            else nan.all()).any())
    if allnan: raise ValueError(f"nanarg{kind}: All-NaN slice encountered")
    t = select(nan, -np.inf if kind == "max" else np.inf, t)
  return _out(getattr(t, f"arg{kind}")(axis, keepdims=keepdims), out)


def nanargmax(a, axis=None, out=None, *, keepdims: bool = False):
  """Index of the maximum ignoring NaN (numpy.nanargmax): lazy, except the check for an all-NaN slice (ValueError),
  which is computed now.

  Parameters
  ----------
  a : array_like
  axis : int, optional
  out : Tensor or ndarray, optional
  keepdims : bool, default False

  Returns
  -------
  Tensor
      int64.
  """
  return _arg(a, axis, out, keepdims, "max")


def nanargmin(a, axis=None, out=None, *, keepdims: bool = False):
  """Index of the minimum ignoring NaN (numpy.nanargmin): lazy, except the check for an all-NaN slice (ValueError),
  which is computed now.

  Parameters
  ----------
  a : array_like
  axis : int, optional
  out : Tensor or ndarray, optional
  keepdims : bool, default False

  Returns
  -------
  Tensor
      int64.
  """
  return _arg(a, axis, out, keepdims, "min")


def _moments(t: Tensor, axis, dtype, keepdims: bool, where, ddof, mean, name: str):
  """(mean, var) over the non-NaN elements selected by where, NaN where no element (or counts - ddof <= 0)."""
  m = ~_isnan(t) if _has_nan(t) else asarray(np.ones((), bool)).broadcast_to(t.shape)
  if where is not True: m = m & asarray(where).astype(bool)
  out = np.dtype(dtype) if dtype is not None else np.dtype(np.float64) if t.dtype.kind in "biu" else t.dtype
  acc = np.promote_types(out, np.float64)
  x, cnt = select(m, t.astype(acc), 0), m.sum(axis, keepdims=True)
  mu = x.sum(axis, keepdims=True) / cnt if mean is None else asarray(mean).astype(acc)
  if ddof is None: return mu if keepdims else mu.reshape(_reduced(t, axis, name)), out
  d = select(m, x - mu, 0)
  sq = d.real * d.real + d.imag * d.imag if acc.kind == "c" else d * d
  dof = cnt - ddof
  v = select(dof <= 0, np.nan, sq.sum(axis, keepdims=True) / apply_ufunc(np.maximum, dof, 1))
  return (v if keepdims else v.reshape(_reduced(t, axis, name))), out


def _reduced(t: Tensor, axis, name: str) -> tuple[int, ...]:
  axes = normalize_axes(axis, t.ndim, name)
  return tuple(n for k, n in enumerate(t.shape) if k not in axes)


def nanmean(a, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=True):
  """Mean of the non-NaN elements (numpy.nanmean; lazy): NaN for a slice without one (with NumPy's RuntimeWarning
  when a's values are already computed).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
  dtype : data-type, optional
  out : Tensor or ndarray, optional
  keepdims : bool, default False
  where : array_like of bool, optional

  Returns
  -------
  Tensor
  """
  t = asarray(a)
  if where is True: _warn_if(t, lambda v: (~np.isnan(v)).sum(axis=_axes(t, axis, "nanmean")).min(initial=1) == 0,
                             "Mean of empty slice")
  r, d = _moments(t, axis, dtype, keepdims, where, None, None, "nanmean")
  return _out(r.astype(d), out)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, *, where=True, mean=None,
           correction=None):
  """Variance of the non-NaN elements (numpy.nanvar; lazy): NaN where the count minus ddof is not positive (with
  NumPy's RuntimeWarning when a's values are already computed). Complex input: the real variance of |x - mean|.

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
  dtype : data-type, optional
  out : Tensor or ndarray, optional
  ddof : float, default 0
  keepdims : bool, default False
  where : array_like of bool, optional
  mean : array_like, optional
      The mean, computed already (keepdims=True's shape).
  correction : float, optional
      The Array API's name of ddof.

  Returns
  -------
  Tensor
  """
  t = asarray(a)
  if correction is not None: ddof = correction
  if where is True: _warn_if(t, lambda v: ((~np.isnan(v)).sum(axis=_axes(t, axis, "nanvar")) - ddof <= 0).any(),
                             "Degrees of freedom <= 0 for slice.")
  r, d = _moments(t, axis, dtype, keepdims, where, ddof, mean, "nanvar")
  return _out(r.astype(np.empty(0, d).real.dtype), out)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, *, where=True, mean=None,
           correction=None):
  """Standard deviation of the non-NaN elements: the square root of nanvar (numpy.nanstd; lazy).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
  dtype : data-type, optional
  out : Tensor or ndarray, optional
  ddof : float, default 0
  keepdims : bool, default False
  where : array_like of bool, optional
  mean : array_like, optional
  correction : float, optional

  Returns
  -------
  Tensor
  """
  v = nanvar(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
  return _out(apply_ufunc(np.sqrt, v), out)


def nancumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum treating NaN as zero (numpy.nancumsum; lazy; of the flattened array when axis is None).

  Parameters
  ----------
  a : array_like
  axis : int, optional
  dtype : data-type, optional
  out : Tensor or ndarray, optional

  Returns
  -------
  Tensor
  """
  return _out(_replaced(asarray(a), 0).cumsum(axis, dtype), out)


def nancumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product treating NaN as one (numpy.nancumprod; lazy; of the flattened array when axis is None).

  Parameters
  ----------
  a : array_like
  axis : int, optional
  dtype : data-type, optional
  out : Tensor or ndarray, optional

  Returns
  -------
  Tensor
  """
  return _out(_replaced(asarray(a), 1).cumprod(axis, dtype), out)


def _numpy(f, a, args: tuple, kwargs: dict, out):
  r = asarray(f(np.asarray(asarray(a)), *to_numpy(args), **to_numpy(kwargs)))
  return _out(r, out)


def nanmedian(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
  """Median of the non-NaN elements (numpy.nanmedian on the realized values, with its warnings).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
  out : Tensor or ndarray, optional
  overwrite_input : bool, optional
      Accepted (the realized values are never changed).
  keepdims : bool, default False

  Returns
  -------
  Tensor
  """
  return _numpy(np.nanmedian, a, (), {"axis": axis, "keepdims": keepdims}, out)


def nanpercentile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights=None):
  """The q-th percentiles of the non-NaN elements (numpy.nanpercentile on the realized values).

  Parameters
  ----------
  a : array_like
  q : array_like of float
      In [0, 100].
  axis : None, int or tuple of ints, optional
  out : Tensor or ndarray, optional
  overwrite_input : bool, optional
      Accepted (the realized values are never changed).
  method : str, default "linear"
  keepdims : bool, default False
  weights : array_like, optional

  Returns
  -------
  Tensor
  """
  return _numpy(np.nanpercentile, a, (q,), {"axis": axis, "method": method, "keepdims": keepdims,
                                             "weights": weights}, out)


def nanquantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights=None):
  """The q-th quantiles of the non-NaN elements (numpy.nanquantile on the realized values).

  Parameters
  ----------
  a : array_like
  q : array_like of float
      In [0, 1].
  axis : None, int or tuple of ints, optional
  out : Tensor or ndarray, optional
  overwrite_input : bool, optional
      Accepted (the realized values are never changed).
  method : str, default "linear"
  keepdims : bool, default False
  weights : array_like, optional

  Returns
  -------
  Tensor
  """
  return _numpy(np.nanquantile, a, (q,), {"axis": axis, "method": method, "keepdims": keepdims,
                                           "weights": weights}, out)

