"""The ndarray habits of Tensor that call the module functions of other families (a family of Tensor methods:
tensor.py's `tensor_methods`), Python's format() and round(), and DLPack export.

    t.fill t.clip t.round t.explain
    t.cumsum t.cumprod t.argsort t.nonzero t.repeat t.take t.trace t.diagonal t.ptp t.searchsorted
                          the module functions of the same names (lazy or realizing, as those are)
    t.sort()              in place, as ndarray.sort: the sorted values are written into t (views see them)
    t.tobytes()           the realized bytes (C order, or Fortran with order="F")
    format(t, spec)       NumPy's: a spec formats a size-1 Tensor's value (f"{t.sum():.2f}"), "" prints t
    round(t)              the Python int nearest a size-1 Tensor (half to even); round(t, n): mt.round(t, n)
    t.__dlpack__          the realized, read-only buffer itself for a DLPack >= 1.0 consumer (zero copy; the
                          capsule says read-only); a copy for an older consumer, which cannot be told, unless
                          copy=False asks to share: then a root Tensor shares writable memory with it, as NumPy
    t.to_device("cpu")    t (the only device)
"""
from __future__ import annotations
import numpy as np
from minitensor import views as V
from minitensor.backend.leaves import borrow
from minitensor.extra import cumprod, cumsum, diagonal, take, trace
from minitensor.functions import clip
from minitensor.functions import round as round_
from minitensor.inspect import explain
from minitensor.rearranging import repeat
from minitensor.sorting import argsort, nonzero, searchsorted, sort
from minitensor.tensor import asarray, tensor_methods

_CPU = 1     # DLPack's kDLCPU


@tensor_methods
class _NdarrayMethods:
  def fill(self, value) -> None:
    """Set every element to value (in place: aliases and views see it), as ndarray.fill."""
    self[...] = value

  def clip(self, min=None, max=None):
    """Values limited to [min, max] (NumPy's clip, NaN propagates): minitensor.clip.

    Parameters
    ----------
    min, max : scalar, array_like or None

    Returns
    -------
    Tensor
    """
    return clip(self, min, max)

  def round(self, decimals: int = 0):
    """Values rounded half to even to `decimals` places: minitensor.round.

    Parameters
    ----------
    decimals : int, default 0

    Returns
    -------
    Tensor
    """
    return round_(self, decimals)

  def explain(self):
    """The schedule that realizing this Tensor runs (minitensor.explain): kernels, their C, buffers,
    loop-iteration counts.

    Returns
    -------
    minitensor.inspect.Explanation
    """
    return explain(self)

  def cumsum(self, axis: int | None = None, dtype=None):
    """Cumulative sum along axis (flattened when None): minitensor.cumsum."""
    return cumsum(self, axis, dtype)

  def cumprod(self, axis: int | None = None, dtype=None):
    """Cumulative product along axis (flattened when None): minitensor.cumprod."""
    return cumprod(self, axis, dtype)

  def sort(self, axis: int = -1, kind=None, order=None) -> None:
    """Sort in place along axis, as ndarray.sort (stable; NaN last); returns None. mt.sort(t) returns a copy."""
    if order is not None: raise ValueError("sort: order= needs a structured dtype, which minitensor does not have")
    if axis is None: raise TypeError("sort: axis=None cannot sort in place (use minitensor.sort(t, axis=None))")
    with V.WRITES: self[...] = sort(self, axis)      # (the read and the write are one step: views.py)

  def argsort(self, axis: int | None = -1, kind=None, order=None, *, stable=None):
    """The indices that sort along axis (stable; computes now): minitensor.argsort."""
    if order is not None: raise ValueError("argsort: order= needs a structured dtype, which minitensor does not have")
    return argsort(self, axis)

  def nonzero(self) -> tuple:
    """Indices of the nonzero elements, one int64 Tensor per axis (computes now): minitensor.nonzero."""
    return nonzero(self)

  def searchsorted(self, v, side: str = "left", sorter=None):
    """Insertion points of v in this sorted 1-D Tensor: minitensor.searchsorted."""
    return searchsorted(self, v, side, sorter)

  def repeat(self, repeats, axis: int | None = None):
    """Each element repeated (flattened when axis is None): minitensor.repeat."""
    return repeat(self, repeats, axis)

  def take(self, indices, axis: int | None = None, mode: str = "raise"):
    """Elements at indices along axis (flattened when None): minitensor.take."""
    return take(self, indices, axis, mode)

  def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None):
    """The sum along a diagonal: minitensor.trace."""
    return trace(self, offset, axis1, axis2, dtype)

  def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """A diagonal, as a read-only view: minitensor.diagonal."""
    return diagonal(self, offset, axis1, axis2)

  def ptp(self, axis=None, keepdims: bool = False):
    """max - min along axis (numpy.ptp; ndarray.ptp of NumPy 1)."""
    return ptp(self, axis, keepdims)

  def tobytes(self, order: str = "C") -> bytes:
    """The raw bytes of the value, in C (row-major) or "F" (column-major) order."""
    return self._value().tobytes(order)

  def __format__(self, spec: str) -> str:
    return format(self._value(element=self.size == 1), spec)

  def __round__(self, ndigits: int | None = None):
    if ndigits is not None: return round_(self, ndigits)
    if self.size != 1: raise TypeError(f"round: only a size-1 Tensor rounds to a Python int, got shape {self.shape}")
    return round(self._scalar("int"))

  # ------------------------------------------------------------------ DLPack and devices
  def __dlpack__(self, *, stream=None, max_version: tuple[int, int] | None = None, dl_device=None,
                 copy: bool | None = None):
    """The value as a DLPack capsule: the realized, read-only buffer itself (no copy) for a consumer of DLPack
    1.0 or later; a copy for an older one (it cannot be told that the buffer is read-only), or when copy=True.
    copy=False to an older consumer shares writable memory, as NumPy's export of a writable array does: a root
    Tensor then holds a writable copy of its value (as asarray(a, copy=False) holds a), which it exports, so the
    consumer's writes show in the Tensor; a view (its value derives from its root's) exports a writable copy of
    its values, and a read-only view (broadcast_to, diagonal) raises BufferError, as NumPy's read-only arrays do.
    NumPy's exporter does the rest, with its errors (BufferError for another device)."""
    a = np.asarray(self)                               # read-only view of the realized buffer
    if max_version is None or max_version[0] < 1:
      if copy is None: a, copy = np.array(a, copy=True), False
      elif copy is False:
        if self._link is not None and self._link.readonly:
          raise BufferError(f"__dlpack__: cannot export a read-only view (shape {self.shape}) to a DLPack < 1.0 "
                            "consumer, which cannot be told it is read-only (copy=False)")
        a = np.array(a, copy=True)
        if self._link is None: self._uop, self._data, self._version = None, borrow(a), self._version + 1
    return a.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

  def __dlpack_device__(self) -> tuple[int, int]: return (_CPU, 0)

  def to_device(self, device, /, *, stream=None):
    """This Tensor on `device`: itself for "cpu" (the only device); ValueError otherwise."""
    if device != "cpu": raise ValueError(f"to_device: minitensor has one device, 'cpu'; got {device!r}")
    if stream is not None: raise ValueError(f"to_device: the CPU has no streams, got stream={stream!r}")
    return self


def ptp(a, axis=None, keepdims: bool = False):
  """The range max - min along axis (numpy.ptp; integers wrap as NumPy's).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
  keepdims : bool, optional

  Returns
  -------
  Tensor
  """
  t = asarray(a)
  return t.max(axis, keepdims) - t.min(axis, keepdims)
