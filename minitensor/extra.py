"""More NumPy functions, lazily: scans, differences, triangles and diagonals, gathers, grids, products, closeness.

    cumsum cumprod cumulative_sum   one SCAN (a kernel of its own, backend/scan.py): each prefix is the previous
                                    one combined with the next element, NumPy's sequential order, so floats round,
                                    overflow (inf stays inf) and propagate NaN as NumPy's do, bit for bit;
                                    integers wrap as NumPy's do
    diff                            SHRINK windows subtracted (not_equal for bool), n times
    tril triu                       WHERE on a mask of iotas (column - row against k)
    diagonal trace diag             movement only: the (n, n) block viewed as n*n, PADded to n*(n + 1), read
                                    as column 0 of (n, n + 1); diag of a vector the same steps backwards
    take take_along_axis            NumPy's checks on the (realized) indices, then one gather (INDEX)
    meshgrid outer inner vecdot     RESHAPE + EXPAND, a multiply, and tensordot or one reduce
    isclose allclose                NumPy's formula |a - b| <= atol + rtol * |b|, with its dtype rules
"""
from __future__ import annotations
import operator
import numpy as np
from minitensor import views as V
from minitensor.backend.uop import Ops, UOp, prod
from minitensor.creation import full
from minitensor.manipulation import _axis, concatenate
from minitensor.numpy_rules import PRODUCT_ACC, _acc_dtype, _dtype, broadcast_shapes
from minitensor.products import tensordot
from minitensor.tensor import Tensor, apply_ufunc, asarray, where

__all__ = ["cumsum", "cumprod", "cumulative_sum", "diff", "tril", "triu", "diagonal", "trace", "diag", "take",
           "take_along_axis", "meshgrid", "outer", "inner", "vecdot", "isclose", "allclose"]

_PY_SCALARS = (bool, int, float)


# ---------------------------------------------------------------------- scans
def _accumulate(a, axis, dtype, kind: str) -> Tensor:
  t = asarray(a)
  if axis is None: t, axis = t.reshape(-1), 0
  elif t.ndim == 0: t = t.reshape(1)          # NumPy scans a 0-d array as its 1-element ravel (any axis 0 or -1)
  ax = _axis(axis, t.ndim, f"cum{kind}")
  d = _dtype(dtype) if dtype is not None else _acc_dtype(kind, t.uop.dtype)
  op = {("sum", False): Ops.ADD, ("prod", False): Ops.MUL, ("sum", True): Ops.MAX,
        ("prod", True): Ops.MIN}[kind, d.is_bool]
  return Tensor(t.uop.cast(d).scan(op, ax))


def cumsum(a, axis: int | None = None, dtype=None) -> Tensor:
  """Cumulative sum along an axis (of the flattened array when axis is None).

  Parameters
  ----------
  a : array_like
  axis : int, optional
  dtype : data-type, optional
      Accumulation and result dtype; default NumPy's (int64 for smaller integers and bool, uint64 for
      smaller unsigned, floats keep theirs). A bool dtype accumulates with OR.

  Returns
  -------
  Tensor
  """
  return _accumulate(a, axis, dtype, "sum")


def cumprod(a, axis: int | None = None, dtype=None) -> Tensor:
  """Cumulative product along an axis (of the flattened array when axis is None).

  Parameters
  ----------
  a : array_like
  axis : int, optional
  dtype : data-type, optional
      Accumulation and result dtype; default NumPy's (as cumsum). A bool dtype accumulates with AND.

  Returns
  -------
  Tensor
  """
  return _accumulate(a, axis, dtype, "prod")


def cumulative_sum(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False) -> Tensor:
  """Cumulative sum (the Array API's function): axis may be omitted only for arrays of at most one dimension.

  Parameters
  ----------
  x : array_like
  axis : int, optional
  dtype : data-type, optional
      As cumsum.
  include_initial : bool, optional
      Start with the sum of no elements (zero), so the axis grows by one.

  Returns
  -------
  Tensor
  """
  return cumulative(x, axis, dtype, include_initial, "sum")


def cumulative(x, axis: int | None, dtype, include_initial: bool, kind: str) -> Tensor:
  """The Array API's cumulative_sum (kind "sum") and cumulative_prod ("prod"): axis may be omitted only for arrays
  of at most one dimension; include_initial pads the axis with the empty sum (0) or product (1) in front."""
  name = f"cumulative_{kind}"
  t = asarray(x)
  if axis is None:
    if t.ndim > 1:
      raise ValueError(f"{name}: axis is required for arrays with more than one dimension, got shape {t.shape}")
    t, axis = t.reshape(-1), 0
  r = _accumulate(t, axis, dtype, kind)
  if not include_initial: return r
  ax = _axis(axis, r.ndim, name)
  return Tensor(r.uop.pad(tuple((1, 0) if k == ax else (0, 0) for k in range(r.ndim)), 0 if kind == "sum" else 1))


def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None) -> Tensor:
  """The n-th discrete difference along axis: out[i] = a[i + 1] - a[i], applied n times (bool: a[i + 1] != a[i]).

  Parameters
  ----------
  a : array_like
      At least one dimension.
  n : int, optional
      Non-negative; 0 returns a.
  axis : int, optional
  prepend, append : array_like, optional
      Joined to a along axis first (a scalar is broadcast to one slice).

  Returns
  -------
  Tensor
      The axis is n shorter (empty once n reaches its length).
  """
  t = asarray(a)
  n = operator.index(n)
  if n < 0: raise ValueError(f"diff: order must be non-negative but got {n}")
  if t.ndim == 0: raise ValueError("diff requires input that is at least one dimensional")
  ax = _axis(axis, t.ndim, "diff")
  if n == 0: return t
  slab = t.shape[:ax] + (1,) + t.shape[ax + 1:]
  ends = [None if v is None else asarray(v) for v in (prepend, append)]
  ends = [e if e is None or e.ndim else e.broadcast_to(slab) for e in ends]
  if any(e is not None for e in ends): t = concatenate([e for e in (ends[0], t, ends[1]) if e is not None], axis=ax)
  for _ in range(min(n, t.shape[ax])):
    hi, lo = (t[(slice(None),) * ax + (s,)] for s in (slice(1, None), slice(None, -1)))
    t = apply_ufunc(np.not_equal if t.uop.dtype.is_bool else np.subtract, hi, lo)
  return t


# ---------------------------------------------------------------------- triangles and diagonals
def _tri(m, k: int, lower: bool, name: str) -> Tensor:
  t = asarray(m)
  if t.ndim == 0: raise ValueError(f"{name}: input must have at least one dimension, got shape {t.shape}")
  r, c = t.shape[-2:] if t.ndim > 1 else (t.shape[0],) * 2
  rows, cols = (asarray(np.arange(x, dtype=np.int64)) for x in (r, c))
  d = cols.reshape(1, c) - rows.reshape(r, 1)
  return where(d <= k if lower else d >= k, t, full((), 0, t.dtype))


def tril(m, k: int = 0) -> Tensor:
  """The lower triangle of the last two axes (elements above the k-th diagonal set to zero).

  Parameters
  ----------
  m : array_like
      At least one dimension; a 1-D m is treated as the rows of a square matrix, as NumPy does.
  k : int, optional
      Diagonal offset: positive keeps more diagonals above the main one.

  Returns
  -------
  Tensor
  """
  return _tri(m, operator.index(k), True, "tril")


def triu(m, k: int = 0) -> Tensor:
  """The upper triangle of the last two axes (elements below the k-th diagonal set to zero).

  Parameters
  ----------
  m : array_like
      At least one dimension (1-D as in tril).
  k : int, optional
      Diagonal offset.

  Returns
  -------
  Tensor
  """
  return _tri(m, operator.index(k), False, "triu")


def _main_diagonal(u: UOp) -> UOp:
  """(..., n, n) -> (..., n), by movement: flat index i*(n + 1) is element (i, i)."""
  *lead, n, _ = u.shape
  lead, keep = tuple(lead), tuple((0, m) for m in lead)
  flat = u.reshape(lead + (n * n,)).pad(((0, 0),) * len(lead) + ((0, n),))
  return flat.reshape(lead + (n, n + 1)).shrink(keep + ((0, n), (0, 1))).reshape(lead + (n,))


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
  """The offset-th diagonal of the (axis1, axis2) planes, as a last axis (NumPy's diagonal).

  Parameters
  ----------
  a : array_like
      At least two dimensions.
  offset : int, optional
      Positive: above the main diagonal (towards higher axis2 indices); negative: below.
  axis1, axis2 : int, optional
      Two different axes.

  Returns
  -------
  Tensor
      The other axes in order, then the diagonal.
  """
  t = asarray(a)
  if t.ndim < 2: raise ValueError(f"diagonal: diag requires an array of at least two dimensions, got shape {t.shape}")
  a1, a2, k = _axis(axis1, t.ndim, "diagonal"), _axis(axis2, t.ndim, "diagonal"), operator.index(offset)
  if a1 == a2: raise ValueError(f"diagonal: axis1 and axis2 cannot be the same (both {a1})")
  perm = tuple(x for x in range(t.ndim) if x not in (a1, a2)) + (a1, a2)
  *lead, r, c = (t.shape[x] for x in perm)
  m = max(0, min(r, c - k) if k >= 0 else min(r + k, c))
  r0, c0 = (0, k) if k >= 0 else (-k, 0)
  if m == 0: return full(tuple(lead) + (0,), 0, t.dtype)
  st = V.strides_of(t)
  # a read-only view, as NumPy's: it follows writes into t
  return V.readonly_view(t, lambda u: _main_diagonal(u.permute(perm).shrink(tuple((0, x) for x in lead)
                                                                            + ((r0, r0 + m), (c0, c0 + m)))),
                         tuple(st[x] for x in perm[:-2]) + (st[a1] + st[a2],))


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None) -> Tensor:
  """The sum along a diagonal (of every (axis1, axis2) plane).

  Parameters
  ----------
  a : array_like
      At least two dimensions.
  offset, axis1, axis2 : int, optional
      As diagonal.
  dtype : data-type, optional
      As sum (default NumPy's: int64 for smaller integers).

  Returns
  -------
  Tensor
  """
  return diagonal(a, offset, axis1, axis2).sum(axis=-1, dtype=dtype)


def diag(v, k: int = 0) -> Tensor:
  """A diagonal of a matrix, or a square matrix with a vector on a diagonal.

  Parameters
  ----------
  v : array_like
      1-D: the values to place; 2-D: the matrix to read.
  k : int, optional
      Diagonal offset (positive above the main diagonal).

  Returns
  -------
  Tensor
      For 1-D v of length n the (n + |k|, n + |k|) matrix; for 2-D v the k-th diagonal.
  """
  t, k = asarray(v), operator.index(k)
  if t.ndim == 2: return diagonal(t, k)
  if t.ndim != 1: raise ValueError(f"diag: input must be 1- or 2-d, got shape {t.shape}")
  n = t.shape[0]
  if n == 0: return full((abs(k), abs(k)), 0, t.dtype)
  u = t.uop.reshape((n, 1)).pad(((0, 0), (0, n))).reshape((n * (n + 1),)).shrink(((0, n * n),)).reshape((n, n))
  return Tensor(u.pad(((0, k), (k, 0)) if k >= 0 else ((-k, 0), (0, -k))))


# ---------------------------------------------------------------------- gathers
def _int_indices(indices) -> np.ndarray:
  """Indices as NumPy takes them: integers, bools and floats cast to int64; an empty list is int64."""
  i = np.asarray(indices)
  if isinstance(indices, (list, tuple)) and i.size == 0: return i.astype(np.int64)
  if i.dtype.kind not in "biuf": raise TypeError(f"take: indices must be integers, got dtype {i.dtype}")
  return i.astype(np.int64) if i.dtype.kind in "bf" else i


def take(a, indices, axis: int | None = None, mode: str = "raise") -> Tensor:
  """Elements of a at indices along axis (of the flattened array when axis is None).

  Parameters
  ----------
  a : array_like
  indices : array_like of int
      Realized now; negative indices count from the end.
  axis : int, optional
  mode : {"raise", "wrap", "clip"}, optional
      Out-of-range indices: IndexError, taken modulo the axis length, or clipped to it.

  Returns
  -------
  Tensor
      a.shape[:axis] + indices.shape + a.shape[axis + 1:].
  """
  t, idx = asarray(a), _int_indices(indices)
  if axis is None: t, axis = t.reshape(-1), 0
  ax = _axis(axis, t.ndim, "take")
  n = t.shape[ax]
  if mode not in ("raise", "wrap", "clip"):
    raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
  shape = t.shape[:ax] + idx.shape + t.shape[ax + 1:]
  if n == 0 and prod(shape): raise IndexError("take: cannot do a non-empty take from an empty axes.")
  bad = (idx < -n) | (idx >= n)
  if mode == "raise" and prod(t.shape[:ax]) and bad.any():   # NumPy checks once per leading index: none, none checked
    raise IndexError(f"take: index {idx[bad].flat[0]} is out of bounds for axis {ax} with size {n}")
  if not prod(shape): return full(shape, 0, t.dtype)
  if mode == "wrap": idx = idx % n
  if mode == "clip": idx = np.clip(idx, 0, n - 1)
  return t[(slice(None),) * ax + (idx,)]


def take_along_axis(arr, indices, axis: int | None = -1) -> Tensor:
  """out[..., i, ...] = arr[..., indices[..., i, ...], ...] along axis; the other axes broadcast.

  Parameters
  ----------
  arr : array_like
  indices : array_like of int
      Same number of dimensions as arr (1-D when axis is None); realized now.
  axis : int or None, optional
      None: arr is flattened first.

  Returns
  -------
  Tensor
  """
  t, idx = asarray(arr), np.asarray(indices)
  if idx.dtype.kind not in "iu":
    raise IndexError(f"take_along_axis: `indices` must be an integer array, got dtype {idx.dtype}")
  if axis is None: t, axis = t.reshape(-1), 0
  if idx.ndim != t.ndim:
    raise ValueError(f"take_along_axis: `indices` and `arr` must have the same number of dimensions, got shapes "
                     f"{idx.shape} and {t.shape}")
  ax = _axis(axis, t.ndim, "take_along_axis")
  iotas = (np.arange(n).reshape((1,) * k + (n,) + (1,) * (t.ndim - k - 1)) for k, n in enumerate(t.shape))
  return t[tuple(idx if k == ax else i for k, i in enumerate(iotas))]


# ---------------------------------------------------------------------- grids and products
def meshgrid(*xi, sparse: bool = False, indexing: str = "xy") -> tuple[Tensor, ...]:
  """Coordinate arrays of the grid spanned by 1-D coordinate vectors (views: nothing is copied).

  Parameters
  ----------
  *xi : array_like
      Flattened to 1-D.
  sparse : bool, optional
      Return the vectors reshaped to broadcast against each other instead of broadcast out.
  indexing : {"xy", "ij"}, optional
      "xy" (Cartesian) swaps the first two output axes, as NumPy does.

  Returns
  -------
  tuple of Tensor
  """
  if indexing not in ("xy", "ij"):
    raise ValueError(f"meshgrid: valid values for `indexing` are 'xy' and 'ij', got {indexing!r}")
  ts = [asarray(x).reshape(-1) for x in xi]
  nd = len(ts)
  out = [t.reshape((1,) * k + (-1,) + (1,) * (nd - k - 1)) for k, t in enumerate(ts)]
  if indexing == "xy" and nd > 1: out = [t.swapaxes(0, 1) for t in out]
  if sparse: return tuple(out)
  shape = broadcast_shapes(*(t.shape for t in out))
  return tuple(t.broadcast_to(shape) for t in out)


def outer(a, b) -> Tensor:
  """out[i, j] = a.ravel()[i] * b.ravel()[j].

  Parameters
  ----------
  a, b : array_like

  Returns
  -------
  Tensor
      Shape (a.size, b.size), NumPy's multiply dtype (bool: AND).
  """
  x, y = asarray(a), asarray(b)
  return apply_ufunc(np.multiply, x.reshape(-1, 1), y.reshape(1, -1))


def inner(a, b) -> Tensor:
  """The sum product over the last axes (a plain product when either is 0-d).

  Parameters
  ----------
  a, b : array_like
      The last axes must have the same length.

  Returns
  -------
  Tensor
      Shape a.shape[:-1] + b.shape[:-1].
  """
  x, y = asarray(a), asarray(b)
  if x.ndim == 0 or y.ndim == 0: return apply_ufunc(np.multiply, x, y)
  if x.shape[-1] != y.shape[-1]:
    raise ValueError(f"inner: shapes {x.shape} and {y.shape} not aligned: {x.shape[-1]} (dim {x.ndim - 1}) != "
                     f"{y.shape[-1]} (dim {y.ndim - 1})")
  return tensordot(x, y, ([x.ndim - 1], [y.ndim - 1]))


def vecdot(x1, x2, /, *, axis: int = -1) -> Tensor:
  """The dot product of vectors along axis (the other axes broadcast), x1 conjugated (the Array API's vecdot).

  Parameters
  ----------
  x1, x2 : array_like
      The same length along axis.
  axis : int, optional
      An axis of the broadcast shape (negative counts from the end).

  Returns
  -------
  Tensor
      The broadcast shape without axis, in NumPy's result dtype (bool: OR of ANDs; integers wrap).
  """
  a, b = asarray(x1), asarray(x2)
  nd = max(a.ndim, b.ndim)
  ax = _axis(axis, nd, "vecdot") - nd
  if -ax > min(a.ndim, b.ndim) or a.shape[ax] != b.shape[ax]:
    raise ValueError(f"vecdot: shapes {a.shape} and {b.shape} differ along axis {axis}")
  p = apply_ufunc(np.multiply, apply_ufunc(np.conjugate, a) if a.uop.dtype.is_complex else a, b)
  if (w := PRODUCT_ACC.get(p.uop.dtype)) is not None:
    return apply_ufunc(np.multiply, a.astype(w.np), b.astype(w.np)).sum(axis=ax).astype(p.dtype)
  return p.any(axis=ax) if p.uop.dtype.is_bool else p.sum(axis=ax, dtype=p.dtype)


# ---------------------------------------------------------------------- closeness
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False) -> Tensor:
  """Elementwise |a - b| <= atol + rtol * |b| for finite b, else a == b (NumPy's formula, not symmetric).

  Parameters
  ----------
  a, b : array_like or Python scalar
      b is converted to at least a float dtype (NumPy's result_type(b, 1.0)); Python scalars stay weak.
  rtol, atol : float or array_like, optional
  equal_nan : bool, optional
      Whether NaN in both is close.

  Returns
  -------
  Tensor
      bool, of the broadcast shape.
  """
  x = a if isinstance(a, _PY_SCALARS) else asarray(a)
  y = b if isinstance(b, _PY_SCALARS) else asarray(b)
  y = y.astype(np.result_type(y.dtype, 1.0)) if isinstance(y, Tensor) else float(y) if isinstance(x, Tensor) \
    else asarray(float(y))
  rtol, atol = (v if isinstance(v, _PY_SCALARS) else asarray(v) for v in (rtol, atol))
  ay = abs(y) if isinstance(y, float) else apply_ufunc(np.absolute, y)
  r = apply_ufunc(np.less_equal, apply_ufunc(np.absolute, x - y), atol + rtol * ay) & apply_ufunc(np.isfinite, y) \
    | apply_ufunc(np.equal, x, y)
  return r | (apply_ufunc(np.isnan, x) & apply_ufunc(np.isnan, y)) if equal_nan else r


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False) -> bool:
  """Whether isclose holds everywhere (computes now).

  Parameters
  ----------
  a, b : array_like or Python scalar
  rtol, atol : float or array_like, optional
  equal_nan : bool, optional

  Returns
  -------
  bool
  """
  return bool(isclose(a, b, rtol, atol, equal_nan).all())
