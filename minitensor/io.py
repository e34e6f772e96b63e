"""Arrays from and to bytes, iterables and text files, and bit packing, with NumPy's names and keywords.

    fromiter frombuffer loadtxt genfromtxt
                        NumPy reads the data; the result is a Tensor (a copy: later changes of the buffer do not
                        reach it). Structured, string and datetime results raise asarray's TypeError
    savetxt             NumPy writes the realized values
    ascontiguousarray asfortranarray
                        a copy of a (at least 1-D, optionally cast), as NumPy's: a Tensor has no memory layout
                        of its own, so both give the same values
    packbits unpackbits lazy: shifts, masks and a sum over the groups of 8 bits in the graph
"""
from __future__ import annotations
import numpy as np
from minitensor.interop import to_numpy
from minitensor.rearranging import moveaxis, pad
from minitensor.tensor import Tensor, asarray

__all__ = ["fromiter", "frombuffer", "loadtxt", "genfromtxt", "savetxt", "ascontiguousarray", "asfortranarray",
           "packbits", "unpackbits"]


def _tensors(r):
  return tuple(asarray(a) for a in r) if isinstance(r, (tuple, list)) else asarray(r)


def fromiter(iter, dtype, count: int = -1) -> Tensor:
  """A 1-D Tensor of the values an iterable yields, as numpy.fromiter.

  Parameters
  ----------
  iter : iterable
  dtype : data-type
  count : int, optional
      How many items to read (-1: all).

  Returns
  -------
  Tensor
  """
  return asarray(np.fromiter(iter, dtype, count))


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0) -> Tensor:
  """A 1-D Tensor of a buffer's bytes read as dtype, as numpy.frombuffer (copied: see the module docstring).

  Parameters
  ----------
  buffer : bytes-like
  dtype : data-type, optional
  count : int, optional
      How many items (-1: all that fit after offset).
  offset : int, optional
      Bytes to skip.

  Returns
  -------
  Tensor
  """
  return asarray(np.frombuffer(buffer, dtype, count, offset))


def loadtxt(fname, dtype=float, *args, **kwargs):
  """Data of a text file (or lines, or a file object) as numpy.loadtxt reads it, with its keywords.

  Parameters
  ----------
  fname : path, file object or iterable of lines
  dtype : data-type, optional
  *args, **kwargs
      numpy.loadtxt's (comments, delimiter, converters, skiprows, usecols, unpack, ndmin, encoding, max_rows, ...).

  Returns
  -------
  Tensor, or a tuple of Tensors with unpack=True
  """
  return _tensors(np.loadtxt(fname, dtype, *args, **kwargs))


def genfromtxt(fname, dtype=float, *args, **kwargs):
  """Data of a text file with missing values handled, as numpy.genfromtxt reads it, with its keywords.

  Parameters
  ----------
  fname : path, file object or iterable of lines
  dtype : data-type, optional
  *args, **kwargs
      numpy.genfromtxt's (delimiter, skip_header, filling_values, usecols, unpack, ...).

  Returns
  -------
  Tensor, or a tuple of Tensors with unpack=True
  """
  return _tensors(np.genfromtxt(fname, dtype, *args, **kwargs))


def savetxt(fname, X, *args, **kwargs) -> None:
  """Write X's realized values to a text file, as numpy.savetxt.

  Parameters
  ----------
  fname : path or file object
  X : array_like
      1-D or 2-D.
  *args, **kwargs
      numpy.savetxt's (fmt, delimiter, newline, header, footer, comments, encoding).
  """
  np.savetxt(fname, to_numpy(X), *args, **kwargs)


def ascontiguousarray(a, dtype=None) -> Tensor:
  """A copy of a, at least 1-D, optionally cast to dtype, as numpy.ascontiguousarray.

  Parameters
  ----------
  a : array_like
  dtype : data-type, optional

  Returns
  -------
  Tensor
  """
  t = asarray(a, dtype=dtype)
  return (t.reshape(1) if t.ndim == 0 else t).copy()


def asfortranarray(a, dtype=None) -> Tensor:
  """A copy of a, at least 1-D, optionally cast to dtype, as numpy.asfortranarray (the same values as
  ascontiguousarray: a Tensor has no layout).

  Parameters
  ----------
  a : array_like
  dtype : data-type, optional

  Returns
  -------
  Tensor
  """
  return ascontiguousarray(a, dtype)


def _bits_axis(a, axis, op: str, kinds: str, what: str) -> tuple[Tensor, int]:
  t = asarray(a)
  if t.ndim == 0: t = t.reshape(1)                 # as NumPy: a 0-d input is read as 1-D
  if t.dtype.kind not in kinds: raise TypeError(f"Expected an input array of {what} data type ({op}, got {t.dtype})")
  if axis is None: return t.reshape(-1), 0
  ax = int(axis)
  if not -t.ndim <= ax < t.ndim: raise np.exceptions.AxisError(ax, t.ndim, op)
  return t, ax % t.ndim


def _order(bitorder: str, op: str) -> np.ndarray:
  if bitorder not in ("big", "little"): raise ValueError(f"{op}: 'order' must be either 'little' or 'big'")
  w = np.arange(8, dtype=np.uint8)
  return w[::-1].copy() if bitorder == "big" else w


def packbits(a, axis: int | None = None, bitorder: str = "big") -> Tensor:
  """The elements of a (nonzero: 1) packed 8 to a uint8 along axis, the last group padded with zeros, as
  numpy.packbits (lazy).

  Parameters
  ----------
  a : array_like of integers or bools
  axis : int, optional
      None: the flattened a.
  bitorder : {"big", "little"}, optional
      Which end of each byte the first element fills.

  Returns
  -------
  Tensor
      uint8; axis's length is ceil(n / 8).
  """
  t, ax = _bits_axis(a, axis, "packbits", "biu", "integer or boolean")
  shifts = _order(bitorder, "packbits")
  t = moveaxis(t, ax, -1)
  n = t.shape[-1]
  m = -(-n // 8)
  bits = (t != 0).astype(np.uint8)
  if m * 8 != n: bits = pad(bits, [(0, 0)] * (t.ndim - 1) + [(0, m * 8 - n)])
  packed = (bits.reshape(t.shape[:-1] + (m, 8)) << asarray(shifts)).sum(axis=-1, dtype=np.uint8)
  return moveaxis(packed, -1, ax)


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big") -> Tensor:
  """The bits of a uint8 array as 0/1 uint8 elements along axis (8 per byte), as numpy.unpackbits (lazy).

  Parameters
  ----------
  a : array_like of uint8
  axis : int, optional
      None: the flattened a.
  count : int, optional
      Keep this many bits (more: zero-padded; negative: drop that many from the end).
  bitorder : {"big", "little"}, optional

  Returns
  -------
  Tensor
      uint8.
  """
  t, ax = _bits_axis(a, axis, "unpackbits", "u", "unsigned byte")
  if t.dtype != np.uint8: raise TypeError(f"Expected an input array of unsigned byte data type (got {t.dtype})")
  shifts = _order(bitorder, "unpackbits")
  t = moveaxis(t, ax, -1)
  n = t.shape[-1] * 8
  bits = ((t.reshape(t.shape + (1,)) >> asarray(shifts)) & 1).reshape(t.shape[:-1] + (n,))
  if count is not None:
    k = int(count)
    if k < -n: raise ValueError("-count larger than number of elements")          # (NumPy's message)
    keep = k if k >= 0 else n + k
    bits = bits[..., :keep] if keep <= n else pad(bits, [(0, 0)] * (t.ndim - 1) + [(0, keep - n)])
  return moveaxis(bits, -1, ax)
