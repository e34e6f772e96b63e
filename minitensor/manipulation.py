"""Array manipulation with NumPy's names and errors, built lazily from movement ops: joining and splitting here, the
rest (pad, roll, repeat, tile, moveaxis, ...) in rearranging.py, exported from here too.

    concatenate concat       each piece PADded into place with the identity of the combining op, the pieces then
                             combined pairwise: floats pad -0.0 and add (x + -0.0 is x for every x, -0.0, NaN and
                             inf included), ints pad 0 and add, bools pad False and OR; more than
                             CONCAT_FUSED pieces are joined in groups, each group a kernel
    stack                    STACK, the new axis then moved into place
    hstack vstack dstack     atleast_1d/2d/3d (RESHAPE), then concatenate; column_stack makes 0-d and 1-D inputs
    column_stack row_stack   columns first; row_stack is NumPy 2's deprecated alias of vstack
    split array_split ...    SHRINK windows

Errors are NumPy's types, raised at the call with the op and the shapes: ValueError for shapes,
numpy.exceptions.AxisError for axes, TypeError for dtypes and non-integer arguments.
"""
from __future__ import annotations
import operator
import warnings
from builtins import any as _any
from builtins import max as _max
from builtins import min as _min
from builtins import sum as _sum
from typing import Sequence
import numpy as np
from numpy.exceptions import AxisError
from minitensor.backend.composite import move_axis
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.uop import Ops, UOp
from minitensor.creation import full
from minitensor.numpy_rules import _dtype
from minitensor.rearranging import _axis, _plain, _window, _wrap, atleast_1d, atleast_2d, atleast_3d
from minitensor.tensor import Tensor, asarray

__all__ = ["concatenate", "concat", "stack", "hstack", "vstack", "row_stack", "dstack", "column_stack", "split",
           "array_split", "hsplit", "vsplit", "dsplit", "unstack"]


# ---------------------------------------------------------------------- helpers
def _tensors(arrays, op: str) -> list[Tensor]:
  """The operands of a joining op: a sequence of array_likes (an array is iterated over its first axis)."""
  if not hasattr(arrays, "__getitem__"):     # a generator, a set: NumPy 2's TypeError
    raise TypeError(f'{op}: arrays to join must be passed as a "sequence" type such as list or tuple, '
                    f'got {type(arrays).__name__}')
  if isinstance(arrays, Tensor):
    if arrays.ndim == 0: raise TypeError(f"{op}: iteration over a 0-d tensor")
    arrays = unstack(arrays)
  ts = [asarray(x) for x in arrays]
  if not ts: raise ValueError(f"{op}: need at least one array to {op}")
  return ts


_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _promote(ts: list[Tensor], dtype, op: str, casting: str = "same_kind") -> DType:
  """The dtype of joining ts: dtype, else NumPy's result_type; every operand must cast to it by `casting`."""
  if casting not in _CASTINGS:
    raise ValueError(f"{op}: casting must be one of 'no', 'equiv', 'safe', 'same_kind', 'unsafe' (got {casting!r})")
  if dtype is None:         # (one dtype: its own result type, which every operand casts to; 3 pieces: 8 us of 30)
    first = ts[0].uop.dtype
    if all(t.uop.dtype is first for t in ts): return first
  d = dtypes.from_numpy(np.result_type(*(t.dtype for t in ts))) if dtype is None else _dtype(dtype)
  for t in ts:
    if not np.can_cast(t.dtype, d.np, casting):
      raise TypeError(f"{op}: cannot cast array data from {t.dtype} to {d.name} according to the rule {casting!r}")
  return d


# ---------------------------------------------------------------------- joining
# Every element of a fused concatenation tests every piece, and gcc's time grows faster than the pieces (500
# two-element pieces in one kernel: 29 s, 2,000: 133 s). Pieces are joined CONCAT_FUSED at a time, each group a
# kernel of its own (groups of equal pieces share one compiled function), then the groups are joined the same
# way. Measured (AMD EPYC Zen 3, 2,000 two-element pieces, first realize): 3.3 s with groups of 8, 2.3-3.1 s
# with 16, 3.6 s with 32 or 64; joining 40 (1000, 64) pieces runs fastest with small groups (50-65 ms for 4-16,
# 118 ms for 32). Up to CONCAT_FUSED pieces stay one lazy, fused expression.
CONCAT_FUSED = 16


def concatenate(arrays: Sequence, axis: int | None = 0, dtype=None, *, casting: str = "same_kind") -> Tensor:
  """Join arrays along an existing axis.

  Parameters
  ----------
  arrays : sequence of array_like
      same shape except along axis; at least one; not 0-d unless axis is None
  axis : int or None, optional
      the joining axis; None flattens every array first
  dtype : data-type, optional
      the result dtype; default NumPy's result_type
  casting : {'no', 'equiv', 'safe', 'same_kind', 'unsafe'}, optional
      how the operands may cast to the result

  Returns
  -------
  Tensor
  """
  ts = _tensors(arrays, "concatenate")
  if axis is None: ts, axis = [t.reshape(-1) for t in ts], 0
  return _concatenate(ts, axis, dtype, casting, "concatenate")


def _concatenate(ts: list[Tensor], axis: int, dtype, casting: str, op: str) -> Tensor:
  """concatenate of at least one Tensor; errors name `op` (the public function the user called)."""
  shapes = [t.shape for t in ts]
  if not (nd := len(shapes[0])):         # NumPy's order: the first array's rank, the axis against it, the others
    raise ValueError(f"{op}: zero-dimensional arrays cannot be concatenated, got shapes {shapes}")
  ax = _axis(axis, nd, op)
  for i, s in enumerate(shapes):
    if len(s) != nd:
      raise ValueError(f"{op}: all the input arrays must have same number of dimensions, but the array at index 0 "
                       f"has {nd} dimension(s) and the array at index {i} has {len(s)} dimension(s) (shapes {shapes})")
  for i, s in enumerate(shapes):
    for k in range(nd):
      if k != ax and s[k] != shapes[0][k]:
        raise ValueError(f"{op}: all the input array dimensions except for the concatenation axis must match "
                         f"exactly, but along dimension {k}, the array at index 0 has size {shapes[0][k]} and the "
                         f"array at index {i} has size {s[k]} (shapes {shapes})")
  d = _promote(ts, dtype, op, casting)
  if len(ts) > CONCAT_FUSED:        # many pieces: kernels of CONCAT_FUSED pieces each, then those joined
    parts = [concatenate(ts[i:i + CONCAT_FUSED], ax, d.np, casting=casting) for i in range(0, len(ts), CONCAT_FUSED)]
    return concatenate([Tensor(p.uop.stage()) for p in parts], ax)
  total, off, pieces = _sum(s[ax] for s in shapes), 0, []
  zero = False if d.is_bool else -0.0 if d.is_float else 0
  for t in ts:
    n = t.shape[ax]
    if n:
      pieces.append(t.uop.cast(d).pad(tuple((off, total - off - n) if k == ax else (0, 0) for k in range(nd)), zero))
    off += n
  if not pieces: return full(shapes[0][:ax] + (0,) + shapes[0][ax + 1:], 0, d)
  while len(pieces) > 1:        # a balanced tree keeps the graph shallow for many pieces
    pairs = [pieces[i:i + 2] for i in range(0, len(pieces), 2)]
    pieces = [(p[0] | p[1] if d.is_bool else p[0] + p[1]) if len(p) == 2 else p[0] for p in pairs]
  return _wrap(pieces[0])


def concat(arrays: Sequence, /, *, axis: int | None = 0) -> Tensor:
  """Join arrays along an existing axis (the Array API's name of concatenate).

  Parameters
  ----------
  arrays : sequence of array_like
  axis : int or None, optional
      None flattens every array first

  Returns
  -------
  Tensor
  """
  return concatenate(arrays, axis)


def stack(arrays: Sequence, axis: int = 0, dtype=None, *, casting: str = "same_kind") -> Tensor:
  """Join same-shaped arrays along a new axis.

  Parameters
  ----------
  arrays : sequence of array_like
      all of the same shape
  axis : int, optional
      position of the new axis in the result
  dtype : data-type, optional
      the result dtype; default NumPy's result_type
  casting : {'no', 'equiv', 'safe', 'same_kind', 'unsafe'}, optional
      how the operands may cast to the result

  Returns
  -------
  Tensor
      one dimension more than the inputs
  """
  ts = _tensors(arrays, "stack")
  if _any(t.shape != ts[0].shape for t in ts):
    raise ValueError(f"stack: all input arrays must have the same shape, got shapes {[t.shape for t in ts]}")
  ax = _axis(axis, ts[0].ndim + 1, "stack")
  d = _promote(ts, dtype, "stack", casting)
  us = tuple(t.uop.cast(d) for t in ts)
  u = UOp(Ops.STACK, us) if len(us) > 1 else us[0].reshape((1,) + us[0].shape)
  return _wrap(move_axis(u, 0, ax))


def vstack(tup: Sequence, *, dtype=None, casting: str = "same_kind") -> Tensor:
  """Stack arrays in sequence vertically (row wise): atleast_2d of each, joined along axis 0.

  Parameters
  ----------
  tup : sequence of array_like
      at least one
  dtype : data-type, optional
      the result dtype; default NumPy's result_type
  casting : {'no', 'equiv', 'safe', 'same_kind', 'unsafe'}, optional
      how the operands may cast to the result

  Returns
  -------
  Tensor
  """
  return _concatenate([atleast_2d(t) for t in _tensors(tup, "vstack")], 0, dtype, casting, "vstack")


def row_stack(tup: Sequence, *, dtype=None, casting: str = "same_kind") -> Tensor:
  """vstack under NumPy 2's deprecated alias (a DeprecationWarning, as NumPy).

  Parameters
  ----------
  tup : sequence of array_like
      at least one
  dtype : data-type, optional
      the result dtype; default NumPy's result_type
  casting : {'no', 'equiv', 'safe', 'same_kind', 'unsafe'}, optional
      how the operands may cast to the result

  Returns
  -------
  Tensor
  """
  warnings.warn("`row_stack` alias is deprecated. Use `np.vstack` directly.", DeprecationWarning, stacklevel=2)
  return _concatenate([atleast_2d(t) for t in _tensors(tup, "row_stack")], 0, dtype, casting, "row_stack")


def hstack(tup: Sequence, *, dtype=None, casting: str = "same_kind") -> Tensor:
  """Stack arrays in sequence horizontally (column wise): along axis 1, or axis 0 when the inputs are 1-D (0-d inputs
  count as 1-D).

  Parameters
  ----------
  tup : sequence of array_like
      at least one
  dtype : data-type, optional
      the result dtype; default NumPy's result_type
  casting : {'no', 'equiv', 'safe', 'same_kind', 'unsafe'}, optional
      how the operands may cast to the result

  Returns
  -------
  Tensor
  """
  ts = [atleast_1d(t) for t in _tensors(tup, "hstack")]
  return _concatenate(ts, 0 if ts[0].ndim == 1 else 1, dtype, casting, "hstack")


def dstack(tup: Sequence) -> Tensor:
  """Stack arrays in sequence depth wise: atleast_3d of each ((n,) -> (1, n, 1), (m, n) -> (m, n, 1)), joined along axis
  2.

  Parameters
  ----------
  tup : sequence of array_like
      at least one

  Returns
  -------
  Tensor
  """
  return _concatenate([atleast_3d(t) for t in _tensors(tup, "dstack")], 2, None, "same_kind", "dstack")


def column_stack(tup: Sequence) -> Tensor:
  """Stack 1-D arrays as columns into a 2-D array: 0-d and 1-D inputs become columns ((n,) -> (n, 1)), 2-D inputs are
  joined as they are, along axis 1.

  Parameters
  ----------
  tup : sequence of array_like
      at least one

  Returns
  -------
  Tensor
  """
  ts = [t if t.ndim >= 2 else t.reshape(1, t.size).T for t in _tensors(tup, "column_stack")]
  return _concatenate(ts, 1, None, "same_kind", "column_stack")


# ---------------------------------------------------------------------- splitting
def array_split(ary, indices_or_sections, axis: int = 0) -> list[Tensor]:
  """Split along axis into N nearly equal sections (the first ones one longer), or at indices.

  Parameters
  ----------
  ary : array_like
  indices_or_sections : int or 1-D sequence of ints
      a number of sections (> 0), or split points (slice rules)
  axis : int, optional

  Returns
  -------
  list of Tensor
  """
  a = asarray(ary)
  if a.ndim == 0: raise AxisError(axis, 0, "array_split")
  ax = _axis(axis, a.ndim, "array_split")
  n = a.shape[ax]
  try: points = list(_plain(indices_or_sections))
  except TypeError: points = None
  if points is None:
    k = int(indices_or_sections)
    if k <= 0: raise ValueError(f"array_split: number sections must be larger than 0, got {indices_or_sections!r}")
    q, r = divmod(n, k)
    bounds = [i * q + _min(i, r) for i in range(k + 1)]
  else:
    try: bounds = [0, *map(operator.index, points), n]
    except TypeError: raise TypeError(f"array_split: split indices must be integers, got {points}") from None
  out = []
  for st, en in zip(bounds[:-1], bounds[1:]):
    b, e, _ = slice(st, en).indices(n)
    out.append(_wrap(_window(a.uop, ax, b, _max(b, e))))
  return out


def split(ary, indices_or_sections, axis: int = 0) -> list[Tensor]:
  """Split along axis into equal sections (ValueError when the axis does not divide), or at indices.

  Parameters
  ----------
  ary : array_like
  indices_or_sections : int or 1-D sequence of ints
      a number of sections, or split points
  axis : int, optional

  Returns
  -------
  list of Tensor
  """
  a = asarray(ary)
  if a.ndim == 0: raise AxisError(axis, 0, "split")
  try: len(indices_or_sections)
  except TypeError:
    n = a.shape[_axis(axis, a.ndim, "split")]
    try: uneven = n % indices_or_sections
    except ZeroDivisionError:
      raise ZeroDivisionError(f"split: number of sections must not be 0 (shape {a.shape})") from None
    if uneven:
      raise ValueError(f"split: array split does not result in an equal division "
                       f"({n} into {indices_or_sections} sections, shape {a.shape})") from None
  return array_split(a, indices_or_sections, axis)


def _split_nd(ary, indices_or_sections, min_ndim: int, axis: int, op: str) -> list[Tensor]:
  a = asarray(ary)
  if a.ndim < min_ndim:
    raise ValueError(f"{op} only works on arrays of {min_ndim} or more dimensions, got shape {a.shape}")
  return split(a, indices_or_sections, axis if a.ndim > 1 else 0)


def hsplit(ary, indices_or_sections) -> list[Tensor]:
  """split along axis 1 (axis 0 for 1-D).

  Parameters
  ----------
  ary : array_like
      at least 1-D
  indices_or_sections : int or 1-D sequence of ints

  Returns
  -------
  list of Tensor
  """
  return _split_nd(ary, indices_or_sections, 1, 1, "hsplit")


def vsplit(ary, indices_or_sections) -> list[Tensor]:
  """split along axis 0.

  Parameters
  ----------
  ary : array_like
      at least 2-D
  indices_or_sections : int or 1-D sequence of ints

  Returns
  -------
  list of Tensor
  """
  return _split_nd(ary, indices_or_sections, 2, 0, "vsplit")


def dsplit(ary, indices_or_sections) -> list[Tensor]:
  """split along axis 2.

  Parameters
  ----------
  ary : array_like
      at least 3-D
  indices_or_sections : int or 1-D sequence of ints

  Returns
  -------
  list of Tensor
  """
  return _split_nd(ary, indices_or_sections, 3, 2, "dsplit")


def unstack(x, /, *, axis: int = 0) -> tuple[Tensor, ...]:
  """The slices of x along axis, each without that axis.

  Parameters
  ----------
  x : array_like
      at least 1-D
  axis : int, optional

  Returns
  -------
  tuple of Tensor
  """
  a = asarray(x)
  if a.ndim == 0: raise ValueError(f"unstack: Input array must be at least 1-d, got shape {a.shape}")
  u = move_axis(a.uop, _axis(axis, a.ndim, "unstack"), 0)
  return tuple(_wrap(_window(u, 0, i, i + 1).reshape(u.shape[1:])) for i in range(u.shape[0]))
