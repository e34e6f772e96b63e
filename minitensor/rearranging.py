"""Rearranging arrays with NumPy's names and errors, built lazily from movement ops (joining and
splitting: manipulation.py).

    pad                      the primitive PAD (one per axis side when the constants differ: later axes win corners)
    roll                     the axis tiled twice (RESHAPE + EXPAND + RESHAPE) and a SHRINK window: no arithmetic
    repeat tile              RESHAPE + EXPAND + RESHAPE; repeat with one count per element gathers with INDEX
    the rest                 PERMUTE / RESHAPE / EXPAND / FLIP through the Tensor methods

Errors are NumPy's types, raised at the call with the op and the shapes: ValueError for shapes,
numpy.exceptions.AxisError for axes, TypeError for dtypes and non-integer arguments.
"""
from __future__ import annotations
import operator
import numpy as np
from numpy.exceptions import AxisError
from minitensor.backend.composite import move_axis
from minitensor.backend.dtype import DType
from minitensor.backend.uop import UOp
from minitensor.backend.uop import prod as _prod
from minitensor.creation import full
from minitensor.movement import expand_dims
from minitensor.numpy_rules import broadcast_shapes
from minitensor.tensor import Tensor, asarray

__all__ = ["pad", "flip", "roll", "repeat", "tile", "moveaxis", "swapaxes", "transpose", "permute_dims", "reshape",
           "ravel", "squeeze", "expand_dims", "broadcast_to", "broadcast_arrays", "atleast_1d", "atleast_2d",
           "atleast_3d", "matrix_transpose"]



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


def _window(x: UOp, axis: int, b: int, e: int) -> UOp:
  return x.shrink(tuple((b, e) if k == axis else (0, s) for k, s in enumerate(x.shape)))


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


def pad(array, pad_width, mode: str = "constant", constant_values=0) -> Tensor:
  """Pad with constants (NumPy's mode='constant'; the other modes raise NotImplementedError).

  Parameters
  ----------
  array : array_like
  pad_width : int, (before, after), per-axis pairs, or {axis: int or (before, after)}
      non-negative integers
  mode : str, optional
      only 'constant'
  constant_values : scalar, pair or per-axis pairs, optional
      stored as NumPy stores them into the dtype; where two axes' pads meet, the later axis' value wins

  Returns
  -------
  Tensor
  """
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


def flip(m, axis=None) -> Tensor:
  """Reverse the order of elements along the given axes (all by default).

  Parameters
  ----------
  m : array_like
  axis : None, int or tuple of ints, optional

  Returns
  -------
  Tensor
  """
  return asarray(m).flip(axis)


def roll(a, shift, axis=None) -> Tensor:
  """Shift elements cyclically along axes (of the flattened array when axis is None).

  Parameters
  ----------
  a : array_like
  shift : int or sequence of ints
      broadcast against axis; shifts of a repeated axis add up
  axis : None, int or sequence of ints, optional

  Returns
  -------
  Tensor
  """
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


def repeat(a, repeats, axis: int | None = None) -> Tensor:
  """Repeat each element (of the flattened array when axis is None).

  Parameters
  ----------
  a : array_like
  repeats : int or 1-D array_like of ints
      one count for all, or one per element along axis
  axis : int or None, optional

  Returns
  -------
  Tensor
  """
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


def tile(A, reps) -> Tensor:
  """A repeated as a whole reps times along each axis (shapes aligned at the right).

  Parameters
  ----------
  A : array_like
  reps : int or sequence of ints
      non-negative

  Returns
  -------
  Tensor
      max(A.ndim, len(reps)) dimensions
  """
  t, r = asarray(A), _plain(reps)
  try: reps = tuple(operator.index(x) for x in (r if np.ndim(r) else (r,)))
  except TypeError: raise TypeError(f"tile: reps must be integers, got {reps!r}") from None
  if any(x < 0 for x in reps):
    raise ValueError(f"tile: negative dimensions are not allowed (reps={reps}, shape {t.shape})")
  nd = max(len(reps), t.ndim)
  reps, shape = (1,) * (nd - len(reps)) + reps, (1,) * (nd - t.ndim) + t.shape
  u = t.uop.reshape(tuple(x for s in shape for x in (1, s))).expand(tuple(x for rs in zip(reps, shape) for x in rs))
  return _wrap(u.reshape(tuple(r * s for r, s in zip(reps, shape))))


def moveaxis(a, source, destination) -> Tensor:
  """Move axes to new positions; the other axes keep their order.

  Parameters
  ----------
  a : array_like
  source, destination : int or sequence of ints
      the same number of each, no repeats

  Returns
  -------
  Tensor
  """
  t = asarray(a)
  src, dst = _axes(source, t.ndim, "moveaxis", "source"), _axes(destination, t.ndim, "moveaxis", "destination")
  if len(src) != len(dst):
    raise ValueError(f"moveaxis: `source` and `destination` arguments must have the same number of elements, "
                     f"got {source} and {destination} (shape {t.shape})")
  order = [k for k in range(t.ndim) if k not in src]
  for d, s in sorted(zip(dst, src)): order.insert(d, s)
  return t.transpose(order)


def swapaxes(a, axis1: int, axis2: int) -> Tensor:
  """Interchange two axes.

  Parameters
  ----------
  a : array_like
  axis1, axis2 : int

  Returns
  -------
  Tensor
  """
  t = asarray(a)
  return t.swapaxes(_axis(axis1, t.ndim, "swapaxes"), _axis(axis2, t.ndim, "swapaxes"))


def transpose(a, axes=None) -> Tensor:
  """Permute the axes (reverse them when axes is None).

  Parameters
  ----------
  a : array_like
  axes : sequence of ints, optional
      a permutation of range(ndim), negative allowed

  Returns
  -------
  Tensor
  """
  return asarray(a).transpose(None if axes is None else tuple(axes))


def permute_dims(x, /, axes) -> Tensor:
  """Permute the axes (the Array API's transpose).

  Parameters
  ----------
  x : array_like
  axes : sequence of ints

  Returns
  -------
  Tensor
  """
  return asarray(x).transpose(tuple(axes))


def reshape(a, shape, order: str = "C") -> Tensor:
  """The same elements in row-major order with another shape (one -1 is inferred).

  Parameters
  ----------
  a : array_like
  shape : int or sequence of ints
  order : 'C', optional

  Returns
  -------
  Tensor
  """
  return asarray(a).reshape(shape, order=order)


def ravel(a) -> Tensor:
  """The elements as a 1-D Tensor, in row-major order.

  Parameters
  ----------
  a : array_like

  Returns
  -------
  Tensor
  """
  return asarray(a).reshape(-1)


def squeeze(a, axis=None) -> Tensor:
  """Remove size-1 axes (all of them, or the given ones, which must have size 1).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional

  Returns
  -------
  Tensor
  """
  return asarray(a).squeeze(axis)


def broadcast_to(array, shape) -> Tensor:
  """array broadcast to shape (a view: no data moves).

  Parameters
  ----------
  array : array_like
  shape : int or sequence of ints
      non-negative, compatible with array's shape

  Returns
  -------
  Tensor
  """
  t, s = asarray(array), _plain(shape)
  s = tuple(operator.index(x) for x in (s if np.ndim(s) else (s,)))
  if any(x < 0 for x in s):
    raise ValueError(f"broadcast_to: all elements of broadcast shape must be non-negative, got {s}")
  return t.broadcast_to(s)


def broadcast_arrays(*args) -> tuple[Tensor, ...]:
  """The arguments broadcast against each other.

  Parameters
  ----------
  *args : array_like

  Returns
  -------
  tuple of Tensor
  """
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


def atleast_1d(*arys):
  """Each input with at least one dimension (0-d becomes (1,)).

  Parameters
  ----------
  *arys : array_like

  Returns
  -------
  Tensor, or tuple of Tensor for several inputs
  """
  return _atleast(arys, 1)


def atleast_2d(*arys):
  """Each input with at least two dimensions ((n,) becomes (1, n)).

  Parameters
  ----------
  *arys : array_like

  Returns
  -------
  Tensor, or tuple of Tensor for several inputs
  """
  return _atleast(arys, 2)


def atleast_3d(*arys):
  """Each input with at least three dimensions ((n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)).

  Parameters
  ----------
  *arys : array_like

  Returns
  -------
  Tensor, or tuple of Tensor for several inputs
  """
  return _atleast(arys, 3)


def matrix_transpose(x, /) -> Tensor:
  """Swap the last two axes.

  Parameters
  ----------
  x : array_like
      at least 2-D

  Returns
  -------
  Tensor
  """
  return asarray(x).mT
