"""numpy.lib.stride_tricks for Tensors.

    sliding_window_view    a lazy, read-only view (as NumPy's default writeable=False): each windowed axis is
                           an index map of the input (nn's window map), so nothing is copied and the windows
                           follow later writes into x
    as_strided             NumPy's byte strides from x's first element over x's memory, which for a view is
                           its base (a root Tensor's elements in row-major order, as NumPy's base buffer; a
                           view's strides are its element strides over the base, as views.py keeps them for
                           NumPy's reshape rule), checked: every element the strides reach must lie inside
                           the base (NumPy would read outside its memory), and each stride must be a multiple
                           of the itemsize (ValueError otherwise). The result is a read-only view of the base
                           that gathers its elements (a write raises ValueError: in NumPy such a write would
                           change x through overlapping elements); a view's first position costs one small
                           kernel
"""
from __future__ import annotations
import operator
import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple
from minitensor import views as V
from minitensor.tensor import Tensor, asarray

__all__ = ["sliding_window_view", "as_strided"]


def sliding_window_view(x, window_shape, axis=None, *, subok: bool = False, writeable: bool = False) -> Tensor:
  """A read-only view of x's sliding windows, as numpy.lib.stride_tricks.sliding_window_view (lazy).

  Parameters
  ----------
  x : array_like
  window_shape : int or tuple of ints
      One window length per windowed axis.
  axis : int or tuple of ints, optional
      The windowed axes (repeats allowed, as NumPy); None: every axis, window_shape then has x.ndim entries.
  subok : bool, optional
      Accepted for NumPy (there are no Tensor subclasses).
  writeable : bool, optional
      True is not supported (overlapping windows cannot be written as one value): ValueError.

  Returns
  -------
  Tensor
      x.shape with each windowed axis n -> n - w + 1, followed by window_shape.
  """
  from minitensor.nn import _windows
  t = asarray(x)
  win = tuple(operator.index(w) for w in (window_shape if np.iterable(window_shape) else (window_shape,)))
  if writeable: raise ValueError("sliding_window_view: writeable=True is not supported (write into x instead)")
  if any(w < 0 for w in win): raise ValueError("`window_shape` cannot contain negative values")
  if axis is None:
    if len(win) != t.ndim:
      raise ValueError(f"Since axis is `None`, must provide window_shape for all dimensions of `x`; got "
                       f"{len(win)} window_shape elements and `x.ndim` is {t.ndim}.")
    axes = tuple(range(t.ndim))
  else:
    axes = normalize_axis_tuple(axis, t.ndim, allow_duplicate=True)
    if len(win) != len(axes):
      raise ValueError(f"Must provide matching length window_shape and axis; got {len(win)} window_shape elements "
                       f"and {len(axes)} axes elements.")
  trimmed = list(t.shape)
  for ax, w in zip(axes, win):
    if trimmed[ax] < w: raise ValueError("window shape cannot be larger than input array shape")
    trimmed[ax] -= w - 1

  def fwd(u):
    for ax, w in zip(axes, win):
      u = _windows(u, ax, w, 1, 1)                        # (.., w, n - w + 1, ..): the window axis goes last
      nd = len(u.shape)
      u = u.permute(tuple(k for k in range(nd) if k != ax) + (ax,))
    return u
  st = V.strides_of(t)
  return V.readonly_view(t, fwd, st + tuple(st[ax] for ax in axes))


def _first(t: Tensor) -> tuple[Tensor, int]:
  """t's root and the root's flat (row-major) position of t's first element: the root's iota taken through t's
  view steps (a one-element result; no compile when t is a root)."""
  root, steps = V.root_of(t)
  if not steps or t.size == 0: return root, 0
  u = asarray(np.arange(root.size, dtype=np.int64).reshape(root.shape)).uop
  try:
    for s in steps: u = s.fwd(u)
  except (TypeError, ValueError) as e:
    raise ValueError("as_strided: x is a .real/.imag view, whose elements are not its base's") from e
  return root, int(Tensor(u).reshape(-1)[0])


def as_strided(x, shape=None, strides=None, subok: bool = False, writeable: bool = True) -> Tensor:
  """x's memory read at NumPy's byte strides, as numpy.lib.stride_tricks.as_strided, bounds-checked (see the
  module docstring).

  Parameters
  ----------
  x : array_like
      A Tensor view reads its base, as NumPy's view reads its base's memory.
  shape : tuple of ints, optional
      Default x.shape.
  strides : tuple of ints, optional
      Bytes between neighbours along each axis, from x's first element (default x's strides: its row-major
      strides, or for a view its element strides over its base times the itemsize).
  subok, writeable : bool, optional
      Accepted for NumPy; the result is read-only.

  Returns
  -------
  Tensor
  """
  t = asarray(x)
  item = t.dtype.itemsize
  shape = tuple(t.shape if shape is None else (operator.index(d) for d in shape))
  strides = tuple(tuple(s * item for s in V.strides_of(t)) if strides is None else (operator.index(s) for s in strides))
  if len(strides) != len(shape): raise ValueError(f"as_strided: {len(shape)} dimensions but {len(strides)} strides")
  if any(s % item for s in strides):
    raise ValueError(f"as_strided: strides {strides} must be multiples of the itemsize {item} of {t.dtype}")
  root, first = _first(t)
  steps, size = [s // item for s in strides], root.size
  off = np.full(shape, first, np.int64)
  for k, (d, s) in enumerate(zip(shape, steps)):
    off += (np.arange(d, dtype=np.int64) * s).reshape((1,) * k + (d,) + (1,) * (len(shape) - k - 1))
  if off.size and (off.min() < 0 or off.max() >= size):
    raise ValueError(f"as_strided: shape {shape} with strides {strides} reaches outside the {size} elements of x's "
                     f"memory (elements {off.min()}..{off.max()})")
  if not off.size: return V.readonly_view(root, lambda u: u.reshape((size,)).shrink(((0, 0),)).reshape(shape),
                                          tuple(steps))
  idx = asarray(off)
  return V.readonly_view(root, lambda u: u.reshape((size,)).index(idx.uop), tuple(steps))
