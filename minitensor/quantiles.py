"""Quantiles and linear interpolation with NumPy's names, keywords and results.

    percentile quantile median
                    order statistics: minitensor's sort computes on realized data, so these do too: the
                    input is realized and NumPy computes them (every `method` NumPy has, axis, keepdims,
                    weights, out=), returning Tensors of NumPy's dtypes
    interp          lazy: a binary search of x in xp (sorting.searchsorted), gathers of the neighbouring
                    points and NumPy's formula, in NumPy's order of operations (slope * (x - xp[j]) + fp[j],
                    the right neighbour's form where that is NaN, fp[j] where x == xp[j]), so the values are
                    NumPy's; xp and fp are realized for their length check. A complex fp or a period computes
                    with NumPy on the realized values.
"""
from __future__ import annotations
import numpy as np
from minitensor.interop import to_numpy
from minitensor.sorting import searchsorted
from minitensor.tensor import Tensor, apply_ufunc, asarray, where

__all__ = ["percentile", "quantile", "median", "interp"]


def _out(r, out):
  """NumPy's result r as a Tensor, or written into out (a Tensor: out[...] = r; an ndarray: by NumPy)."""
  if out is None: return asarray(r)
  if isinstance(out, Tensor): out[...] = asarray(r)
  else: np.copyto(out, r)
  return out


def percentile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
               keepdims: bool = False, *, weights=None, interpolation=None):
  """The q-th percentiles (0 <= q <= 100) of a along axis, as numpy.percentile (computes now, see the module
  docstring).

  Parameters
  ----------
  a : array_like
  q : float or array_like of floats
  axis : int, tuple of ints or None, optional
  out : Tensor or ndarray, optional
  overwrite_input : bool, optional
      Accepted; the input is never changed.
  method : str, optional
      NumPy's: 'linear' (default), 'lower', 'higher', 'nearest', 'midpoint', 'inverted_cdf',
      'averaged_inverted_cdf', 'closest_observation', 'interpolated_inverted_cdf', 'hazen', 'weibull',
      'median_unbiased', 'normal_unbiased'.
  keepdims : bool, optional
  weights : array_like, optional
      With method 'inverted_cdf' only, as NumPy.
  interpolation : str, optional
      NumPy's deprecated name of method.

  Returns
  -------
  Tensor
      q's shape followed by a's reduced shape; float64 for integer input, else a's float dtype.
  """
  kw = {} if interpolation is None else {"interpolation": interpolation}
  return _out(np.percentile(to_numpy(asarray(a)), to_numpy(q), axis=axis, method=method, keepdims=keepdims,
                            weights=to_numpy(weights), **kw), out)


def quantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
             keepdims: bool = False, *, weights=None, interpolation=None):
  """The q-th quantiles (0 <= q <= 1) of a along axis, as numpy.quantile (computes now, see the module
  docstring).

  Parameters
  ----------
  a : array_like
  q : float or array_like of floats
  axis : int, tuple of ints or None, optional
  out : Tensor or ndarray, optional
  overwrite_input : bool, optional
      Accepted; the input is never changed.
  method : str, optional
      As percentile's.
  keepdims : bool, optional
  weights : array_like, optional
  interpolation : str, optional

  Returns
  -------
  Tensor
  """
  kw = {} if interpolation is None else {"interpolation": interpolation}
  return _out(np.quantile(to_numpy(asarray(a)), to_numpy(q), axis=axis, method=method, keepdims=keepdims,
                          weights=to_numpy(weights), **kw), out)


def median(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
  """The median of a along axis (NaN where a slice holds NaN), as numpy.median (computes now).

  Parameters
  ----------
  a : array_like
  axis : int, tuple of ints or None, optional
  out : Tensor or ndarray, optional
  overwrite_input : bool, optional
      Accepted; the input is never changed.
  keepdims : bool, optional

  Returns
  -------
  Tensor
      float64 for integer input, else a's float dtype.
  """
  return _out(np.median(to_numpy(asarray(a)), axis=axis, keepdims=keepdims), out)


def _at(t: Tensor, i: Tensor) -> Tensor:
  """t[i] for a lazy index tensor i (a gather in the graph)."""
  return Tensor(t.uop.index(i.uop))


def interp(x, xp, fp, left=None, right=None, period=None) -> Tensor:
  """The piecewise linear interpolant of the points (xp, fp) at x, as numpy.interp (lazy in x).

  Parameters
  ----------
  x : array_like
  xp : 1-D array_like of floats
      Increasing (not checked, as NumPy).
  fp : 1-D array_like
      xp's length.
  left, right : float, optional
      The value for x < xp[0] and x > xp[-1] (default fp[0] and fp[-1]).
  period : float, optional
      xp and x taken modulo period (computes with NumPy).

  Returns
  -------
  Tensor
      float64 (complex128 for a complex fp), x's shape.
  """
  xpa, fpa = np.asarray(to_numpy(xp)), np.asarray(to_numpy(fp))
  if period is not None or fpa.dtype.kind == "c" or xpa.ndim != 1 or fpa.ndim != 1 or xpa.size == 0 or \
     xpa.size != fpa.size:
    return asarray(np.interp(to_numpy(x), xpa, fpa, left=left, right=right, period=period))
  n, xv = xpa.size, asarray(x).astype(np.float64)
  xt, ft = asarray(xpa.astype(np.float64)), asarray(fpa.astype(np.float64))
  lval = float(fpa[0]) if left is None else float(left)
  rval = float(fpa[-1]) if right is None else float(right)
  isnan = lambda v: apply_ufunc(np.isnan, v)
  if n == 1:
    r = where(xv < xpa[0], lval, where(xv > xpa[0], rval, float(fpa[0])))
    return r.astype(np.float64)
  j = searchsorted(xt, xv, side="right") - 1
  jc = apply_ufunc(np.minimum, apply_ufunc(np.maximum, j, 0), n - 2)
  x0, x1, y0, y1 = _at(xt, jc), _at(xt, jc + 1), _at(ft, jc), _at(ft, jc + 1)
  slope = (y1 - y0) / (x1 - x0)
  r = slope * (xv - x0) + y0
  r = where(isnan(r), slope * (xv - x1) + y1, r)
  r = where(isnan(r) & (y0 == y1), y0, r)
  r = where((xv == x0) | (j == n - 1), where(j == n - 1, float(fpa[-1]), y0), r)
  r = where(j < 0, lval, where(xv > float(xpa[-1]), rval, r))
  return where(isnan(xv), xv, r)
