"""Set operations and array comparisons with NumPy's names, keywords and dtypes.

    intersect1d union1d setdiff1d setxor1d
                            sorted unique results of data-dependent length: the inputs are realized and NumPy
                            computes them (return_indices too)
    in1d                    isin of the flattened input (lazy in ar1; the test set is realized, as isin's).
                            NumPy 2.4 removed it; it is here for code written against older NumPy
    array_equal array_equiv one lazy comparison reduced to a Python bool (shapes decide first, as NumPy's)
"""
from __future__ import annotations
import numpy as np
from minitensor.interop import to_numpy
from minitensor.sorting import isin
from minitensor.tensor import Tensor, apply_ufunc, asarray, broadcast_shapes

__all__ = ["intersect1d", "union1d", "setdiff1d", "setxor1d", "in1d", "array_equal", "array_equiv"]


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False):
  """The sorted unique values in both ar1 and ar2 (flattened), as numpy.intersect1d (computes now).

  Parameters
  ----------
  ar1, ar2 : array_like
  assume_unique : bool, optional
      Skip the deduplication (the inputs must then be unique).
  return_indices : bool, optional
      Also the indices of the first occurrences in ar1 and ar2.

  Returns
  -------
  Tensor, or (Tensor, Tensor, Tensor) with return_indices
  """
  r = np.intersect1d(to_numpy(ar1), to_numpy(ar2), assume_unique=assume_unique, return_indices=return_indices)
  return tuple(asarray(x) for x in r) if return_indices else asarray(r)


def union1d(ar1, ar2) -> Tensor:
  """The sorted unique values in ar1 or ar2 (flattened), as numpy.union1d (computes now).

  Parameters
  ----------
  ar1, ar2 : array_like

  Returns
  -------
  Tensor
  """
  return asarray(np.union1d(to_numpy(ar1), to_numpy(ar2)))


def setdiff1d(ar1, ar2, assume_unique: bool = False) -> Tensor:
  """The sorted unique values of ar1 that are not in ar2, as numpy.setdiff1d (computes now).

  Parameters
  ----------
  ar1, ar2 : array_like
  assume_unique : bool, optional
      ar1 is unique: its values are kept in their order, not sorted (as NumPy's).

  Returns
  -------
  Tensor
  """
  return asarray(np.setdiff1d(to_numpy(ar1), to_numpy(ar2), assume_unique=assume_unique))


def setxor1d(ar1, ar2, assume_unique: bool = False) -> Tensor:
  """The sorted unique values in exactly one of ar1 and ar2, as numpy.setxor1d (computes now).

  Parameters
  ----------
  ar1, ar2 : array_like
  assume_unique : bool, optional

  Returns
  -------
  Tensor
  """
  return asarray(np.setxor1d(to_numpy(ar1), to_numpy(ar2), assume_unique=assume_unique))


def in1d(ar1, ar2, assume_unique: bool = False, invert: bool = False) -> Tensor:
  """Whether each element of the flattened ar1 is in ar2: `isin(ar1, ar2).ravel()`, as NumPy's in1d was.

  Parameters
  ----------
  ar1, ar2 : array_like
  assume_unique, invert : bool, optional
      As isin's.

  Returns
  -------
  Tensor
      bool, 1-D of ar1's size.
  """
  return isin(asarray(ar1).reshape(-1), ar2, assume_unique=assume_unique, invert=invert)


def _equal(a: Tensor, b: Tensor, equal_nan: bool) -> bool:
  eq = a == b
  if equal_nan and (a.dtype.kind in "fc" or b.dtype.kind in "fc"):
    eq = eq | (apply_ufunc(np.isnan, a) & apply_ufunc(np.isnan, b))
  return bool(eq.all())


def array_equal(a1, a2, equal_nan: bool = False) -> bool:
  """Whether a1 and a2 have the same shape and elements, as numpy.array_equal.

  Parameters
  ----------
  a1, a2 : array_like
  equal_nan : bool, optional
      NaN equals NaN (complex: NaN in either part).

  Returns
  -------
  bool
  """
  a, b = asarray(a1), asarray(a2)
  return a.shape == b.shape and _equal(a, b, equal_nan)


def array_equiv(a1, a2) -> bool:
  """Whether a1 and a2 broadcast to one shape and are equal there, as numpy.array_equiv.

  Parameters
  ----------
  a1, a2 : array_like

  Returns
  -------
  bool
  """
  a, b = asarray(a1), asarray(a2)
  try: broadcast_shapes(a.shape, b.shape)
  except ValueError: return False
  return _equal(a, b, False)
