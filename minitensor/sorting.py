"""Sorting, searching and sets.

    searchsorted   lazy binary search: log2(n) + 1 steps, each one gather (INDEX) of the sorted array at the
                   candidate positions and a WHERE; one fused kernel, O(m log n) for m queries. NaN sorts last,
                   as in NumPy
    isin           the test elements sorted and deduplicated (realized), then searchsorted and one gather
    nonzero sort argsort unique unique_*
                   data-dependent results: the input is realized and NumPy computes them (stable sorts; the
                   standard's descending order keeps equal elements in their original order)
"""
from __future__ import annotations
from typing import NamedTuple
import numpy as np
from minitensor.creation import full
from minitensor.extra import take
from minitensor.tensor import Tensor, apply_ufunc, asarray, where

__all__ = ["nonzero", "argsort", "sort", "unique", "unique_values", "unique_counts", "unique_inverse", "unique_all",
           "searchsorted", "isin"]


def nonzero(a) -> tuple[Tensor, ...]:
  """The indices of the nonzero elements, one int64 Tensor per axis (computes now).

  Parameters
  ----------
  a : array_like
      At least one dimension (ValueError for 0-d, as NumPy).

  Returns
  -------
  tuple of Tensor
  """
  return tuple(asarray(i.astype(np.int64)) for i in np.nonzero(np.asarray(asarray(a))))


def _argsort(x: np.ndarray, axis: int | None, descending: bool) -> tuple[np.ndarray, int]:
  """Stable argsort of x along axis (flattened when None); descending keeps ties in their original order."""
  if axis is None: x, axis = x.ravel(), 0
  if not descending: return np.argsort(x, axis=axis, kind="stable"), axis
  i = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
  return x.shape[axis] - 1 - i, axis


def argsort(a, axis: int | None = -1, kind=None, *, descending: bool = False, stable: bool = True) -> Tensor:
  """The indices that sort a along axis (computes now; always a stable sort).

  Parameters
  ----------
  a : array_like
  axis : int or None, optional
      None sorts the flattened array.
  kind : str, optional
      Accepted for NumPy; the sort is always stable.
  descending : bool, optional
      Largest first; equal elements keep their order.
  stable : bool, optional
      The Array API's flag; the sort is always stable.

  Returns
  -------
  Tensor
      int64 indices.
  """
  return asarray(_argsort(np.asarray(asarray(a)), axis, descending)[0].astype(np.int64))


def sort(a, axis: int | None = -1, kind=None, *, descending: bool = False, stable: bool = True) -> Tensor:
  """a sorted along axis (computes now; NaN last, as NumPy).

  Parameters
  ----------
  a : array_like
  axis : int or None, optional
      None sorts the flattened array.
  kind : str, optional
      Accepted for NumPy; the sort is always stable.
  descending : bool, optional
      Largest first.
  stable : bool, optional
      The Array API's flag; the sort is always stable.

  Returns
  -------
  Tensor
  """
  x = np.asarray(asarray(a))
  i, ax = _argsort(x, axis, descending)
  return asarray(np.take_along_axis(x.ravel() if axis is None else x, i, ax))


def unique(ar, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None, *, equal_nan: bool = True, sorted: bool = True):
  """The sorted unique elements, as numpy.unique (computes now, through NumPy).

  Parameters
  ----------
  ar : array_like
  return_index : bool, optional
      Also the index in ar (flattened, or along axis) of each unique value's first occurrence.
  return_inverse : bool, optional
      Also the indices of the unique values that rebuild ar.
  return_counts : bool, optional
      Also how often each unique value occurs.
  axis : int, optional
      Unique slices along this axis instead of unique elements of the flattened array.
  equal_nan : bool, optional
      Collapse NaNs into one.
  sorted : bool, optional
      Accepted; the result is always sorted, as NumPy's.

  Returns
  -------
  Tensor, or a tuple of Tensors (the unique values first, then those asked for, in this order)
  """
  r = np.unique(np.asarray(asarray(ar)), return_index, return_inverse, return_counts, axis, equal_nan=equal_nan)
  return tuple(asarray(x) for x in r) if isinstance(r, tuple) else asarray(r)


class UniqueAllResult(NamedTuple):
  """unique_all's result: the sorted values, first indices, inverse (x's shape) and counts."""
  values: Tensor
  indices: Tensor
  inverse_indices: Tensor
  counts: Tensor


class UniqueCountsResult(NamedTuple):
  """unique_counts' result."""
  values: Tensor
  counts: Tensor


class UniqueInverseResult(NamedTuple):
  """unique_inverse's result."""
  values: Tensor
  inverse_indices: Tensor


def _unique(x) -> UniqueAllResult:
  """Every return of the standard's unique_* functions: values sorted, each NaN distinct, the inverse in x's shape."""
  a = np.asarray(asarray(x))
  v, i, inv, c = np.unique(a.ravel(), return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
  return UniqueAllResult(asarray(v), *(asarray(r.astype(np.int64)) for r in (i, inv.reshape(a.shape), c)))


def unique_values(x, /) -> Tensor:
  """The unique elements of x, sorted (NaNs are distinct; computes now).

  Parameters
  ----------
  x : array_like

  Returns
  -------
  Tensor
      1-D.
  """
  return asarray(np.unique(np.asarray(asarray(x)).ravel(), equal_nan=False))


def unique_counts(x, /) -> UniqueCountsResult:
  """The unique elements of x, sorted, and how often each occurs (computes now).

  Parameters
  ----------
  x : array_like

  Returns
  -------
  UniqueCountsResult
      (values, counts), counts int64.
  """
  r = _unique(x)
  return UniqueCountsResult(r.values, r.counts)


def unique_inverse(x, /) -> UniqueInverseResult:
  """The unique elements of x, sorted, and for every element of x the index of its value (computes now).

  Parameters
  ----------
  x : array_like

  Returns
  -------
  UniqueInverseResult
      (values, inverse_indices), the inverse in x's shape: values[inverse_indices] == x.
  """
  r = _unique(x)
  return UniqueInverseResult(r.values, r.inverse_indices)


def unique_all(x, /) -> UniqueAllResult:
  """The unique elements of x, sorted, their first indices in x.ravel(), the inverse and the counts (computes now).

  Parameters
  ----------
  x : array_like

  Returns
  -------
  UniqueAllResult
      (values, indices, inverse_indices, counts), the integer ones int64.
  """
  return _unique(x)


def _precedes(p: Tensor, v: Tensor) -> Tensor:
  """p < v in NumPy's sort order (NaN after every number)."""
  lt = p < v
  if not (p.uop.dtype.is_float or v.uop.dtype.is_float): return lt
  return lt | (apply_ufunc(np.isnan, v) & ~apply_ufunc(np.isnan, p))


def searchsorted(a, v, side: str = "left", sorter=None) -> Tensor:
  """Where v's elements would be inserted into the sorted 1-D a to keep it sorted (lazy binary search).

  Parameters
  ----------
  a : array_like
      1-D, sorted ascending (NaN last), unless sorter is given.
  v : array_like or scalar
      The values to place (compared with a in their common dtype).
  side : {"left", "right"}, optional
      left: the first suitable position (a[i-1] < v <= a[i]); right: the last (a[i-1] <= v < a[i]).
  sorter : array_like of int, optional
      Indices that sort a (as argsort gives).

  Returns
  -------
  Tensor
      int64, v's shape.
  """
  s = asarray(a)
  if s.ndim != 1: raise ValueError(f"searchsorted: a must be 1-D, got shape {s.shape}")
  if side not in ("left", "right"): raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
  if sorter is not None: s = take(s, sorter)
  x, n = asarray(v), s.shape[0]
  pos, step = full(x.shape, 0, np.int64), 1 << max(n.bit_length() - 1, 0)
  while n and step:
    c = pos + step
    probe = Tensor(s.uop.index((apply_ufunc(np.minimum, c, n) - 1).uop))
    ok = _precedes(probe, x) if side == "left" else ~_precedes(x, probe)
    pos, step = where((c <= n) & ok, c, pos), step >> 1
  return pos


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False) -> Tensor:
  """Whether each element of element is in test_elements (lazy in element; the test set is realized).

  Parameters
  ----------
  element : array_like
  test_elements : array_like
      Flattened; NaN is in no set (NaN != NaN).
  assume_unique : bool, optional
      Accepted for NumPy; the result does not depend on it.
  invert : bool, optional
      Return "not in" instead.

  Returns
  -------
  Tensor
      bool, element's shape.
  """
  e, t = asarray(element), asarray(np.unique(np.asarray(asarray(test_elements))))
  if t.shape[0] == 0: return full(e.shape, invert, bool)
  probe = Tensor(t.uop.index(apply_ufunc(np.minimum, searchsorted(t, e), t.shape[0] - 1).uop))
  return probe != e if invert else probe == e
