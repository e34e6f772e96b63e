"""NumPy's rules that need no Tensor: dtypes from dtype-likes, the accumulation dtypes of reductions, broadcasting
of shapes, normalized axes and the limits of a shape. Every Tensor module builds on these (tensor.py re-exports
the ones other modules import from it)."""
from __future__ import annotations
import operator
import numpy as np
from numpy.exceptions import AxisError
from minitensor.backend.dtype import DType, dtypes

MAX_DIMS = 64
# the accumulator of a float reduction: one step wider, rounded once at the end
WIDER = {dtypes.float16: dtypes.float32, dtypes.float32: dtypes.float64, dtypes.complex64: dtypes.complex128}
# NumPy's float16 products (matmul, dot, einsum, vecdot) multiply and sum in float32 and round once at the end
PRODUCT_ACC = {dtypes.float16: dtypes.float32}


def _dtype(d) -> DType:
  """A DType from anything NumPy accepts as a dtype; TypeError for unsupported kinds."""
  if isinstance(d, DType): return d
  try: nd = np.dtype(d)
  except TypeError as e: raise TypeError(f"data type {d!r} not understood") from e
  return dtypes.from_numpy(nd)


def _acc_dtype(kind: str, d: DType) -> DType:
  """NumPy's result dtype of sum/prod/mean over d (asked of NumPy once per kind and dtype)."""
  if (r := _ACC.get((kind, d))) is None:
    nd = d.np
    if kind in ("sum", "prod"): r = dtypes.from_numpy((np.sum if kind == "sum" else np.prod)(np.zeros(1, nd)).dtype)
    else: r = dtypes.from_numpy(np.mean(np.zeros(1, nd)).dtype)
    _ACC[(kind, d)] = r
  return r


_ACC: dict[tuple[str, DType], DType] = {}


def broadcast_shapes(*shapes: tuple[int, ...], op: str = "broadcast_shapes") -> tuple[int, ...]:
  """NumPy's broadcast of shapes; ValueError naming the op and the shapes when they do not broadcast.

  Parameters
  ----------
  *shapes : tuples of ints
  op : str
      The operation named in errors.

  Returns
  -------
  tuple of ints
  """
  if len(shapes) == 2:                                  # the common case, without the general loop's sets
    a, b = shapes
    if a == b and type(a) is tuple: return a
    if len(a) != len(b): a, b = (1,) * (len(b) - len(a)) + tuple(a), (1,) * (len(a) - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
      if x == y or y == 1: out.append(x)
      elif x == 1: out.append(y)
      else: break
    else: return tuple(out)
  n = max((len(s) for s in shapes), default=0)
  out = []
  for k in range(n):
    sizes = {s[len(s) - n + k] for s in shapes if len(s) - n + k >= 0} - {1}
    if len(sizes) > 1:
      raise ValueError(f"{op}: operands could not be broadcast together with shapes "
                       f"{' '.join(str(tuple(s)) for s in shapes)}")
    out.append(sizes.pop() if sizes else 1)
  return tuple(out)


def normalize_axes(axis, ndim: int, op: str) -> tuple[int, ...]:
  """axis (None, int or sequence, negative allowed) as sorted non-negative ints; AxisError when out of range."""
  if axis is None: return tuple(range(ndim))
  if type(axis) is int and -ndim <= axis < ndim: return (axis % ndim,)      # the common case
  axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
  out = []
  for a in axes:
    try: a = operator.index(a)
    except TypeError: raise TypeError(f"{op}: axis must be an integer or a tuple of integers, got {a!r}") from None
    if not -ndim <= a < ndim: raise AxisError(a, ndim, f"{op}")
    out.append(a % ndim)
  if len(set(out)) != len(out): raise ValueError(f"{op}: duplicate value in 'axis': {axis}")
  return tuple(sorted(out))


def check_shape(shape: tuple[int, ...], op: str) -> None:
  """NumPy's limit of at most 64 dimensions, at the call. (Its size limit, a byte size below 2**63, is the IR's:
  every node that makes a shape checks it, uop.fits.)"""
  if len(shape) > MAX_DIMS:
    raise ValueError(f"{op}: maximum supported dimension for a Tensor is {MAX_DIMS}, found {len(shape)}")
