"""numpy.lib.stride_tricks' sliding_window_view, lazily: a window is a gather along each axis, not strides."""
from __future__ import annotations
import operator
import numpy as np
from numpy.exceptions import AxisError
from minitensor.rearranging import moveaxis
from minitensor.tensor import Tensor, asarray

__all__ = ["sliding_window_view"]


def sliding_window_view(x, window_shape, axis=None, *, subok: bool = False, writeable: bool = False) -> Tensor:
  """Every window of `window_shape` over x, as numpy.lib.stride_tricks.sliding_window_view: the result's shape
  is x's with each windowed axis shortened by its window length - 1, followed by the window's axes (in the order
  of `axis`; an axis may repeat). Lazy: a gather of x per windowed axis (NumPy's result is a read-only view of
  x; this is a read-only value, computed only where used).

  Parameters
  ----------
  x : array_like or Tensor
  window_shape : int or tuple of ints
  axis : int or tuple of ints, optional
      Default: every axis (window_shape then has one length per axis).
  subok : bool
      Accepted (a Tensor has no subclasses to pass through).
  writeable : bool
      Only False: NotImplementedError otherwise (windows are values, not writable views).

  Returns
  -------
  Tensor
  """
  if writeable: raise NotImplementedError("sliding_window_view: writeable=True (a writable view) is not supported")
  x = x if isinstance(x, Tensor) else asarray(x)
  window = tuple(operator.index(w) for w in window_shape) if np.iterable(window_shape) else \
    (operator.index(window_shape),)
  if any(w < 0 for w in window): raise ValueError("`window_shape` cannot contain negative values")
  if axis is None:
    if len(window) != x.ndim:
      raise ValueError(f"Since axis is `None`, must provide window_shape for all dimensions of `x`; got {len(window)} "
                       f"window_shape elements and `x.ndim` is {x.ndim}.")
    axes = tuple(range(x.ndim))
  else:
    axes = tuple(operator.index(a) for a in axis) if np.iterable(axis) else (operator.index(axis),)
    for a in axes:
      if not -x.ndim <= a < x.ndim: raise AxisError(a, x.ndim)
    axes = tuple(a % x.ndim for a in axes)
    if len(window) != len(axes):
      raise ValueError(f"Must provide matching length window_shape and axis; got {len(window)} window_shape elements "
                       f"and {len(axes)} axes elements.")
  trimmed = list(x.shape)
  for a, w in zip(axes, window):
    if trimmed[a] < w: raise ValueError("window shape cannot be larger than input array shape")
    trimmed[a] -= w - 1
  y = x
  for a, w in zip(axes, window):          # each gather appends its window's axis after the earlier ones
    idx = np.arange(y.shape[a] - w + 1)[:, None] + np.arange(w)[None, :]   # (position, offset) -> index along a
    y = moveaxis(moveaxis(y, a, -1)[..., idx], -2, a)
  return y
