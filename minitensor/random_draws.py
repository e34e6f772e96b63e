"""What minitensor.random's generators share: NumPy's draws made into Tensors, and shuffling a Tensor lazily.

`draw(f, *args, **kw)` calls a NumPy sampling method with Tensor arguments realized (as NumPy would read them)
and returns its result as a Tensor with NumPy's dtype; a scalar result (size=None) is a 0-d Tensor. Because the
values are drawn by NumPy's own RandomState or Generator, they are NumPy's stream, bit for bit, for the same
seed and the same sequence of calls.

shuffle and permutation of a Tensor draw NumPy's permutation of the indices along the axis (the same draws
NumPy's shuffle of an array of that length makes) and gather with it (`t[perm]`, lazily).
"""
from __future__ import annotations
import operator
from typing import Callable
import numpy as np
from numpy.exceptions import AxisError
from minitensor import tracing as T
from minitensor import views as V
from minitensor.tensor import Tensor, asarray

__all__ = ["plain", "draw", "shuffle_tensor", "permutation_of"]


def plain(x):
  """Tensor arguments (also inside lists and tuples) as ndarrays for NumPy; anything else as given."""
  if isinstance(x, Tensor): return np.asarray(x)
  if isinstance(x, (list, tuple)) and any(isinstance(v, Tensor) for v in x): return type(x)(plain(v) for v in x)
  return x


def draw(f: Callable, *args, **kwargs) -> Tensor:
  """f(*args, **kwargs) (a NumPy sampling method) with Tensor arguments realized, its result as a Tensor."""
  if T.ACTIVE[0]: T.check_draw(getattr(f, "__name__", "a draw"))
  return asarray(f(*(plain(a) for a in args), **{k: plain(v) for k, v in kwargs.items()}))


def _perm(shuffle: Callable, n: int) -> np.ndarray:
  """The permutation `shuffle` (a NumPy shuffle) makes of n items: the same draws as shuffling any n rows."""
  if T.ACTIVE[0]: T.check_draw("a permutation")
  idx = np.arange(n, dtype=np.intp)
  shuffle(idx)
  return idx


def _along(t: Tensor, axis: int, perm: np.ndarray) -> Tensor:
  return t[(slice(None),) * axis + (perm,)]


def _axis(axis, ndim: int, op: str) -> int:
  a = operator.index(axis)
  if not -ndim <= a < ndim: raise AxisError(a, ndim, op)
  return a % ndim


def shuffle_tensor(shuffle: Callable, x: Tensor, axis: int, op: str) -> None:
  """Shuffle Tensor x in place along axis: x[...] = x gathered by the permutation (none drawn when x is empty,
  as NumPy)."""
  if x.ndim == 0: raise TypeError(f"{op}: len() of unsized object (a 0-d tensor cannot be shuffled)")
  ax = _axis(axis, x.ndim, op)
  if x.size:
    with V.WRITES: x[...] = _along(x, ax, _perm(shuffle, x.shape[ax]))   # (one step with its read: views.py)


def permutation_of(shuffle: Callable, x, axis: int, op: str) -> Tensor:
  """A permuted arange(x) for an integer x, else a permuted copy of x along axis (a lazy gather)."""
  if isinstance(x, (int, np.integer)): return asarray(_perm(shuffle, x).astype(np.int64))
  t = asarray(x)
  if t.ndim == 0 and op == "permutation": raise IndexError(f"{op}: x must be an integer or at least 1-dimensional")
  ax = _axis(axis, t.ndim, op)
  return _along(t, ax, _perm(shuffle, t.shape[ax]))
