"""The Array API's creation functions: minitensor's (creation.py, tensor.py) with the standard's keyword-only
`device`, which is None or "cpu" (the only device); anything else raises ValueError."""
from __future__ import annotations
from minitensor import creation as C
from minitensor import tensor as T
from minitensor.tensor import Tensor

__all__ = ["arange", "asarray", "empty", "empty_like", "eye", "full", "full_like", "linspace", "ones", "ones_like",
           "zeros", "zeros_like"]


def _device(device, op: str) -> None:
  if device not in (None, "cpu"): raise ValueError(f"{op}: minitensor has one device, 'cpu'; got {device!r}")


def arange(start, stop=None, step=1, dtype=None, *, device=None) -> Tensor:
  """Evenly spaced values in [start, stop) with NumPy's length, dtype and values, including float steps.

  Parameters
  ----------
  start, stop, step, dtype
      As minitensor.creation.arange.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor
  """
  _device(device, "arange")
  return C.arange(start, stop, step, dtype)


def asarray(obj, dtype=None, copy: bool | None = None, *, device=None) -> Tensor:
  """A Tensor of obj (ndarray, nested sequence, Python or NumPy scalar, Tensor).

  Parameters
  ----------
  obj, dtype, copy
      As minitensor.tensor.asarray.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor
  """
  _device(device, "asarray")
  return T.asarray(obj, dtype, copy)


def eye(N: int, M: int | None = None, k: int = 0, dtype=float, *, device=None) -> Tensor:
  """A 2-D Tensor with ones on the k-th diagonal and zeros elsewhere.

  Parameters
  ----------
  N, M, k, dtype
      As minitensor.creation.eye.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor
  """
  _device(device, "eye")
  return C.eye(N, M, k, float if dtype is None else dtype)


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None,
             axis: int = 0, *, device=None):
  """num evenly spaced samples from start to stop (NumPy's algorithm, values and dtype).

  Parameters
  ----------
  start, stop, num, endpoint, retstep, dtype, axis
      As minitensor.creation.linspace.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor, or (Tensor, step) with retstep=True
  """
  _device(device, "linspace")
  return C.linspace(start, stop, num, endpoint, retstep, dtype, axis)


def empty(shape, dtype=None, *, device=None) -> Tensor:
  """A Tensor of `shape` (float64 by default); its values are zeros, as the graph has no uninitialized memory.

  Parameters
  ----------
  shape, dtype
      As minitensor.tensor.empty.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor
  """
  _device(device, "empty")
  return C.empty(shape, dtype)


def full(shape, fill_value, dtype=None, *, device=None) -> Tensor:
  """A Tensor of `shape` with every element fill_value (a broadcast constant: no memory until realized).

  Parameters
  ----------
  shape, fill_value, dtype
      As minitensor.creation.full.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor
  """
  _device(device, "full")
  return C.full(shape, fill_value, dtype)


def ones(shape, dtype=None, *, device=None) -> Tensor:
  """A Tensor of `shape` filled with 1 (float64 by default): full(shape, 1, dtype).

  Parameters
  ----------
  shape, dtype
      As minitensor.tensor.ones.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor
  """
  _device(device, "ones")
  return C.ones(shape, dtype)


def zeros(shape, dtype=None, *, device=None) -> Tensor:
  """A Tensor of `shape` filled with 0 (float64 by default): full(shape, 0, dtype).

  Parameters
  ----------
  shape, dtype
      As minitensor.tensor.zeros.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor
  """
  _device(device, "zeros")
  return C.zeros(shape, dtype)


def empty_like(a, dtype=None, shape=None, *, device=None) -> Tensor:
  """A Tensor with a's shape and dtype whose values are unspecified (here: zeros, which cost nothing).

  Parameters
  ----------
  a, dtype, shape
      As minitensor.creation.empty_like.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor
  """
  _device(device, "empty_like")
  return C.empty_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None) -> Tensor:
  """A Tensor of a's shape and dtype filled with fill_value.

  Parameters
  ----------
  a, fill_value, dtype, shape
      As minitensor.creation.full_like.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor
  """
  _device(device, "full_like")
  return C.full_like(a, fill_value, dtype, shape)


def ones_like(a, dtype=None, shape=None, *, device=None) -> Tensor:
  """A Tensor of ones with a's shape and dtype.

  Parameters
  ----------
  a, dtype, shape
      As minitensor.creation.ones_like.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor
  """
  _device(device, "ones_like")
  return C.ones_like(a, dtype, shape)


def zeros_like(a, dtype=None, shape=None, *, device=None) -> Tensor:
  """A Tensor of zeros with a's shape and dtype.

  Parameters
  ----------
  a, dtype, shape
      As minitensor.creation.zeros_like.
  device : None or "cpu", optional
      The only device; anything else raises ValueError.

  Returns
  -------
  Tensor
  """
  _device(device, "zeros_like")
  return C.zeros_like(a, dtype, shape)
