"""Array manipulation with NumPy's names and errors, built lazily from movement ops; reductions as functions.

    concatenate concat       each piece PADded into place with the identity of the combining op, the pieces then
                             combined pairwise: floats pad -0.0 and add (x + -0.0 is x for every x, -0.0, NaN and
                             inf included), ints pad 0 and add, bools pad False and OR; more than
                             CONCAT_FUSED pieces are joined in groups, each group a kernel
    stack                    STACK, the new axis then moved into place
    hstack vstack dstack     atleast_1d/2d/3d (RESHAPE), then concatenate; column_stack makes 0-d and 1-D inputs
    column_stack row_stack   columns first; row_stack is NumPy 2's deprecated alias of vstack
    split array_split ...    SHRINK windows
    pad                      the primitive PAD (one per axis side when the constants differ: later axes win corners)
    roll                     the axis tiled twice (RESHAPE + EXPAND + RESHAPE) and a SHRINK window: no arithmetic
    repeat tile              RESHAPE + EXPAND + RESHAPE; repeat with one count per element gathers with INDEX
    the rest                 PERMUTE / RESHAPE / EXPAND / FLIP through the Tensor methods

Errors are NumPy's types, raised at the call with the op and the shapes: ValueError for shapes,
numpy.exceptions.AxisError for axes, TypeError for dtypes and non-integer arguments. Public functions get their
NumPy-style docstrings from `_doc` (one line per parameter: "name : type -- note").
"""
from __future__ import annotations
import operator
import warnings
from builtins import any as _any
from builtins import max as _max
from builtins import min as _min
from builtins import sum as _sum
from typing import Callable, Sequence
import numpy as np
from numpy.exceptions import AxisError
from minitensor.backend.composite import move_axis
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.uop import Ops, UOp
from minitensor.backend.uop import prod as _prod
from minitensor.movement import expand_dims
from minitensor.numpy_rules import _dtype, broadcast_shapes
from minitensor.tensor import Tensor, asarray, full

__all__ = ["concatenate", "concat", "stack", "hstack", "vstack", "row_stack", "dstack", "column_stack", "split",
           "array_split", "hsplit", "vsplit", "dsplit", "unstack", "pad",
           "flip", "roll", "repeat", "tile", "moveaxis", "swapaxes", "transpose", "permute_dims", "reshape", "ravel",
           "squeeze", "expand_dims", "broadcast_to", "broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d",
           "matrix_transpose", "sum", "prod", "max", "min", "amax", "amin", "mean", "var", "std", "argmax", "argmin",
           "any", "all", "count_nonzero"]


def _doc(summary: str, *params: str, returns: str = "Tensor") -> Callable:
  """Decorator: give f a NumPy-style docstring (Parameters from "name : type -- note" entries, Returns)."""
  def entry(p: str) -> str:
    head, _, note = p.partition(" -- ")
    return f"  {head}\n      {note}" if note else f"  {head}"
  ret = entry(returns)
  def deco(f):
    f.__doc__ = f"{summary}\n\n  Parameters\n  ----------\n" + "\n".join(map(entry, params)) \
      + f"\n\n  Returns\n  -------\n{ret}\n  "
    return f
  return deco


# ---------------------------------------------------------------------- helpers
def _wrap(u: UOp) -> Tensor:
  # a size-0 result has no values to compute: a broadcast CONST, so realizing it never compiles a kernel
  return Tensor(u) if _prod(u.shape) else full(u.shape, 0, u.dtype)


def _plain(x):
  """A Tensor argument as an ndarray, for arguments whose values decide shapes."""
  return np.asarray(x) if isinstance(x, Tensor) else x


def _axis(axis, ndim: int, op: str) -> int:
  """One axis, negative allowed, as a non-negative int; TypeError if not an integer, AxisError if out of range."""
  try: a = operator.index(axis)
  except TypeError: raise TypeError(f"{op}: axis must be an integer, got {axis!r}") from None
  if not -ndim <= a < ndim: raise AxisError(a, ndim, op)
  return a % ndim


def _axes(axis, ndim: int, op: str, what: str = "axis", allow_dup: bool = False) -> list[int]:
  """An int or a sequence of ints as normalized axes in the given order; ValueError for repeats."""
  out = [_axis(a, ndim, op) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
  if not allow_dup and len(set(out)) != len(out): raise ValueError(f"{op}: repeated axis in `{what}` argument: {axis}")
  return out


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
  d = dtypes.from_numpy(np.result_type(*(t.dtype for t in ts))) if dtype is None else _dtype(dtype)
  for t in ts:
    if not np.can_cast(t.dtype, d.np, casting):
      raise TypeError(f"{op}: cannot cast array data from {t.dtype} to {d.name} according to the rule {casting!r}")
  return d


def _window(x: UOp, axis: int, b: int, e: int) -> UOp:
  return x.shrink(tuple((b, e) if k == axis else (0, s) for k, s in enumerate(x.shape)))


# ---------------------------------------------------------------------- joining
# Every element of a fused concatenation tests every piece, and gcc's time grows faster than the pieces (500
# two-element pieces in one kernel: 29 s, 2,000: 133 s). Pieces are joined CONCAT_FUSED at a time, each group a
# kernel of its own (groups of equal pieces share one compiled function), then the groups are joined the same
# way. Measured (AMD EPYC Zen 3, 2,000 two-element pieces, first realize): 3.3 s with groups of 8, 2.3-3.1 s
# with 16, 3.6 s with 32 or 64; joining 40 (1000, 64) pieces runs fastest with small groups (50-65 ms for 4-16,
# 118 ms for 32). Up to CONCAT_FUSED pieces stay one lazy, fused expression.
CONCAT_FUSED = 16


@_doc("Join arrays along an existing axis.",
      "arrays : sequence of array_like -- same shape except along axis; at least one; not 0-d unless axis is None",
      "axis : int or None, optional -- the joining axis; None flattens every array first",
      "dtype : data-type, optional -- the result dtype; default NumPy's result_type",
      "casting : {'no', 'equiv', 'safe', 'same_kind', 'unsafe'}, optional -- how the operands may cast to the result")
def concatenate(arrays: Sequence, axis: int | None = 0, dtype=None, *, casting: str = "same_kind") -> Tensor:
  ts = _tensors(arrays, "concatenate")
  if axis is None: ts, axis = [t.reshape(-1) for t in ts], 0
  return _concatenate(ts, axis, dtype, casting, "concatenate")


def _concatenate(ts: list[Tensor], axis: int, dtype, casting: str, op: str) -> Tensor:
  """concatenate of at least one Tensor; errors name `op` (the public function the user called)."""
  shapes = [t.shape for t in ts]
  if _any(len(s) == 0 for s in shapes):
    raise ValueError(f"{op}: zero-dimensional arrays cannot be concatenated, got shapes {shapes}")
  nd = len(shapes[0])
  for i, s in enumerate(shapes):
    if len(s) != nd:
      raise ValueError(f"{op}: all the input arrays must have same number of dimensions, but the array at index 0 "
                       f"has {nd} dimension(s) and the array at index {i} has {len(s)} dimension(s) (shapes {shapes})")
  ax = _axis(axis, nd, op)
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


@_doc("Join arrays along an existing axis (the Array API's name of concatenate).",
      "arrays : sequence of array_like", "axis : int or None, optional -- None flattens every array first")
def concat(arrays: Sequence, /, *, axis: int | None = 0) -> Tensor:
  return concatenate(arrays, axis)


@_doc("Join same-shaped arrays along a new axis.",
      "arrays : sequence of array_like -- all of the same shape",
      "axis : int, optional -- position of the new axis in the result",
      "dtype : data-type, optional -- the result dtype; default NumPy's result_type",
      "casting : {'no', 'equiv', 'safe', 'same_kind', 'unsafe'}, optional -- how the operands may cast to the result",
      returns="Tensor -- one dimension more than the inputs")
def stack(arrays: Sequence, axis: int = 0, dtype=None, *, casting: str = "same_kind") -> Tensor:
  ts = _tensors(arrays, "stack")
  if _any(t.shape != ts[0].shape for t in ts):
    raise ValueError(f"stack: all input arrays must have the same shape, got shapes {[t.shape for t in ts]}")
  ax = _axis(axis, ts[0].ndim + 1, "stack")
  d = _promote(ts, dtype, "stack", casting)
  us = tuple(t.uop.cast(d) for t in ts)
  u = UOp(Ops.STACK, us) if len(us) > 1 else us[0].reshape((1,) + us[0].shape)
  return _wrap(move_axis(u, 0, ax))


_TUP = "tup : sequence of array_like -- at least one"
_DTC = ("dtype : data-type, optional -- the result dtype; default NumPy's result_type",
        "casting : {'no', 'equiv', 'safe', 'same_kind', 'unsafe'}, optional -- how the operands may cast to the result")


@_doc("Stack arrays in sequence vertically (row wise): atleast_2d of each, joined along axis 0.", _TUP, *_DTC)
def vstack(tup: Sequence, *, dtype=None, casting: str = "same_kind") -> Tensor:
  return _concatenate([atleast_2d(t) for t in _tensors(tup, "vstack")], 0, dtype, casting, "vstack")


@_doc("vstack under NumPy 2's deprecated alias (a DeprecationWarning, as NumPy).", _TUP, *_DTC)
def row_stack(tup: Sequence, *, dtype=None, casting: str = "same_kind") -> Tensor:
  warnings.warn("`row_stack` alias is deprecated. Use `np.vstack` directly.", DeprecationWarning, stacklevel=2)
  return _concatenate([atleast_2d(t) for t in _tensors(tup, "row_stack")], 0, dtype, casting, "row_stack")


@_doc("Stack arrays in sequence horizontally (column wise): along axis 1, or axis 0 when the inputs are 1-D "
      "(0-d inputs count as 1-D).", _TUP, *_DTC)
def hstack(tup: Sequence, *, dtype=None, casting: str = "same_kind") -> Tensor:
  ts = [atleast_1d(t) for t in _tensors(tup, "hstack")]
  return _concatenate(ts, 0 if ts[0].ndim == 1 else 1, dtype, casting, "hstack")


@_doc("Stack arrays in sequence depth wise: atleast_3d of each ((n,) -> (1, n, 1), (m, n) -> (m, n, 1)), joined "
      "along axis 2.", _TUP)
def dstack(tup: Sequence) -> Tensor:
  return _concatenate([atleast_3d(t) for t in _tensors(tup, "dstack")], 2, None, "same_kind", "dstack")


@_doc("Stack 1-D arrays as columns into a 2-D array: 0-d and 1-D inputs become columns ((n,) -> (n, 1)), 2-D "
      "inputs are joined as they are, along axis 1.", _TUP)
def column_stack(tup: Sequence) -> Tensor:
  ts = [t if t.ndim >= 2 else t.reshape(1, t.size).T for t in _tensors(tup, "column_stack")]
  return _concatenate(ts, 1, None, "same_kind", "column_stack")


# ---------------------------------------------------------------------- splitting
@_doc("Split along axis into N nearly equal sections (the first ones one longer), or at indices.",
      "ary : array_like",
      "indices_or_sections : int or 1-D sequence of ints -- a number of sections (> 0), or split points (slice rules)",
      "axis : int, optional", returns="list of Tensor")
def array_split(ary, indices_or_sections, axis: int = 0) -> list[Tensor]:
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


@_doc("Split along axis into equal sections (ValueError when the axis does not divide), or at indices.",
      "ary : array_like", "indices_or_sections : int or 1-D sequence of ints -- a number of sections, or split points",
      "axis : int, optional", returns="list of Tensor")
def split(ary, indices_or_sections, axis: int = 0) -> list[Tensor]:
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


@_doc("split along axis 1 (axis 0 for 1-D).", "ary : array_like -- at least 1-D",
      "indices_or_sections : int or 1-D sequence of ints", returns="list of Tensor")
def hsplit(ary, indices_or_sections) -> list[Tensor]: return _split_nd(ary, indices_or_sections, 1, 1, "hsplit")


@_doc("split along axis 0.", "ary : array_like -- at least 2-D", "indices_or_sections : int or 1-D sequence of ints",
      returns="list of Tensor")
def vsplit(ary, indices_or_sections) -> list[Tensor]: return _split_nd(ary, indices_or_sections, 2, 0, "vsplit")


@_doc("split along axis 2.", "ary : array_like -- at least 3-D", "indices_or_sections : int or 1-D sequence of ints",
      returns="list of Tensor")
def dsplit(ary, indices_or_sections) -> list[Tensor]: return _split_nd(ary, indices_or_sections, 3, 2, "dsplit")


@_doc("The slices of x along axis, each without that axis.", "x : array_like -- at least 1-D", "axis : int, optional",
      returns="tuple of Tensor")
def unstack(x, /, *, axis: int = 0) -> tuple[Tensor, ...]:
  a = asarray(x)
  if a.ndim == 0: raise ValueError(f"unstack: Input array must be at least 1-d, got shape {a.shape}")
  u = move_axis(a.uop, _axis(axis, a.ndim, "unstack"), 0)
  return tuple(_wrap(_window(u, 0, i, i + 1).reshape(u.shape[1:])) for i in range(u.shape[0]))


# ---------------------------------------------------------------------- padding and rearranging
_OTHER_PAD_MODES = ("edge", "empty", "linear_ramp", "maximum", "mean", "median", "minimum", "reflect", "symmetric",
                    "wrap")


def _as_pairs(x, ndim: int, as_index: bool = False) -> list[tuple]:
  """NumPy's broadcast of a pad argument to ndim (before, after) pairs: a scalar, one pair, or per-axis pairs."""
  x = np.array(x)
  if as_index:
    if x.dtype.kind != "i": raise TypeError(f"pad: `pad_width` must be of integral type, got {x.dtype}")
    if x.size and x.min() < 0: raise ValueError(f"pad: index can't contain negative values, got pad_width {x.tolist()}")
  if x.ndim < 3 and x.size == 1: return [(x.ravel()[0],) * 2] * ndim
  if x.ndim < 3 and x.size == 2 and x.shape != (2, 1): return [tuple(x.ravel())] * ndim
  try: return [tuple(p) for p in np.broadcast_to(x, (ndim, 2))]
  except ValueError:
    raise ValueError(f"pad: could not broadcast {x.tolist()} (shape {x.shape}) to ({ndim}, 2) pairs") from None


def _fill(v, d: DType):
  """v as NumPy stores it into an array of dtype d (OverflowError, or ValueError for NaN into ints, as NumPy)."""
  a = np.empty((1,), d.np)
  try:
    with np.errstate(over="ignore", invalid="ignore"): a[...] = v
  except (OverflowError, ValueError, TypeError) as e:
    raise type(e)(f"pad: constant value {v!r} into {d.name}: {e}") from None
  return a.item(0)


@_doc("Pad with constants (NumPy's mode='constant'; the other modes raise NotImplementedError).",
      "array : array_like",
      "pad_width : int, (before, after), per-axis pairs, or {axis: int or (before, after)} -- non-negative integers",
      "mode : str, optional -- only 'constant'",
      "constant_values : scalar, pair or per-axis pairs, optional -- stored as NumPy stores them into the dtype; "
      "where two axes' pads meet, the later axis' value wins")
def pad(array, pad_width, mode: str = "constant", constant_values=0) -> Tensor:
  a = asarray(array)
  if mode != "constant":
    if mode in _OTHER_PAD_MODES or callable(mode):
      raise NotImplementedError(f"pad: mode {mode!r} is not implemented (only 'constant')")
    raise ValueError(f"pad: mode {mode!r} is not supported")
  if isinstance(pad_width, dict):
    widths = [(0, 0)] * a.ndim
    for ax, w in pad_width.items(): widths[_axis(ax, a.ndim, "pad")] = (w, w) if isinstance(w, int) else tuple(w)
    pad_width = widths
  widths = [(int(b), int(e)) for b, e in _as_pairs(pad_width, a.ndim, as_index=True)]
  values = [tuple(_fill(v, a.uop.dtype) for v in p) for p in _as_pairs(_plain(constant_values), a.ndim)]
  u = a.uop
  if len({repr(v) for p in values for v in p}) <= 1: return _wrap(u.pad(tuple(widths), values[0][0] if values else 0))
  for k, ((b, e), (vb, ve)) in enumerate(zip(widths, values)):
    u = u.pad(tuple((b, 0) if j == k else (0, 0) for j in range(a.ndim)), vb)
    u = u.pad(tuple((0, e) if j == k else (0, 0) for j in range(a.ndim)), ve)
  return _wrap(u)


@_doc("Reverse the order of elements along the given axes (all by default).",
      "m : array_like", "axis : None, int or tuple of ints, optional")
def flip(m, axis=None) -> Tensor: return asarray(m).flip(axis)


@_doc("Shift elements cyclically along axes (of the flattened array when axis is None).",
      "a : array_like", "shift : int or sequence of ints -- broadcast against axis; shifts of a repeated axis add up",
      "axis : None, int or sequence of ints, optional")
def roll(a, shift, axis=None) -> Tensor:
  t = asarray(a)
  if axis is None: return roll(t.reshape(-1), shift, 0).reshape(t.shape)
  axes = _axes(axis, t.ndim, "roll", allow_dup=True)
  try: b = np.broadcast(_plain(shift), axes)
  except ValueError as e: raise ValueError(f"roll: shift {shift!r} and axis {axis!r} do not broadcast: {e}") from None
  if b.ndim > 1:
    raise ValueError(f"roll: 'shift' and 'axis' should be scalars or 1D sequences, got {shift!r} and {axis!r}")
  shifts = [0] * t.ndim
  for sh, ax in b: shifts[ax] += int(sh)
  u = t.uop
  for ax, s in enumerate(shifts):
    n = u.shape[ax]
    if not n or not s % n: continue
    pre, post = u.shape[:ax], u.shape[ax + 1:]
    twice = u.reshape(pre + (1, n) + post).expand(pre + (2, n) + post).reshape(pre + (2 * n,) + post)
    u = _window(twice, ax, n - s % n, 2 * n - s % n)
  return _wrap(u)


@_doc("Repeat each element (of the flattened array when axis is None).",
      "a : array_like", "repeats : int or 1-D array_like of ints -- one count for all, or one per element along axis",
      "axis : int or None, optional")
def repeat(a, repeats, axis: int | None = None) -> Tensor:
  t = asarray(a)
  if axis is None or t.ndim == 0: t = t.reshape(-1)
  ax = _axis(0 if axis is None else axis, t.ndim, "repeat")
  r = np.asarray(_plain(repeats))
  if r.ndim > 1: raise ValueError(f"repeat: repeats must be an int or a 1-D sequence, got shape {r.shape}")
  r, n, u = r.astype(np.int64), t.shape[ax], t.uop
  pre, post = t.shape[:ax], t.shape[ax + 1:]
  if r.size == 1:
    k = int(r.reshape(()))
    if k < 0: raise ValueError(f"repeat: negative dimensions are not allowed (repeats={k}, shape {t.shape})")
    return _wrap(u.reshape(pre + (n, 1) + post).expand(pre + (n, k) + post).reshape(pre + (n * k,) + post))
  if r.size != n:
    raise ValueError(f"repeat: operands could not be broadcast together with shape ({n},) ({r.size},) "
                     f"(array shape {t.shape}, axis {ax})")
  if (r < 0).any(): raise ValueError(f"repeat: repeats may not contain negative values, got {r.tolist()}")
  idx = asarray(np.repeat(np.arange(n, dtype=np.int64), r))
  return _wrap(move_axis(move_axis(u, ax, 0).index(idx.uop), 0, ax))


@_doc("A repeated as a whole reps times along each axis (shapes aligned at the right).",
      "A : array_like", "reps : int or sequence of ints -- non-negative",
      returns="Tensor -- max(A.ndim, len(reps)) dimensions")
def tile(A, reps) -> Tensor:
  t, r = asarray(A), _plain(reps)
  try: reps = tuple(operator.index(x) for x in (r if np.ndim(r) else (r,)))
  except TypeError: raise TypeError(f"tile: reps must be integers, got {reps!r}") from None
  if _any(x < 0 for x in reps):
    raise ValueError(f"tile: negative dimensions are not allowed (reps={reps}, shape {t.shape})")
  nd = _max(len(reps), t.ndim)
  reps, shape = (1,) * (nd - len(reps)) + reps, (1,) * (nd - t.ndim) + t.shape
  u = t.uop.reshape(tuple(x for s in shape for x in (1, s))).expand(tuple(x for rs in zip(reps, shape) for x in rs))
  return _wrap(u.reshape(tuple(r * s for r, s in zip(reps, shape))))


@_doc("Move axes to new positions; the other axes keep their order.",
      "a : array_like", "source, destination : int or sequence of ints -- the same number of each, no repeats")
def moveaxis(a, source, destination) -> Tensor:
  t = asarray(a)
  src, dst = _axes(source, t.ndim, "moveaxis", "source"), _axes(destination, t.ndim, "moveaxis", "destination")
  if len(src) != len(dst):
    raise ValueError(f"moveaxis: `source` and `destination` arguments must have the same number of elements, "
                     f"got {source} and {destination} (shape {t.shape})")
  order = [k for k in range(t.ndim) if k not in src]
  for d, s in sorted(zip(dst, src)): order.insert(d, s)
  return t.transpose(order)


@_doc("Interchange two axes.", "a : array_like", "axis1, axis2 : int")
def swapaxes(a, axis1: int, axis2: int) -> Tensor:
  t = asarray(a)
  return t.swapaxes(_axis(axis1, t.ndim, "swapaxes"), _axis(axis2, t.ndim, "swapaxes"))


@_doc("Permute the axes (reverse them when axes is None).",
      "a : array_like", "axes : sequence of ints, optional -- a permutation of range(ndim), negative allowed")
def transpose(a, axes=None) -> Tensor: return asarray(a).transpose(None if axes is None else tuple(axes))


@_doc("Permute the axes (the Array API's transpose).", "x : array_like", "axes : sequence of ints")
def permute_dims(x, /, axes) -> Tensor: return asarray(x).transpose(tuple(axes))


@_doc("The same elements in row-major order with another shape (one -1 is inferred).",
      "a : array_like", "shape : int or sequence of ints", "order : 'C', optional")
def reshape(a, shape, order: str = "C") -> Tensor: return asarray(a).reshape(shape, order=order)


@_doc("The elements as a 1-D Tensor, in row-major order.", "a : array_like")
def ravel(a) -> Tensor: return asarray(a).reshape(-1)


@_doc("Remove size-1 axes (all of them, or the given ones, which must have size 1).",
      "a : array_like", "axis : None, int or tuple of ints, optional")
def squeeze(a, axis=None) -> Tensor: return asarray(a).squeeze(axis)


@_doc("array broadcast to shape (a view: no data moves).",
      "array : array_like", "shape : int or sequence of ints -- non-negative, compatible with array's shape")
def broadcast_to(array, shape) -> Tensor:
  t, s = asarray(array), _plain(shape)
  s = tuple(operator.index(x) for x in (s if np.ndim(s) else (s,)))
  if _any(x < 0 for x in s):
    raise ValueError(f"broadcast_to: all elements of broadcast shape must be non-negative, got {s}")
  return t.broadcast_to(s)


@_doc("The arguments broadcast against each other.", "*args : array_like", returns="tuple of Tensor")
def broadcast_arrays(*args) -> tuple[Tensor, ...]:
  ts = [asarray(x) for x in args]
  shape = broadcast_shapes(*(t.shape for t in ts), op="broadcast_arrays")
  return tuple(t.broadcast_to(shape) for t in ts)


def _atleast(arys, nd: int):
  """Each input lifted to nd dimensions the NumPy way; one Tensor for one input, else a tuple."""
  out = []
  for t in map(asarray, arys):
    if t.ndim < nd:
      lifted3 = {0: (1, 1, 1), 1: (1,) + t.shape + (1,), 2: t.shape + (1,)}
      t = t.reshape(lifted3[t.ndim] if nd == 3 else (1,) * (nd - t.ndim) + t.shape)
    out.append(t)
  return out[0] if len(out) == 1 else tuple(out)


_ATLEAST_RETURNS = "Tensor, or tuple of Tensor for several inputs"


@_doc("Each input with at least one dimension (0-d becomes (1,)).", "*arys : array_like", returns=_ATLEAST_RETURNS)
def atleast_1d(*arys): return _atleast(arys, 1)


@_doc("Each input with at least two dimensions ((n,) becomes (1, n)).", "*arys : array_like", returns=_ATLEAST_RETURNS)
def atleast_2d(*arys): return _atleast(arys, 2)


@_doc("Each input with at least three dimensions ((n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)).",
      "*arys : array_like", returns=_ATLEAST_RETURNS)
def atleast_3d(*arys): return _atleast(arys, 3)


@_doc("Swap the last two axes.", "x : array_like -- at least 2-D")
def matrix_transpose(x, /) -> Tensor: return asarray(x).mT


# ---------------------------------------------------------------------- reductions as functions
_A, _AX, _KD = "a : array_like", "axis : None, int or tuple of ints, optional -- None reduces all axes", \
  "keepdims : bool, optional"
_DT = "dtype : data-type, optional -- accumulation and result dtype (default NumPy's)"
_DDOF = ("ddof : float, optional -- the divisor is N - ddof",
         "correction : float, optional -- the Array API's name of ddof")
_ARGAX = "axis : int or None, optional -- None: the index into the flattened array"
_WH = ("initial : scalar, optional -- joins the reduction (max/min with where= need it)",
       "where : array_like of bool, optional -- reduce only these elements (broadcast to a's shape)")


@_doc("The sum over the given axes (array_likes accepted).", _A, _AX, _DT, _KD, *_WH)
def sum(a, axis=None, dtype=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
  return asarray(a).sum(axis, dtype, keepdims, initial=initial, where=where)


@_doc("The product over the given axes.", _A, _AX, _DT, _KD, *_WH)
def prod(a, axis=None, dtype=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
  return asarray(a).prod(axis, dtype, keepdims, initial=initial, where=where)


@_doc("The maximum over the given axes (NaN propagates).", _A, _AX, _KD, *_WH)
def max(a, axis=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
  return asarray(a).max(axis, keepdims, initial=initial, where=where)


@_doc("The minimum over the given axes (NaN propagates).", _A, _AX, _KD, *_WH)
def min(a, axis=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
  return asarray(a).min(axis, keepdims, initial=initial, where=where)


amax, amin = max, min


@_doc("The arithmetic mean over the given axes.", _A, _AX, _DT, _KD, _WH[1])
def mean(a, axis=None, dtype=None, keepdims: bool = False, *, where=True) -> Tensor:
  return asarray(a).mean(axis, dtype, keepdims, where=where)


@_doc("The variance over the given axes.", _A, _AX, _DT, *_DDOF, _KD, _WH[1])
def var(a, axis=None, dtype=None, ddof: float = 0, keepdims: bool = False, *, correction=None, where=True) -> Tensor:
  return asarray(a).var(axis, dtype, ddof, keepdims, correction=correction, where=where)


@_doc("The standard deviation over the given axes.", _A, _AX, _DT, *_DDOF, _KD, _WH[1])
def std(a, axis=None, dtype=None, ddof: float = 0, keepdims: bool = False, *, correction=None, where=True) -> Tensor:
  return asarray(a).std(axis, dtype, ddof, keepdims, correction=correction, where=where)


def _arg(a, axis, keepdims: bool, name: str) -> Tensor:
  t = asarray(a)
  if axis is not None: _axis(axis, t.ndim or 1, name)     # one axis (a 0-d array counts as 1-d): TypeError for a tuple
  return getattr(t, name)(axis, keepdims)


@_doc("The index of the first maximum (or first NaN) along axis.", _A, _ARGAX, _KD)
def argmax(a, axis=None, keepdims: bool = False) -> Tensor: return _arg(a, axis, keepdims, "argmax")


@_doc("The index of the first minimum (or first NaN) along axis.", _A, _ARGAX, _KD)
def argmin(a, axis=None, keepdims: bool = False) -> Tensor: return _arg(a, axis, keepdims, "argmin")


@_doc("Whether any element over the given axes is true.", _A, _AX, _KD, _WH[1])
def any(a, axis=None, keepdims: bool = False, *, where=True) -> Tensor:
  return asarray(a).any(axis, keepdims, where=where)


@_doc("Whether all elements over the given axes are true.", _A, _AX, _KD, _WH[1])
def all(a, axis=None, keepdims: bool = False, *, where=True) -> Tensor:
  return asarray(a).all(axis, keepdims, where=where)


@_doc("The number of nonzero elements over the given axes, as int64.", _A, _AX, _KD)
def count_nonzero(a, axis=None, keepdims: bool = False) -> Tensor:
  return asarray(a).astype(bool).sum(axis, np.int64, keepdims)
