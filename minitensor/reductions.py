"""Reductions of Tensor: sum prod max min mean var std any all argmax argmin, with NumPy's result dtypes and
its where= and initial= keywords (the masked-out elements are replaced by the reduction's identity, a WHERE, so
the result stays lazy). The module functions of the same names (minitensor.sum, ...) are reduction_functions.py's.

A reduction permutes the reduced axes last and records one REDUCE over them. Float16 and float32 accumulate one
step wider and round once at the end (NumPy accumulates float32 in float32: README, Limitations)."""
from __future__ import annotations
import builtins
import math
import numpy as np
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.uop import Ops, UOp
from minitensor.backend.uop import prod as _prod
from minitensor.creation import full
from minitensor.numpy_rules import WIDER, _acc_dtype, _dtype, normalize_axes
from minitensor.tensor import Tensor, apply_ufunc, asarray, tensor_methods
from minitensor.tensor import where as where_

_IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True}


@tensor_methods
class _Reductions:
  def _reduce(self, op: Ops, axis, keepdims: bool, name: str, acc: DType | None = None) -> Tensor:
    # as NumPy's ufunc.reduce: axis 0 or -1 of a 0-d array reduces nothing (mean raises)
    if self.ndim == 0 and name != "mean" and isinstance(axis, (int, np.integer)) and axis in (0, -1): axis = None
    u = self.uop
    shape, n = u.shape, len(u.shape)
    axes = normalize_axes(axis, n, name)
    if acc is not None: u = u.cast(acc)
    if op in (Ops.MAX, Ops.MIN) and builtins.any(shape[a] == 0 for a in axes):
      raise ValueError(f"zero-size array to reduction operation {name} which has no identity "
                       f"(shape {shape}, axis {axis})")
    if u.dtype.is_bool: op = {Ops.ADD: Ops.MAX, Ops.MUL: Ops.MIN}.get(op, op)      # NumPy's bool add/multiply: or/and
    # (the reduced axes moved last: over the last axes already, the identity permutation builds no node)
    r = u.permute(tuple([k for k in range(n) if k not in axes] + list(axes))).reduce(op, len(axes))
    if keepdims: r = r.reshape(tuple(1 if k in axes else s for k, s in enumerate(shape)))
    return Tensor(r)

  def sum(self, axis=None, dtype=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
    """Sum over `axis` with NumPy's result dtype: ints accumulate in int64/uint64; float16 is accumulated in
    float32 and float32 in float64, rounded once at the end (NumPy accumulates float32 in float32: README,
    Limitations).

    Parameters
    ----------
    axis : None, int or tuple of ints, optional
        Negative counts from the end; None: all axes.
    dtype : dtype-like, optional
    keepdims : bool, default False
    initial : scalar, optional
        Joins the reduction.
    where : array_like of bool, optional
        Reduce only these elements.

    Returns
    -------
    Tensor
    """
    if where is not True or initial is not None:
      return _masked(self, "sum", where, initial, dict(axis=axis, dtype=dtype, keepdims=keepdims))
    out = _dtype(dtype) if dtype is not None else _acc_dtype("sum", self.uop.dtype)
    acc = WIDER.get(out, out)
    return Tensor(self._reduce(Ops.ADD, axis, keepdims, "sum", acc).uop.cast(out))

  def prod(self, axis=None, dtype=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
    """Product over `axis`, with NumPy's accumulation dtype.

    Parameters
    ----------
    axis : None, int or tuple of ints, optional
        Negative counts from the end; None: all axes.
    dtype : dtype-like, optional
    keepdims : bool, default False
    initial : scalar, optional
        Joins the reduction.
    where : array_like of bool, optional
        Reduce only these elements.

    Returns
    -------
    Tensor
    """
    if where is not True or initial is not None:
      return _masked(self, "prod", where, initial, dict(axis=axis, dtype=dtype, keepdims=keepdims))
    out = _dtype(dtype) if dtype is not None else _acc_dtype("prod", self.uop.dtype)
    return Tensor(self._reduce(Ops.MUL, axis, keepdims, "prod", WIDER.get(out, out)).uop.cast(out))

  def max(self, axis=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
    """Maximum over `axis` (NaN propagates; ValueError for an empty reduction without initial).

    Parameters
    ----------
    axis : None, int or tuple of ints, optional
        Negative counts from the end; None: all axes.
    keepdims : bool, default False
    initial : scalar, optional
        Joins the reduction; needed with where=.
    where : array_like of bool, optional
        Reduce only these elements.

    Returns
    -------
    Tensor
    """
    if where is not True or initial is not None:
      return _masked(self, "max", where, initial, dict(axis=axis, keepdims=keepdims))
    return self._reduce(Ops.MAX, axis, keepdims, "maximum")

  def min(self, axis=None, keepdims: bool = False, *, initial=None, where=True) -> Tensor:
    """Minimum over `axis` (NaN propagates; ValueError for an empty reduction without initial).

    Parameters
    ----------
    axis : None, int or tuple of ints, optional
        Negative counts from the end; None: all axes.
    keepdims : bool, default False
    initial : scalar, optional
        Joins the reduction; needed with where=.
    where : array_like of bool, optional
        Reduce only these elements.

    Returns
    -------
    Tensor
    """
    if where is not True or initial is not None:
      return _masked(self, "min", where, initial, dict(axis=axis, keepdims=keepdims))
    return self._reduce(Ops.MIN, axis, keepdims, "minimum")

  def _count(self, axis) -> int: return _prod(self.shape[a] for a in normalize_axes(axis, self.ndim, "mean"))

  def mean(self, axis=None, dtype=None, keepdims: bool = False, *, where=True) -> Tensor:
    """Mean over `axis` (float64 for integer input); with an integer dtype the sum is divided in float64 and
    truncated, as NumPy does.

    Parameters
    ----------
    axis : None, int or tuple of ints, optional
        Negative counts from the end; None: all axes.
    dtype : dtype-like, optional
    keepdims : bool, default False
    where : array_like of bool, optional
        Reduce only these elements.

    Returns
    -------
    Tensor
    """
    if where is not True: return _masked(self, "mean", where, None, dict(axis=axis, dtype=dtype, keepdims=keepdims))
    out = _dtype(dtype) if dtype is not None else _acc_dtype("mean", self.uop.dtype)
    s = self._reduce(Ops.ADD, axis, keepdims, "mean", WIDER.get(out, out)).uop
    if s.dtype.kind not in "fc": s = s.cast(dtypes.float64)
    return Tensor((s / s.const_like(float(self._count(axis)))).cast(out))   # 0 / 0: NaN for an empty mean

  def var(self, axis=None, dtype=None, ddof: float = 0, keepdims: bool = False, *, correction=None,
          where=True) -> Tensor:
    """Variance over `axis`: the sum of squared deviations from the mean divided by max(N - ddof, 0), in NumPy's
    steps (an integer dtype truncates the mean, the squares and the result).

    Parameters
    ----------
    axis : None, int or tuple of ints, optional
        Negative counts from the end; None: all axes.
    dtype : dtype-like, optional
    ddof : float, default 0
    keepdims : bool, default False
    correction : float, optional
        The Array API's name of ddof.
    where : array_like of bool, optional
        Reduce only these elements.

    Returns
    -------
    Tensor
    """
    if where is not True:
      return _masked(self, "var", where, None, dict(axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                                                    correction=correction))
    if correction is not None: ddof = correction
    if self.uop.dtype.is_complex:     # NumPy: the mean of |x - mean|^2 = re^2 + im^2, in the real dtype
      d = self - self.mean(axis, dtype, keepdims=True)       # a real dtype: the mean of the real parts, as NumPy
      sq = d.real * d.real + d.imag * d.imag
      r = sq.sum(axis, keepdims=keepdims) / float(builtins.max(self._count(axis) - ddof, 0))
      return r if dtype is None else r.astype(dtype)
    out = _dtype(dtype) if dtype is not None else _acc_dtype("mean", self.uop.dtype)
    acc = WIDER.get(out, out)
    d = (Tensor(self.uop.cast(acc)) if acc.is_float else self) - self.mean(axis, acc, keepdims=True)
    s = (d * d).sum(axis, acc, keepdims).uop
    if not s.dtype.is_float: s = s.cast(dtypes.float64)
    return Tensor((s / s.const_like(float(builtins.max(self._count(axis) - ddof, 0)))).cast(out))

  def std(self, axis=None, dtype=None, ddof: float = 0, keepdims: bool = False, *, correction=None,
          where=True) -> Tensor:
    """Standard deviation over `axis`: the square root of var.

    Parameters
    ----------
    axis : None, int or tuple of ints, optional
        Negative counts from the end; None: all axes.
    dtype : dtype-like, optional
    ddof : float, default 0
    keepdims : bool, default False
    correction : float, optional
        The Array API's name of ddof.
    where : array_like of bool, optional
        Reduce only these elements.

    Returns
    -------
    Tensor
    """
    if where is not True:
      return _masked(self, "std", where, None, dict(axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                                                    correction=correction))
    v = self.var(axis, dtype, ddof, keepdims, correction=correction)
    if v.uop.dtype.is_float: return Tensor(UOp(Ops.SQRT, (v.uop,)))
    # NumPy converts the square root of a scalar back to an integer or bool dtype, but cannot cast an array's
    if v.ndim: raise TypeError(f"std: the square root of {v.dtype} cannot be cast back to {v.dtype}; use a float dtype")
    return Tensor(UOp(Ops.SQRT, (v.uop.cast(dtypes.float64),)).cast(v.uop.dtype))

  def any(self, axis=None, keepdims: bool = False, *, where=True) -> Tensor:
    """Whether any element along `axis` is true.

    Parameters
    ----------
    axis : None, int or tuple of ints, optional
        Negative counts from the end; None: all axes.
    keepdims : bool, default False
    where : array_like of bool, optional
        Reduce only these elements.

    Returns
    -------
    Tensor
    """
    if where is not True: return _masked(self, "any", where, None, dict(axis=axis, keepdims=keepdims))
    return _any_all(self, Ops.MAX, axis, keepdims, "any") if self.size else _full_bool(self, axis, keepdims, False)

  def all(self, axis=None, keepdims: bool = False, *, where=True) -> Tensor:
    """Whether every element along `axis` is true.

    Parameters
    ----------
    axis : None, int or tuple of ints, optional
        Negative counts from the end; None: all axes.
    keepdims : bool, default False
    where : array_like of bool, optional
        Reduce only these elements.

    Returns
    -------
    Tensor
    """
    if where is not True: return _masked(self, "all", where, None, dict(axis=axis, keepdims=keepdims))
    return _any_all(self, Ops.MIN, axis, keepdims, "all") if self.size else _full_bool(self, axis, keepdims, True)

  def argmax(self, axis=None, out=None, *, keepdims: bool = False) -> Tensor:
    """Index of the first maximum (or first NaN) along `axis` (None: of the flattened Tensor), int64.

    Parameters
    ----------
    axis : int or None
    out : Tensor or ndarray, optional
        Receives the result: the result's shape, a dtype that casts to int64 safely (NumPy's rule); an
        ndarray is written with the realized values. Returned.
    keepdims : bool, default False

    Returns
    -------
    Tensor (or out)
    """
    return _into(_arg(self, axis, keepdims, Ops.MAX), out, "argmax")

  def argmin(self, axis=None, out=None, *, keepdims: bool = False) -> Tensor:
    """Index of the first minimum (or first NaN) along `axis` (None: of the flattened Tensor), int64.

    Parameters
    ----------
    axis : int or None
    out : Tensor or ndarray, optional
        Receives the result: the result's shape, a dtype that casts to int64 safely (NumPy's rule); an
        ndarray is written with the realized values. Returned.
    keepdims : bool, default False

    Returns
    -------
    Tensor (or out)
    """
    return _into(_arg(self, axis, keepdims, Ops.MIN), out, "argmin")


def _any_all(t: Tensor, op: Ops, axis, keepdims: bool, name: str) -> Tensor:
  """any (op MAX) or all (MIN) of t as bool, reduced in the lanes _bool_lanes chooses (the same values: 0 and 1)."""
  b = t.astype(bool)
  if (lanes := _bool_lanes(b.uop)) is None: return b._reduce(op, axis, keepdims, name)
  return Tensor(b._reduce(op, axis, keepdims, name, lanes).uop.cast(dtypes.bool))


_LANE_INT = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}


def _bool_lanes(u: UOp) -> DType | None:
  """The integer dtype an any/all of bool value u reduces in: as wide as the widest data u is computed from (the
  operands of its comparisons; at most 8 bytes), so the reduction's lanes are as wide as its loads. Bool lanes
  beside float64 loads vectorize poorly: any(isnan(x)) over 40,000 float64 took 27 us in bool lanes and 5 us in
  int64 lanes (gcc 12, Sapphire Rapids). None when u is bool data itself (or deeper than the walk looks)."""
  width, todo, seen = 1, [u], 0
  while todo and seen < 64:
    x = todo.pop()
    seen += 1
    if x.dtype is not dtypes.bool: width = builtins.max(width, builtins.min(x.dtype.itemsize, 8))
    else: todo.extend(x.src)
  return _LANE_INT.get(width)


def _full_bool(t: Tensor, axis, keepdims: bool, v: bool) -> Tensor:
  axes = normalize_axes(axis, t.ndim, "any/all")
  shape = tuple(1 if k in axes else s for k, s in enumerate(t.shape)) if keepdims else \
    tuple(s for k, s in enumerate(t.shape) if k not in axes)
  return full(shape, v, dtype=bool)


def _arg(t: Tensor, axis, keepdims: bool, op: Ops) -> Tensor:
  """argmax/argmin: the first index where the extreme (or the first NaN) is."""
  name = "argmax" if op is Ops.MAX else "argmin"
  if axis is not None and not isinstance(axis, (int, np.integer)):
    raise TypeError(f"{name}: axis must be an integer or None, got {type(axis).__name__}")
  if axis is None or t.ndim == 0:        # NumPy flattens a 0-d array here
    r = _arg(t.reshape(-1), 0 if axis is None else axis, False, op)
    return r.reshape((1,) * t.ndim) if keepdims else r
  (ax,) = normalize_axes(axis, t.ndim, name)
  if t.shape[ax] == 0: raise ValueError(f"attempt to get {name} of an empty sequence (shape {t.shape}, axis {axis})")
  m = t._reduce(op, ax, True, name)
  hit = (t == m) | apply_ufunc(np.isnan, t) if t.uop.dtype.kind in "fc" else (t == m)
  n = t.shape[ax]
  iota = Tensor(_iota(n).reshape(tuple(n if k == ax else 1 for k in range(t.ndim))))
  return where_(hit, iota, n).min(axis=ax, keepdims=keepdims)


def _into(r: Tensor, out, name: str):
  """r, or r written into out (argmax's and argmin's out=, with NumPy's checks)."""
  if out is None: return r
  if not isinstance(out, (Tensor, np.ndarray)):
    raise TypeError(f"{name}: out must be an array, got {type(out).__name__}")
  if out.shape != r.shape:
    raise ValueError(f"output array does not match result of np.{name} (out shape {out.shape}, result {r.shape})")
  if not np.can_cast(out.dtype, np.int64, "safe"):
    raise TypeError(f"{name}: Cannot cast array data from {out.dtype!r} to dtype('int64') according to the rule 'safe'")
  if isinstance(out, Tensor): out[...] = r
  else: np.copyto(out, r._value(), casting="unsafe")
  return out


IOTA_BUFFER = 1 << 12      # an index up to this length is one buffer; a longer one is made of two of about sqrt(n)


def _iota(n: int) -> UOp:
  """0, 1, ..., n - 1 (int64) without an n-element array: i = q * c + r read from a buffer of the q * c and one of
  the r (about sqrt(n) elements each), broadcast and flattened, so the reduction that reads it fuses it (argmax
  materialized an int64 index, 16 bytes an element with its copy)."""
  if n <= IOTA_BUFFER: return asarray(np.arange(n, dtype=np.int64)).uop
  c = math.isqrt(n - 1) + 1
  q = -(-n // c)
  hi = asarray(np.arange(0, q * c, c, dtype=np.int64)).uop.reshape((q, 1)).expand((q, c))
  lo = asarray(np.arange(c, dtype=np.int64)).uop.reshape((1, c)).expand((q, c))
  return (hi + lo).reshape((q * c,)).shrink(((0, n),))


# ---------------------------------------------------------------------- where= and initial=
def _masked(t: Tensor, kind: str, where, initial, args: dict) -> Tensor:
  """The reduction `kind` of t with args (its other arguments) and NumPy's where= mask and initial= value."""
  op = {"max": "maximum", "min": "minimum"}.get(kind, kind)      # the name in NumPy's messages
  m = None if where is True else _mask(t, where, op)
  if kind in ("max", "min"): return _extreme(t, kind, op, m, initial, args["axis"], args["keepdims"])
  if kind in ("mean", "var", "std"): return _moment(t, kind, m, args)
  r = getattr(t if m is None else where_(m, t, _IDENTITY[kind]), kind)(**args)
  return r if initial is None else apply_ufunc(np.add if kind == "sum" else np.multiply, r, initial).astype(r.dtype)


def _mask(t: Tensor, where, op: str) -> Tensor:
  m = asarray(where)
  if m.dtype != np.bool_: m = m.astype(bool)
  if m.shape != t.shape:
    try: m = m.broadcast_to(t.shape)
    except ValueError:
      raise ValueError(f"{op}: where= of shape {m.shape} does not broadcast to the array's shape {t.shape}") from None
  return m


def _empty_result(t: Tensor, axis, keepdims: bool, op: str) -> tuple[int, ...] | None:
  """The result shape when the reduced axes hold no element (None otherwise)."""
  axes = normalize_axes(axis, t.ndim, op)
  if not builtins.any(t.shape[a] == 0 for a in axes): return None
  return tuple(1 if k in axes else s for k, s in enumerate(t.shape) if keepdims or k not in axes)


def _extreme(t: Tensor, kind: str, op: str, m, initial, axis, keepdims: bool) -> Tensor:
  """max/min with initial (and a mask): the masked-out elements read as initial, which joins the result."""
  if initial is None:
    raise ValueError(f"reduction operation '{op}' does not have an identity, so to use a where mask one has to "
                     "specify 'initial'")
  init = asarray(np.asarray(initial).astype(t.dtype))          # NumPy casts initial first (-2 is True for bool)
  if (shape := _empty_result(t, axis, keepdims, op)) is not None: return full(shape, init, t.dtype)
  x = t if m is None else where_(m, t, init)
  return apply_ufunc(np.maximum if kind == "max" else np.minimum, getattr(x, kind)(axis, keepdims), init)


def _moment(t: Tensor, kind: str, m: Tensor, args: dict) -> Tensor:
  """mean/var/std over the masked elements: sums in float64 divided by the mask's counts, rounded once to the
  result dtype."""
  axis, keepdims, dtype = args["axis"], args["keepdims"], args.get("dtype")
  out = np.dtype(dtype) if dtype is not None else np.dtype(np.float64) if t.dtype.kind in "biu" else t.dtype
  acc = np.promote_types(out, np.float64)
  x, n = where_(m, t.astype(acc), 0), m.sum(axis, keepdims=keepdims)
  if kind == "mean": return (x.sum(axis, keepdims=keepdims) / n).astype(out)
  ddof = args["correction"] if args["correction"] is not None else args["ddof"]
  d = where_(m, x - x.sum(axis, keepdims=True) / m.sum(axis, keepdims=True), 0)
  v = ((d * d).sum(axis, keepdims=keepdims) / apply_ufunc(np.maximum, n - ddof, 0)).astype(out)
  return v if kind == "var" else apply_ufunc(np.sqrt, v)
