"""Creation functions with NumPy's names: full, zeros, ones, empty, *_like, arange, linspace, eye, identity.

    full zeros ones empty                        a broadcast CONST: no data, no kernel until used
    zeros_like ones_like empty_like full_like   CONST + RESHAPE + EXPAND: no data, no kernel
    eye identity                                 column iota - row iota == k: lazy, one kernel when realized
    arange linspace                              NumPy computes the values (its length, dtype and rounding rules
                                                 are the specification), the result is a realized Tensor
"""
from __future__ import annotations
import operator
import warnings
import numpy as np
from minitensor import ufuncs as U
from minitensor.backend.dtype import dtypes
from minitensor.backend.uop import UOp
from minitensor.numpy_rules import check_shape
from minitensor.tensor import Tensor, _dtype, asarray

__all__ = ["full", "zeros", "ones", "empty", "zeros_like", "ones_like", "empty_like", "full_like", "arange", "linspace",
           "eye", "identity"]



def full(shape, fill_value, dtype=None) -> Tensor:
  """A Tensor of `shape` with every element fill_value (a broadcast constant: no memory until realized).

  Parameters
  ----------
  shape : int or tuple of ints
  fill_value : scalar or Tensor
      A complex value for a real dtype keeps its real part (NumPy's ComplexWarning).
  dtype : dtype-like, optional
      Default: fill_value's NumPy dtype.

  Returns
  -------
  Tensor
  """
  shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(operator.index(s) for s in shape)
  if any(s < 0 for s in shape): raise ValueError(f"full: negative dimensions are not allowed: {shape}")
  if isinstance(fill_value, Tensor):
    return Tensor(U._broadcast(fill_value.uop.cast(_dtype(dtype)) if dtype else fill_value.uop, shape))
  d = _dtype(dtype) if dtype is not None else dtypes.from_numpy(np.asarray(fill_value).dtype)
  check_shape(shape, "full")
  if isinstance(fill_value, complex) and not d.is_complex:       # NumPy's unsafe cast: the real part, with a warning
    if not d.is_bool:
      warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning,
                    stacklevel=2)
    fill_value = bool(fill_value) if d.is_bool else fill_value.real
  c = U.scalar_uop(fill_value, d, "full") if isinstance(fill_value, int) and not isinstance(fill_value, bool) else \
    UOp.const(fill_value, d)
  return Tensor(c.reshape((1,) * len(shape)).expand(shape) if shape else c)


def zeros(shape, dtype=None) -> Tensor:
  """A Tensor of `shape` filled with 0 (float64 by default): full(shape, 0, dtype)."""
  return full(shape, 0, float if dtype is None else dtype)


def ones(shape, dtype=None) -> Tensor:
  """A Tensor of `shape` filled with 1 (float64 by default): full(shape, 1, dtype)."""
  return full(shape, 1, float if dtype is None else dtype)


def empty(shape, dtype=None) -> Tensor:
  """A Tensor of `shape` (float64 by default); its values are zeros, as the graph has no uninitialized memory."""
  return full(shape, 0, float if dtype is None else dtype)

def _shape_arg(shape, op: str) -> tuple[int, ...]:
  """A shape from an int or a sequence of ints; ValueError for negative sizes (as NumPy)."""
  s = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(operator.index(x) for x in shape)
  if any(x < 0 for x in s): raise ValueError(f"{op}: negative dimensions are not allowed, got shape {s}")
  return s


def full_like(a, fill_value, dtype=None, shape=None) -> Tensor:
  """A Tensor of a's shape and dtype filled with fill_value.

  Parameters
  ----------
  a : array_like
      Supplies the shape and dtype (unless overridden).
  fill_value : scalar, array_like or Tensor
      Cast to the result dtype as NumPy's ``copyto(..., casting="unsafe")`` does (so an out-of-range Python
      integer raises OverflowError, NaN into an integer dtype gives what NumPy gives); arrays broadcast.
  dtype : data-type, optional
  shape : int or sequence of ints, optional

  Returns
  -------
  Tensor
  """
  a = asarray(a)
  d = _dtype(dtype if dtype is not None else a.dtype)
  shape = a.shape if shape is None else _shape_arg(shape, "full_like")
  if isinstance(fill_value, Tensor): return fill_value.astype(d.np).broadcast_to(shape)
  v = np.empty(np.shape(fill_value), d.np)
  with np.errstate(invalid="ignore"): np.copyto(v, fill_value, casting="unsafe")
  return full(shape, v.item(), d) if v.ndim == 0 else asarray(v).broadcast_to(shape)


def zeros_like(a, dtype=None, shape=None) -> Tensor:
  """A Tensor of zeros with a's shape and dtype.

  Parameters
  ----------
  a : array_like
  dtype : data-type, optional
  shape : int or sequence of ints, optional

  Returns
  -------
  Tensor
  """
  return full_like(a, 0, dtype, shape)


def ones_like(a, dtype=None, shape=None) -> Tensor:
  """A Tensor of ones with a's shape and dtype.

  Parameters
  ----------
  a : array_like
  dtype : data-type, optional
  shape : int or sequence of ints, optional

  Returns
  -------
  Tensor
  """
  return full_like(a, 1, dtype, shape)


def empty_like(a, dtype=None, shape=None) -> Tensor:
  """A Tensor with a's shape and dtype whose values are unspecified (here: zeros, which cost nothing).

  Parameters
  ----------
  a : array_like
  dtype : data-type, optional
  shape : int or sequence of ints, optional

  Returns
  -------
  Tensor
  """
  return full_like(a, 0, dtype, shape)


def _plain(x):
  """A Tensor argument as the NumPy value NumPy's own function expects."""
  return np.asarray(x) if isinstance(x, Tensor) else x


def arange(start, stop=None, step=1, dtype=None) -> Tensor:
  """Evenly spaced values in [start, stop) with NumPy's length, dtype and values, including float steps.

  Parameters
  ----------
  start : int or float
      The first value; the end (with start 0) when stop is None.
  stop : int or float, optional
  step : int or float, optional
      Nonzero (ZeroDivisionError otherwise, as NumPy).
  dtype : data-type, optional
      Default: NumPy's choice from the arguments (int64 for Python ints, float64 for floats).

  Returns
  -------
  Tensor
      1-D, of length ``ceil((stop - start) / step)`` (0 when negative).
  """
  d = _dtype(dtype).np if dtype is not None else None
  return asarray(np.arange(_plain(start), _plain(stop), _plain(step), dtype=d))


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None, axis: int = 0):
  """num evenly spaced samples from start to stop (NumPy's algorithm, values and dtype).

  Parameters
  ----------
  start, stop : array_like
      Scalars or arrays (broadcast together; the samples run along `axis`).
  num : int, optional
      Number of samples, non-negative.
  endpoint : bool, optional
      Whether stop is the last sample.
  retstep : bool, optional
      Also return the spacing.
  dtype : data-type, optional
  axis : int, optional
      Where the sample axis goes when start/stop are arrays.

  Returns
  -------
  Tensor, or (Tensor, step) when retstep
      step is a float, or a Tensor when start/stop are arrays.
  """
  d = _dtype(dtype).np if dtype is not None else None
  r = np.linspace(_plain(start), _plain(stop), num, endpoint=endpoint, retstep=retstep, dtype=d, axis=axis)
  if not retstep: return asarray(r)
  return asarray(r[0]), (asarray(r[1]) if np.ndim(r[1]) else r[1])


def eye(N: int, M: int | None = None, k: int = 0, dtype=float) -> Tensor:
  """A 2-D Tensor with ones on the k-th diagonal and zeros elsewhere.

  Built lazily as the comparison of two iotas, column - row == k; only the two iotas (N + M integers) are data.

  Parameters
  ----------
  N : int
      Number of rows.
  M : int, optional
      Number of columns (default N).
  k : int, optional
      Diagonal offset: 0 the main diagonal, positive above it, negative below.
  dtype : data-type, optional

  Returns
  -------
  Tensor
      Shape (N, M).
  """
  N, M, k = operator.index(N), operator.index(N if M is None else M), operator.index(k)
  d = _dtype(dtype)
  if N < 0 or M < 0: raise ValueError(f"eye: negative dimensions are not allowed, got N={N}, M={M}")
  if N == 0 or M == 0 or not -N < k < M: return full((N, M), 0, d)
  rows, cols = (asarray(np.arange(n, dtype=np.int64)) for n in (N, M))
  return ((cols.reshape(1, M) - rows.reshape(N, 1)) == k).astype(d.np)


def identity(n: int, dtype=float) -> Tensor:
  """The n x n identity matrix.

  Parameters
  ----------
  n : int
  dtype : data-type, optional

  Returns
  -------
  Tensor
      Shape (n, n).
  """
  return eye(n, dtype=dtype)
