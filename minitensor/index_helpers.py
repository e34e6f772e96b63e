"""Index helpers and in-place puts, with NumPy's names, keywords, dtypes and errors.

    indices                 lazy: broadcast aranges (no input data)
    mgrid ogrid r_ c_       NumPy's grids and concatenations of the key's numbers and arrays, as Tensors
    unravel_index ravel_multi_index bincount argpartition partition
                            data-dependent results or checks (bounds, output length, NumPy's selection order):
                            the inputs are realized and NumPy computes them
    ndenumerate ndindex nditer
                            iterators over the realized values (NumPy's own; nditer's operands are ndarrays,
                            so writing through nditer cannot reach a Tensor: use assignment)
    put place putmask       in place, as NumPy's: the Tensor is written through its views (views.py), so its
                            aliases and views see the write; the positions (and for put, the indices) are
                            realized, the values stay lazy. An ndarray argument is written by NumPy.
"""
from __future__ import annotations
import numpy as np
from minitensor import views as V
from minitensor.creation import zeros
from minitensor.extra import take
from minitensor.interop import to_numpy
from minitensor.tensor import Tensor, asarray, where

__all__ = ["unravel_index", "ravel_multi_index", "indices", "mgrid", "ogrid", "r_", "c_", "ndenumerate", "ndindex",
           "nditer", "bincount", "argpartition", "partition", "put", "place", "putmask"]

ndindex = np.ndindex


def _np(x):
  """x's values as NumPy reads them (a Tensor realized; lists of Tensors too)."""
  return to_numpy(x)


def unravel_index(indices, shape, order: str = "C") -> tuple[Tensor, ...]:
  """The coordinates in an array of `shape` of flat indices (computes now: NumPy checks every index's bounds).

  Parameters
  ----------
  indices : int or array_like of int
  shape : tuple of ints
  order : {"C", "F"}, optional

  Returns
  -------
  tuple of Tensor
      int64, one per axis of shape, indices' shape (0-d for an int).
  """
  return tuple(asarray(i) for i in np.unravel_index(_np(indices), shape, order=order))


def ravel_multi_index(multi_index, dims, mode="raise", order: str = "C") -> Tensor:
  """Flat indices of coordinate arrays in an array of shape `dims` (computes now).

  Parameters
  ----------
  multi_index : tuple of array_like of int
  dims : tuple of ints
  mode : {"raise", "wrap", "clip"} or a tuple of them, optional
  order : {"C", "F"}, optional

  Returns
  -------
  Tensor
      int64, the broadcast shape of the coordinates.
  """
  return asarray(np.ravel_multi_index(_np(tuple(multi_index)), dims, mode=mode, order=order))


def indices(dimensions, dtype=int, sparse: bool = False):
  """The index grid of an array of shape `dimensions`, lazily.

  Parameters
  ----------
  dimensions : sequence of ints
  dtype : data-type, optional
  sparse : bool, optional
      A tuple of broadcastable aranges (shape 1 on every other axis) instead of one stacked array.

  Returns
  -------
  Tensor of shape (len(dimensions),) + dimensions, or a tuple of Tensors when sparse
  """
  from minitensor.creation import arange
  from minitensor.manipulation import stack
  dims = tuple(int(d) for d in dimensions)
  n = len(dims)
  axes = [arange(d, dtype=dtype).reshape((1,) * k + (d,) + (1,) * (n - k - 1)) for k, d in enumerate(dims)]
  if sparse: return tuple(axes)
  if not axes: return zeros((0,), dtype=dtype)
  return stack([a.broadcast_to(dims) if a.shape != dims else a for a in axes])


class _Grid:
  """NumPy's mgrid, ogrid, r_ or c_ (index it: `mgrid[0:5, 0:3]`, `ogrid[-1:1:5j]`, `r_[t, 0, 1:3]`), returning
  Tensors (Tensors in the key are read as their values)."""

  def __init__(self, grid, name: str):
    self._grid, self._name = grid, name

  def __repr__(self) -> str: return f"minitensor.{self._name}"

  def __getitem__(self, key):
    r = self._grid[_np(key)]
    return tuple(asarray(a) for a in r) if isinstance(r, (tuple, list)) else asarray(r)


mgrid = _Grid(np.mgrid, "mgrid")
ogrid = _Grid(np.ogrid, "ogrid")
r_ = _Grid(np.r_, "r_")
c_ = _Grid(np.c_, "c_")


def ndenumerate(arr) -> np.ndenumerate:
  """Pairs (index tuple, value) of arr's elements in row-major order, as numpy.ndenumerate (over the realized
  values: the values are NumPy scalars of arr's dtype).

  Parameters
  ----------
  arr : array_like

  Returns
  -------
  numpy.ndenumerate
  """
  return np.ndenumerate(_np(asarray(arr)))


def nditer(op, flags=None, op_flags=None, op_dtypes=None, order: str = "K", casting: str = "safe", op_axes=None,
           itershape=None, buffersize: int = 0) -> np.nditer:
  """numpy.nditer over the realized values of op (a Tensor, or a list of Tensors, arrays and None).

  NumPy allocates the outputs for None operands (writable ndarrays: `it.operands[k]`); Tensor operands are
  realized, read-only arrays, so op_flags=["readwrite"] on one raises NumPy's ValueError.

  Parameters
  ----------
  op, flags, op_flags, op_dtypes, order, casting, op_axes, itershape, buffersize
      As numpy.nditer's.

  Returns
  -------
  numpy.nditer
  """
  ro = lambda o: np.asarray(o) if isinstance(o, Tensor) else o          # read-only: never minitensor's own buffer
  ops = [ro(o) for o in op] if isinstance(op, (list, tuple)) else ro(op)
  return np.nditer(ops, flags=flags, op_flags=op_flags, op_dtypes=op_dtypes, order=order, casting=casting,
                   op_axes=op_axes, itershape=itershape, buffersize=buffersize)


def bincount(x, weights=None, minlength: int = 0) -> Tensor:
  """How often each value 0, 1, ... occurs in the non-negative integers x (summing weights instead, when given);
  computes now (the result's length is x's maximum + 1).

  Parameters
  ----------
  x : array_like of non-negative ints, 1-D
  weights : array_like, optional
      x's shape; summed in float64.
  minlength : int, optional
      The least length of the result.

  Returns
  -------
  Tensor
      int64 (float64 with weights), length max(x.max() + 1, minlength).
  """
  return asarray(np.bincount(_np(x), weights=_np(weights), minlength=minlength))


def argpartition(a, kth, axis: int | None = -1, kind: str = "introselect", order=None) -> Tensor:
  """Indices that partition a along axis around its kth element(s): NumPy's introselect on the realized values,
  so the order within each side is NumPy's.

  Parameters
  ----------
  a : array_like
  kth : int or sequence of ints
  axis : int or None, optional
      None: the flattened a.
  kind, order : as NumPy's

  Returns
  -------
  Tensor
      int64, a's shape (flat when axis is None).
  """
  return asarray(np.argpartition(_np(asarray(a)), kth, axis=axis, kind=kind, order=order))


def partition(a, kth, axis: int | None = -1, kind: str = "introselect", order=None) -> Tensor:
  """A copy of a with its kth element(s) in sorted position, smaller ones before and larger after: NumPy's
  introselect on the realized values.

  Parameters
  ----------
  a : array_like
  kth : int or sequence of ints
  axis : int or None, optional
  kind, order : as NumPy's

  Returns
  -------
  Tensor
      a's dtype and shape (flat when axis is None).
  """
  return asarray(np.partition(_np(asarray(a)), kth, axis=axis, kind=kind, order=order))


def _values(v, dtype, safe: bool) -> Tensor:
  """v as the dtype of the array written, as NumPy converts it: an array cast ('safe' for place and putmask:
  TypeError otherwise), Python values converted (OverflowError for an integer out of range)."""
  if isinstance(v, (Tensor, np.ndarray)):
    t = asarray(v)
    if safe and not np.can_cast(t.dtype, dtype, "safe"):
      raise TypeError(f"Cannot cast array data from {t.dtype!r} to {dtype!r} according to the rule 'safe'")
    return t.astype(dtype)
  return asarray(np.asarray(v, dtype=dtype))


def _cycled(values: Tensor, n: int) -> Tensor:
  """values flattened and repeated to length n (n > 0, values not empty): NumPy's rule for put, place, putmask."""
  v = values.reshape(-1)
  return v if v.shape[0] == n else take(v, np.arange(n) % v.shape[0])


def _target(a, op: str) -> bool:
  """True for a Tensor; False for an ndarray (NumPy writes it); TypeError for anything else, as NumPy."""
  if isinstance(a, Tensor): return True
  if isinstance(a, np.ndarray): return False
  raise TypeError(f"{op}: argument 1 must be a Tensor or numpy.ndarray, not {type(a)}")


def put(a, ind, v, mode: str = "raise") -> None:
  """a.flat[ind] = v in place (v repeated to len(ind); a repeated index keeps the last value), as numpy.put.

  Parameters
  ----------
  a : Tensor or ndarray
      Written in place (a Tensor's aliases and views see it).
  ind : array_like of int
      Flat indices (realized); negative ones count from the end.
  v : array_like
      Cast to a's dtype (an array unsafely; Python values as NumPy converts them).
  mode : {"raise", "wrap", "clip"}, optional
      Out-of-range indices: IndexError, taken modulo a.size, or clipped.
  """
  if not _target(a, "put"): return np.put(a, _np(ind), _np(v), mode=mode)
  if mode not in ("raise", "wrap", "clip"):
    raise ValueError(f"put: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
  idx, n, v = np.asarray(_np(ind)).astype(np.int64).reshape(-1), a.size, _values(v, a.dtype, False)
  if idx.size == 0 or v.size == 0: return
  if mode == "raise" and ((bad := (idx < -n) | (idx >= n)).any()):
    raise IndexError(f"index {idx[bad][0]} is out of bounds for axis 0 with size {n}")
  idx = idx % n if mode == "wrap" else np.clip(idx, 0, n - 1) if mode == "clip" else idx % n
  keep = np.unique(idx[::-1], return_index=True)[1]       # the last write of each index wins, as NumPy's loop
  last = np.sort(idx.size - 1 - keep)
  vals = take(_cycled(v, idx.size), last)
  if a.ndim == 0: a[...] = vals.reshape(())
  else: a[np.unravel_index(idx[last], a.shape)] = vals


def place(arr, mask, vals) -> None:
  """arr[mask] = vals in place, vals repeated to the number of True elements, as numpy.place.

  Parameters
  ----------
  arr : Tensor or ndarray
  mask : array_like of bool
      arr's size (realized).
  vals : array_like
      Not empty when mask has a True element (ValueError, as NumPy); an array must cast to arr's dtype under
      'safe' (TypeError otherwise, as NumPy).
  """
  if not _target(arr, "place"): return np.place(arr, _np(mask), _np(vals))
  m, vals = np.asarray(_np(mask)).astype(bool), _values(vals, arr.dtype, True)
  if m.size != arr.size: raise ValueError("place: mask and data must be the same size")
  if (k := int(m.sum())) == 0: return
  if vals.size == 0: raise ValueError("Cannot insert from an empty array!")
  arr[m.reshape(arr.shape)] = _cycled(vals, k)


def putmask(a, mask, values) -> None:
  """a.flat[i] = values.flat[i % values.size] where mask.flat[i] is true, in place, as numpy.putmask (lazy in
  mask and values).

  Parameters
  ----------
  a : Tensor or ndarray
  mask : array_like of bool
      a's size.
  values : array_like
      Repeated over a's flat positions; an array must cast to a's dtype under 'safe' (TypeError otherwise).
  """
  if not _target(a, "putmask"): return np.putmask(a, _np(mask), _np(values))
  m, values = asarray(mask), _values(values, a.dtype, True)
  if m.size != a.size: raise ValueError("putmask: mask and data must be the same size")
  if a.size == 0 or values.size == 0: return
  with V.WRITES:                  # (reading a and writing it are one step: views.py)
    a[...] = where(m.reshape(a.shape).astype(bool), _cycled(values, a.size).reshape(a.shape), a)
