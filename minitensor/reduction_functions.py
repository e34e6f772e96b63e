"""The reductions as module functions: minitensor.sum, prod, max (amax), min (amin), mean, var, std, argmax, argmin,
any, all and count_nonzero, NumPy's names and signatures over array_likes; each is the Tensor method of
reductions.py on asarray(a). The functions named after builtins (sum, max, any, ...) shadow them in this module."""
from __future__ import annotations
import numpy as np
from minitensor.rearranging import _axis
from minitensor.tensor import Tensor, asarray

__all__ = ["sum", "prod", "max", "min", "amax", "amin", "mean", "var", "std", "argmax", "argmin", "any", "all",
           "count_nonzero"]


def sum(a, axis=None, dtype=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
  """The sum over the given axes (array_likes accepted).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
      None reduces all axes
  dtype : data-type, optional
      accumulation and result dtype (default NumPy's)
  keepdims : bool, optional
  initial : scalar, optional
      joins the reduction (max/min with where= need it)
  where : array_like of bool, optional
      reduce only these elements (broadcast to a's shape)

  Returns
  -------
  Tensor
  """
  return asarray(a).sum(axis, dtype, keepdims, initial=initial, where=where)


def prod(a, axis=None, dtype=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
  """The product over the given axes.

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
      None reduces all axes
  dtype : data-type, optional
      accumulation and result dtype (default NumPy's)
  keepdims : bool, optional
  initial : scalar, optional
      joins the reduction (max/min with where= need it)
  where : array_like of bool, optional
      reduce only these elements (broadcast to a's shape)

  Returns
  -------
  Tensor
  """
  return asarray(a).prod(axis, dtype, keepdims, initial=initial, where=where)


def max(a, axis=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
  """The maximum over the given axes (NaN propagates).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
      None reduces all axes
  keepdims : bool, optional
  initial : scalar, optional
      joins the reduction (max/min with where= need it)
  where : array_like of bool, optional
      reduce only these elements (broadcast to a's shape)

  Returns
  -------
  Tensor
  """
  return asarray(a).max(axis, keepdims, initial=initial, where=where)


def min(a, axis=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
  """The minimum over the given axes (NaN propagates).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
      None reduces all axes
  keepdims : bool, optional
  initial : scalar, optional
      joins the reduction (max/min with where= need it)
  where : array_like of bool, optional
      reduce only these elements (broadcast to a's shape)

  Returns
  -------
  Tensor
  """
  return asarray(a).min(axis, keepdims, initial=initial, where=where)


amax, amin = max, min


def mean(a, axis=None, dtype=None, keepdims: bool = False, *, where=True) -> Tensor:
  """The arithmetic mean over the given axes.

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
      None reduces all axes
  dtype : data-type, optional
      accumulation and result dtype (default NumPy's)
  keepdims : bool, optional
  where : array_like of bool, optional
      reduce only these elements (broadcast to a's shape)

  Returns
  -------
  Tensor
  """
  return asarray(a).mean(axis, dtype, keepdims, where=where)


def var(a, axis=None, dtype=None, ddof: float = 0, keepdims: bool = False, *, correction=None, where=True) -> Tensor:
  """The variance over the given axes.

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
      None reduces all axes
  dtype : data-type, optional
      accumulation and result dtype (default NumPy's)
  ddof : float, optional
      the divisor is N - ddof
  correction : float, optional
      the Array API's name of ddof
  keepdims : bool, optional
  where : array_like of bool, optional
      reduce only these elements (broadcast to a's shape)

  Returns
  -------
  Tensor
  """
  return asarray(a).var(axis, dtype, ddof, keepdims, correction=correction, where=where)


def std(a, axis=None, dtype=None, ddof: float = 0, keepdims: bool = False, *, correction=None, where=True) -> Tensor:
  """The standard deviation over the given axes.

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
      None reduces all axes
  dtype : data-type, optional
      accumulation and result dtype (default NumPy's)
  ddof : float, optional
      the divisor is N - ddof
  correction : float, optional
      the Array API's name of ddof
  keepdims : bool, optional
  where : array_like of bool, optional
      reduce only these elements (broadcast to a's shape)

  Returns
  -------
  Tensor
  """
  return asarray(a).std(axis, dtype, ddof, keepdims, correction=correction, where=where)


def _arg_of(a, axis, out, keepdims: bool, name: str) -> Tensor:
  t = asarray(a)
  if axis is not None: _axis(axis, t.ndim or 1, name)     # one axis (a 0-d array counts as 1-d): TypeError for a tuple
  return getattr(t, name)(axis, out, keepdims=keepdims)


def argmax(a, axis=None, out=None, *, keepdims: bool = False) -> Tensor:
  """The index of the first maximum (or first NaN) along axis, int64; lazy (a reduction over an index expression,
  no index array).

  Parameters
  ----------
  a : array_like
  axis : int or None, optional
      None: the index into the flattened array
  out : Tensor or ndarray, optional
      Receives the result (its shape; a dtype that casts to int64 safely); returned.
  keepdims : bool, optional

  Returns
  -------
  Tensor (or out)
  """
  return _arg_of(a, axis, out, keepdims, "argmax")


def argmin(a, axis=None, out=None, *, keepdims: bool = False) -> Tensor:
  """The index of the first minimum (or first NaN) along axis, int64; lazy (a reduction over an index expression,
  no index array).

  Parameters
  ----------
  a : array_like
  axis : int or None, optional
      None: the index into the flattened array
  out : Tensor or ndarray, optional
      Receives the result (its shape; a dtype that casts to int64 safely); returned.
  keepdims : bool, optional

  Returns
  -------
  Tensor (or out)
  """
  return _arg_of(a, axis, out, keepdims, "argmin")


def any(a, axis=None, keepdims: bool = False, *, where=True) -> Tensor:
  """Whether any element over the given axes is true.

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
      None reduces all axes
  keepdims : bool, optional
  where : array_like of bool, optional
      reduce only these elements (broadcast to a's shape)

  Returns
  -------
  Tensor
  """
  return asarray(a).any(axis, keepdims, where=where)


def all(a, axis=None, keepdims: bool = False, *, where=True) -> Tensor:
  """Whether all elements over the given axes are true.

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
      None reduces all axes
  keepdims : bool, optional
  where : array_like of bool, optional
      reduce only these elements (broadcast to a's shape)

  Returns
  -------
  Tensor
  """
  return asarray(a).all(axis, keepdims, where=where)


def count_nonzero(a, axis=None, keepdims: bool = False) -> Tensor:
  """The number of nonzero elements over the given axes, as int64.

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
      None reduces all axes
  keepdims : bool, optional

  Returns
  -------
  Tensor
  """
  return asarray(a).astype(bool).sum(axis, np.int64, keepdims)
