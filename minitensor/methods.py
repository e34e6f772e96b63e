"""The ndarray habits of Tensor that live outside tensor.py: methods that call the module functions, Python's
format() and round(), DLPack export, and the `where=`/`initial=` keywords of the reductions.

    t.fill t.clip t.dot t.explain
    t.cumsum t.cumprod t.argsort t.nonzero t.repeat t.take t.trace t.diagonal t.ptp t.searchsorted
                          the module functions of the same names (lazy or realizing, as those are)
    t.sort()              in place, as ndarray.sort: the sorted values are written into t (views see them)
    t.tobytes()           the realized bytes (C order, or Fortran with order="F")
    format(t, spec)       NumPy's: a spec formats a size-1 Tensor's value (f"{t.sum():.2f}"), "" prints t
    round(t)              the Python int nearest a size-1 Tensor (half to even); round(t, n): mt.round(t, n)
    t.__dlpack__          the realized, read-only buffer itself for a DLPack >= 1.0 consumer (zero copy; the
                          capsule says read-only); a copy for an older consumer, which cannot be told
    t.to_device("cpu")    t (the only device)
    where=, initial=      sum prod max min mean var std any all: NumPy's meanings; the masked-out elements are
                          replaced by the reduction's identity (WHERE), so the result stays lazy
"""
from __future__ import annotations
import functools
import inspect
import numpy as np

_CPU = 1     # DLPack's kDLCPU


class NdarrayMethods:
  """Methods of ndarray that Tensor gets from the module functions (mixed into Tensor)."""
  __slots__ = ()

  def fill(self, value) -> None:
    """Set every element to value (in place: aliases and views see it), as ndarray.fill."""
    self[...] = value

  def clip(self, min=None, max=None):
    """Values limited to [min, max]: minitensor.clip."""
    from minitensor.tensor import clip
    return clip(self, min, max)

  def dot(self, other):
    """numpy.dot with another operand: minitensor.dot."""
    from minitensor.tensor import dot
    return dot(self, other)

  def explain(self):
    """The schedule that realizing this Tensor runs (minitensor.explain)."""
    from minitensor.inspect import explain
    return explain(self)

  def cumsum(self, axis: int | None = None, dtype=None):
    """Cumulative sum along axis (flattened when None): minitensor.cumsum."""
    from minitensor.extra import cumsum
    return cumsum(self, axis, dtype)

  def cumprod(self, axis: int | None = None, dtype=None):
    """Cumulative product along axis (flattened when None): minitensor.cumprod."""
    from minitensor.extra import cumprod
    return cumprod(self, axis, dtype)

  def sort(self, axis: int = -1, kind=None, order=None) -> None:
    """Sort in place along axis, as ndarray.sort (stable; NaN last); returns None. mt.sort(t) returns a copy."""
    from minitensor.sorting import sort
    if order is not None: raise ValueError("sort: order= needs a structured dtype, which minitensor does not have")
    if axis is None: raise TypeError("sort: axis=None cannot sort in place (use minitensor.sort(t, axis=None))")
    self[...] = sort(self, axis)

  def argsort(self, axis: int | None = -1, kind=None, order=None, *, stable=None):
    """The indices that sort along axis (stable; computes now): minitensor.argsort."""
    from minitensor.sorting import argsort
    if order is not None: raise ValueError("argsort: order= needs a structured dtype, which minitensor does not have")
    return argsort(self, axis)

  def nonzero(self) -> tuple:
    """Indices of the nonzero elements, one int64 Tensor per axis (computes now): minitensor.nonzero."""
    from minitensor.sorting import nonzero
    return nonzero(self)

  def searchsorted(self, v, side: str = "left", sorter=None):
    """Insertion points of v in this sorted 1-D Tensor: minitensor.searchsorted."""
    from minitensor.sorting import searchsorted
    return searchsorted(self, v, side, sorter)

  def repeat(self, repeats, axis: int | None = None):
    """Each element repeated (flattened when axis is None): minitensor.repeat."""
    from minitensor.manipulation import repeat
    return repeat(self, repeats, axis)

  def take(self, indices, axis: int | None = None, mode: str = "raise"):
    """Elements at indices along axis (flattened when None): minitensor.take."""
    from minitensor.extra import take
    return take(self, indices, axis, mode)

  def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None):
    """The sum along a diagonal: minitensor.trace."""
    from minitensor.extra import trace
    return trace(self, offset, axis1, axis2, dtype)

  def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """A diagonal, as a read-only view: minitensor.diagonal."""
    from minitensor.extra import diagonal
    return diagonal(self, offset, axis1, axis2)

  def ptp(self, axis=None, keepdims: bool = False):
    """max - min along axis (numpy.ptp; ndarray.ptp of NumPy 1)."""
    return ptp(self, axis, keepdims)

  def conjugate(self):
    """The complex conjugate (minitensor.conj)."""
    return self.conj()

  def tobytes(self, order: str = "C") -> bytes:
    """The raw bytes of the value, in C (row-major) or "F" (column-major) order."""
    return self._value().tobytes(order)

  def __format__(self, spec: str) -> str:
    return format(self._value(element=self.size == 1), spec)

  def __round__(self, ndigits: int | None = None):
    if ndigits is not None:
      from minitensor.tensor import round as round_
      return round_(self, ndigits)
    if self.size != 1: raise TypeError(f"round: only a size-1 Tensor rounds to a Python int, got shape {self.shape}")
    return round(self._scalar("int"))

  # ------------------------------------------------------------------ DLPack and devices
  def __dlpack__(self, *, stream=None, max_version: tuple[int, int] | None = None, dl_device=None,
                 copy: bool | None = None):
    """The value as a DLPack capsule: the realized, read-only buffer itself (no copy) for a consumer of DLPack
    1.0 or later; a copy for an older one (it cannot be told that the buffer is read-only), or when copy=True.
    NumPy's exporter does the rest, with its errors (BufferError for another device or for copy=False to an
    older consumer)."""
    a = np.asarray(self)                               # read-only view of the realized buffer
    if (max_version is None or max_version[0] < 1) and copy is None: a, copy = np.array(a, copy=True), False
    return a.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

  def __dlpack_device__(self) -> tuple[int, int]: return (_CPU, 0)

  def to_device(self, device, /, *, stream=None):
    """This Tensor on `device`: itself for "cpu" (the only device); ValueError otherwise."""
    if device != "cpu": raise ValueError(f"to_device: minitensor has one device, 'cpu'; got {device!r}")
    if stream is not None: raise ValueError(f"to_device: the CPU has no streams, got stream={stream!r}")
    return self


def ptp(a, axis=None, keepdims: bool = False):
  """The range max - min along axis (numpy.ptp; integers wrap as NumPy's).

  Parameters
  ----------
  a : array_like
  axis : None, int or tuple of ints, optional
  keepdims : bool, optional

  Returns
  -------
  Tensor
  """
  from minitensor.tensor import asarray
  t = asarray(a)
  return t.max(axis, keepdims) - t.min(axis, keepdims)


# ---------------------------------------------------------------------- where= and initial= of the reductions
_IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True}
# kind: (whether NumPy has initial= for it, the name in NumPy's messages)
_SPEC = {"sum": (True, "sum"), "prod": (True, "prod"), "max": (True, "maximum"), "min": (True, "minimum"),
         "mean": (False, "mean"), "var": (False, "var"), "std": (False, "std"), "any": (False, "any"),
         "all": (False, "all")}


def _mask(t, where, op: str):
  from minitensor.tensor import asarray
  m = asarray(where)
  if m.dtype != np.bool_: m = m.astype(bool)
  if m.shape != t.shape:
    try: m = m.broadcast_to(t.shape)
    except ValueError:
      raise ValueError(f"{op}: where= of shape {m.shape} does not broadcast to the array's shape {t.shape}") from None
  return m


def _empty_result(t, axis, keepdims: bool, op: str) -> tuple[int, ...] | None:
  """The result shape when the reduced axes hold no element (None otherwise)."""
  from minitensor.tensor import normalize_axes
  axes = normalize_axes(axis, t.ndim, op)
  if not any(t.shape[a] == 0 for a in axes): return None
  return tuple(1 if k in axes else s for k, s in enumerate(t.shape) if keepdims or k not in axes)


def _extreme(t, method, kind: str, op: str, m, initial, axis, keepdims: bool):
  """max/min with initial (and a mask): the masked-out elements read as initial, which joins the result."""
  from minitensor.tensor import apply_ufunc, asarray, full, where
  if initial is None:
    raise ValueError(f"reduction operation '{op}' does not have an identity, so to use a where mask one has to "
                     "specify 'initial'")
  init = asarray(np.asarray(initial).astype(t.dtype))          # NumPy casts initial first (-2 is True for bool)
  if (shape := _empty_result(t, axis, keepdims, op)) is not None: return full(shape, init, t.dtype)
  x = t if m is None else where(m, t, init)
  return apply_ufunc(np.maximum if kind == "max" else np.minimum, method(x, axis, keepdims), init)


def _moment(t, kind: str, m, args: dict):
  """mean/var/std over the masked elements: sums in float64 divided by the mask's counts, rounded once to the
  result dtype."""
  from minitensor.tensor import apply_ufunc, where
  axis, keepdims, dtype = args["axis"], args["keepdims"], args.get("dtype")
  out = np.dtype(dtype) if dtype is not None else np.dtype(np.float64) if t.dtype.kind in "biu" else t.dtype
  acc = np.promote_types(out, np.float64)
  x, n = where(m, t.astype(acc), 0), m.sum(axis, keepdims=keepdims)
  if kind == "mean": return (x.sum(axis, keepdims=keepdims) / n).astype(out)
  ddof = args["correction"] if args["correction"] is not None else args["ddof"]
  d = where(m, x - x.sum(axis, keepdims=True) / m.sum(axis, keepdims=True), 0)
  v = ((d * d).sum(axis, keepdims=keepdims) / apply_ufunc(np.maximum, n - ddof, 0)).astype(out)
  return v if kind == "var" else apply_ufunc(np.sqrt, v)


def _masked(kind: str, method):
  """`method` (a reduction of Tensor) with NumPy's where= (and initial= where NumPy has it)."""
  has_initial, op = _SPEC[kind]

  @functools.wraps(method)
  def reduce(self, *args, where=True, **kwargs):
    initial = kwargs.pop("initial", None) if has_initial else None
    if where is True and initial is None: return method(self, *args, **kwargs)
    from minitensor.tensor import apply_ufunc
    from minitensor.tensor import where as where_
    b = inspect.signature(method).bind(self, *args, **kwargs)
    b.apply_defaults()
    m = None if where is True else _mask(self, where, op)
    if kind in ("max", "min"):
      return _extreme(self, method, kind, op, m, initial, b.arguments["axis"], b.arguments["keepdims"])
    if kind in ("mean", "var", "std"): return _moment(self, kind, m, b.arguments)
    r = method(self if m is None else where_(m, self, _IDENTITY[kind]), *args, **kwargs)
    return r if initial is None else apply_ufunc(np.add if kind == "sum" else np.multiply, r, initial).astype(r.dtype)

  sig = inspect.signature(method)
  extra = [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=d)
           for p, d in ((("initial", None),) if has_initial else ()) + (("where", True),)]
  reduce.__signature__ = sig.replace(parameters=[p for p in sig.parameters.values()] + extra)
  doc = method.__doc__ or ""
  extra_doc = "where : array_like of bool, optional (reduce only these elements)\n"
  if has_initial: extra_doc = "initial : scalar, optional (joins the reduction; max/min with where= need it)\n" + \
    extra_doc
  reduce.__doc__ = (doc.replace("\nReturns\n", extra_doc + "\nReturns\n", 1) if "\nReturns\n" in doc
                    else doc + "\n\n" + extra_doc)
  return reduce


def add_where(cls: type) -> None:
  """Give cls's reductions NumPy's where= (and initial=) keywords."""
  for kind in _SPEC: setattr(cls, kind, _masked(kind, getattr(cls, kind)))
