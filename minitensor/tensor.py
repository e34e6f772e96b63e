"""The lazy Tensor: NumPy semantics in the shape world.

A Tensor is a handle on a UOp graph. Operations validate their arguments (NumPy's exception types, the op
and the shapes in the message), promote dtypes as NumPy 2 does, and record UOps; nothing runs until a value
is asked for (`.numpy()`, `np.asarray(t)`, `float(t)`, `repr(t)`). Then the graph is realized by the backend
and the Tensor keeps the result: its graph becomes a load of that buffer, so later graphs reuse it.

Movement never copies: reshape, transpose, slicing, broadcasting, flip and pad are index maps. Realized data
is always C-contiguous.

This module holds the class's core (state, realization, conversions, casts) and the functions the core and the
families build on (asarray, full, apply_ufunc, binop, where, realize). Every other method lives with its family, a
module that imports this one and adds its methods with `@tensor_methods` (defined below):

    operators.py     + - * / // % ** & | ^ << >> < <= > >= == != unary - + ~ abs, and the in-place forms
    movement.py      reshape transpose swapaxes squeeze expand_dims broadcast_to flip .T .mT ...
    reductions.py    sum prod max min mean var std any all argmax argmin (with where= and initial=)
    products.py      @ and dot
    indexing.py      t[i] and t[i] = v
    interop.py       NumPy's protocols __array_ufunc__ and __array_function__
    array_api.py     __array_namespace__
    methods.py       the other ndarray habits (fill, clip, round, sort, cumsum, take, DLPack, ...)

`minitensor/__init__.py` imports every family, and importing any module of the package runs it first, so the
class is complete before any of its code is called. The core reaches the families only through the class
(`self @ x`, `self[i]`, `t.nonzero()`), never by importing them: the package's import graph has no cycles.
"""
from __future__ import annotations
import warnings
from types import FunctionType
from typing import Any
import numpy as np
from minitensor import errstate as E
from minitensor import live as L
from minitensor import tracing as T
from minitensor import ufuncs as U
from minitensor import views as V
from minitensor.backend.dtype import dtypes
from minitensor.backend.leaves import array_of, borrow, buffer_of, is_borrowed
from minitensor.backend.uop import Ops, UOp, prod
from minitensor.numpy_rules import _dtype, broadcast_shapes, check_shape, normalize_axes  # noqa: F401 (fft, linalg)

# (bound once: Tensor.__new__ runs for every operation, W9)
_HOLD, _ROOTS, _TRACING, _errstate, _ERR_DEFAULT = L.HOLD, L.ROOTS, T.ACTIVE, E.STATE.get, E.DEFAULT
_new, _writes_lock, _writes_unlock = object.__new__, V.WRITES.acquire, V.WRITES.release
_RESHAPE, _BUFFER = Ops.RESHAPE, Ops.BUFFER     # (Enum members read through Ops cost 90 ns on Python 3.11: uop.py)


def _lazy(u: UOp, cls: type | None = None) -> Tensor:
  """Tensor(u): a lazy root of class cls (Tensor when None) whose value is graph u. The operators build their
  results with it directly (type()'s call of a Python __new__ costs about 80 ns, a tenth of an operation: W9)."""
  t = _new(cls or Tensor)
  t._uop, t._data, t._link, t._version, t._writes = u, None, None, 0, 0
  if u.depth > _HOLD: _ROOTS.add(t)
  if _errstate() is not _ERR_DEFAULT: E.note(u)
  if _TRACING[0]: T.born(t)
  return t


class Tensor:
  """A lazy n-dimensional array with NumPy's API; values are computed by minitensor's compiler on demand."""
  # _link: how a view derives from its root (views.py), None for a root; _version counts a root's writes and
  # realizations (views compare it); _writes counts the writes pending since the root's last realization
  __slots__ = ("_uop", "_data", "_link", "_version", "_writes", "__weakref__")
  __array_priority__ = 100.0

  # constructed in __new__ (no __init__), so a subclass in NumPy's style (its own __new__ making a view of its class,
  # ndarray.view(cls)) is not reset by an __init__ Python would call after it
  def __new__(cls, data: Any = None, dtype=None):
    if type(data) is UOp: return _lazy(data, cls)
    self = object.__new__(cls)
    t = asarray(data, dtype=dtype)
    self._uop, self._data = (t._uop, t._data) if t._link is None else (t.uop, None)
    self._link, self._version, self._writes = None, 0, 0
    if _TRACING[0]: T.born(self)
    return self

  @classmethod
  def _of(cls, a: np.ndarray) -> Tensor:
    """A realized root holding the C-contiguous ndarray a (its graph leaf is made when first needed)."""
    t = object.__new__(cls)
    t._uop, t._data, t._link, t._version, t._writes = None, a, None, 0, 0
    if T.ACTIVE[0]: T.born(t)
    return t

  @property
  def uop(self) -> UOp:
    """The graph of this tensor's current value. A realized tensor is a load of its buffer, made when first
    used in a graph (so a result that is only read costs no node)."""
    if self._link is not None: V.sync(self)
    if (u := self._uop) is None:
      with V.WRITES:                     # (not in the middle of another thread's write or realization)
        if (u := self._uop) is None: u = self._uop = buffer_of(self._data).reshape(self._data.shape)
    return u

  # ------------------------------------------------------------------ attributes
  @property
  def shape(self) -> tuple[int, ...]:
    """The size of each axis."""
    return self._data.shape if self._data is not None else self._uop.shape
  @property
  def dtype(self) -> np.dtype:
    """The element type, as a NumPy dtype."""
    return self._data.dtype if self._data is not None else self._uop.dtype.np
  @property
  def ndim(self) -> int:
    """The number of axes."""
    return len(self.shape)
  @property
  def size(self) -> int:
    """The number of elements."""
    return prod(self.shape)
  @property
  def itemsize(self) -> int:
    """The bytes of one element."""
    return self.dtype.itemsize
  @property
  def nbytes(self) -> int:
    """The bytes of all elements (size * itemsize)."""
    return self.size * self.itemsize
  @property
  def device(self) -> str:
    """The device the values live on: always "cpu"."""
    return "cpu"

  # ------------------------------------------------------------------ realization
  def realize(self) -> Tensor:
    """Compute the value now (unless computed already) and keep it.

    Returns
    -------
    Tensor
        self
    """
    realize(self)
    return self

  def _realized(self) -> np.ndarray | None:
    if self._link is not None: V.sync(self)
    if self._data is not None: return self._data
    u = self._uop
    if u.op is _RESHAPE and u.src[0].op is _BUFFER: u = u.src[0]
    # a user's memory (asarray(copy=False)) is only the borrowing root's own value: results never alias it
    # (a placeholder leaf, jit's or grad's stand-in for an input, has no data)
    return array_of(u).reshape(self.shape) if u.op is _BUFFER and u.data is not None and not is_borrowed(u.data) \
      else None

  def numpy(self) -> np.ndarray:
    """The value as a fresh, writable ndarray (a copy).

    Returns
    -------
    numpy.ndarray
    """
    return np.array(self._value(), copy=True)

  def _value(self, element: bool = False) -> np.ndarray:
    """The realized value. element: for an element read, which first computes a small lazy value the element
    is taken from whole (kept on its graph node), so reading its other elements needs no compile."""
    if self._link is None and (u := self._uop) is not None and u.op is not _RESHAPE and u.op is not _BUFFER \
       and not element:    # a lazy root (what _realized would say): _realize_held's common case and _commit inlined
      if (a := u.data) is None:      # (else realized before: hash-consing gave an equal graph its node)
        a = _realize([u])[0] if not L.WRITTEN.refs and u.depth <= L.DEEP else _realize_held([u])[0]
      _writes_lock()                 # (their two calls took 0.2 us of W9's 7)
      try:
        if self._uop is u:
          self._uop, self._data = None, a
          if L.WRITTEN.refs: L.WRITTEN.discard(self)
          self._version, self._writes = self._version + 1, 0
      finally: _writes_unlock()
    elif (a := self._realized()) is None:
      if element: realize_base(self.uop)
      if self._link is None: _commit(self, u := self._uop, a := _realize_held([u])[0])
      else: a = realize(self)[0]
    return a

  def __array__(self, dtype=None, copy=None) -> np.ndarray:
    """np.asarray(t): the realized buffer itself, as a read-only view (so it cannot change t behind its
    back); np.array(t) or copy=True: a writable copy."""
    a = self._value()
    if dtype is not None and np.dtype(dtype) != a.dtype:
      if copy is False:
        raise ValueError(f"Unable to avoid copy while creating an array as requested: {a.dtype} -> {np.dtype(dtype)}")
      return a.astype(dtype)
    if copy: return np.array(a, copy=True)
    v = a.view()
    v.setflags(write=False)
    return v

  def tolist(self):
    """The value as nested Python lists of Python scalars (no compile for a realized Tensor).

    Returns
    -------
    list or scalar
    """
    return self._value(element=True).tolist()
  def item(self, *args):
    """One element as a Python scalar.

    Parameters
    ----------
    *args : int or tuple of ints, optional
        A flat or multi-dimensional index; none for size 1.

    Returns
    -------
    int, float or bool
    """
    if not args and self.size != 1:
      raise ValueError(f"can only convert an array of size 1 to a Python scalar, got shape {self.shape}")
    return self._value(element=True).item(*args)
  def __float__(self) -> float: return float(self._scalar("float"))
  def __int__(self) -> int: return int(self._scalar("int"))
  def __complex__(self) -> complex: return complex(self._scalar("complex"))
  def __bool__(self) -> bool:
    if self.size != 1:
      raise ValueError(f"The truth value of a Tensor with more than one element is ambiguous (shape {self.shape}); "
                       "use .any() or .all()")
    return bool(self._value(element=True).reshape(()))
  def __index__(self) -> int:
    if not (self.uop.dtype.is_int or self.uop.dtype.is_bool) or self.ndim != 0:
      raise TypeError(f"only integer scalar tensors can be converted to an index, got {self.dtype} {self.shape}")
    return int(self._value(element=True))
  def _scalar(self, what: str):
    if self.size != 1: raise TypeError(f"only size-1 tensors can be converted to Python {what}, got shape {self.shape}")
    return self._value(element=True).reshape(()).item()
  def __len__(self) -> int:
    if self.ndim == 0: raise TypeError("len() of unsized object")
    return self.shape[0]
  def __iter__(self):
    if self.ndim == 0: raise TypeError("iteration over a 0-d tensor")
    return (self[i] for i in range(self.shape[0]))
  def __repr__(self) -> str:
    r = np.array_repr(self._value())                  # NumPy's own text (shape of empty arrays, dtype), renamed
    r = "Tensor(" + r[len("array("):].replace("\n" + " " * len("array("), "\n" + " " * len("Tensor("))
    return r if "dtype=" in r else r[:-1] + f", dtype={self.dtype})"
  def __str__(self) -> str: return str(self._value())
  def __hash__(self): return id(self)
  def copy(self) -> Tensor:
    """A new Tensor with the same values that no view or write of self affects (and that affects none)."""
    if self._link is None and self._data is not None and not is_borrowed(self._data): return Tensor._of(self._data)
    return Tensor(self.uop)
  def __copy__(self) -> Tensor: return self.copy()
  def __deepcopy__(self, memo) -> Tensor: return self.copy()
  def __reduce__(self):
    # the realized buffer itself (pickle protocol 5 sends it out of band, uncopied); a lazy Tensor realizes
    # once and keeps the result, so pickling it again computes nothing. A user's memory (copy=False) is copied.
    a = self._value()
    return (_unpickle, (a.copy() if is_borrowed(a) else a,))


  def astype(self, dtype, copy: bool = True) -> Tensor:
    """The values converted to dtype with C conversion rules (as NumPy's astype); complex to a real dtype keeps
    the real part and warns with NumPy's ComplexWarning.

    Parameters
    ----------
    dtype : dtype-like
    copy : bool
        Accepted; Tensors are immutable.

    Returns
    -------
    Tensor
    """
    d = _dtype(dtype)
    if self.uop.dtype.is_complex and not d.is_complex and not d.is_bool:
      warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning,
                    stacklevel=2)
    return Tensor(self.uop.cast(d))

  def conj(self) -> Tensor:
    """The complex conjugate (the same values for a real dtype).

    Returns
    -------
    Tensor
    """
    return apply_ufunc(np.conjugate, self)
  conjugate = conj
  @property
  def real(self) -> Tensor:
    """The real part: a view (writes into it change self, as NumPy's); self itself for a real dtype."""
    return V.part(self, False) if self.uop.dtype.is_complex else self
  @real.setter
  def real(self, value) -> None: self.real[...] = value
  @property
  def imag(self) -> Tensor:
    """The imaginary part: a view (writes into it change self); read-only zeros for a real dtype, as NumPy's."""
    if self.uop.dtype.is_complex: return V.part(self, True)
    return V.readonly_view(self, lambda u: U._broadcast(UOp.const(0, u.dtype), u.shape), V.strides_of(self))
  @imag.setter
  def imag(self, value) -> None: self.imag[...] = value


def tensor_methods(family: type) -> type:
  """Class decorator of a family of Tensor methods: the functions and properties defined in the body of
  `family` become Tensor's, under their names. The family class is only a namespace (never instantiated or
  inherited). A name Tensor already has is an error, so no family silently replaces another's method."""
  for name, v in vars(family).items():
    if not isinstance(v, (FunctionType, property)): continue
    if name in vars(Tensor): raise TypeError(f"Tensor.{name} is defined twice (again in {family.__module__})")
    f = v.fget if isinstance(v, property) else v
    if f.__name__ == name: f.__qualname__ = f"Tensor.{name}"
    setattr(Tensor, name, v)
  return family


# ---------------------------------------------------------------------- creation
def asarray(obj, dtype=None, copy: bool | None = None) -> Tensor:
  """A Tensor of obj (ndarray, nested sequence, Python or NumPy scalar, Tensor).

  The values are those obj has now: an ndarray is copied (one pass over its memory), so changing it later
  changes no Tensor and no lazy result. `copy=False` wraps a C-contiguous, native-endian ndarray of a supported
  dtype without a copy instead: the Tensor is then a view of that memory (`np.asarray(t)` shows its current
  values), and results computed from it read it when they are realized; use it only for arrays you do not
  change while such results are pending.

  Parameters
  ----------
  obj : array_like or Tensor
  dtype : dtype-like, optional (default: NumPy's: float64 for Python floats, int64 for ints)
  copy : bool, optional (None: copy a user's array, not a Tensor; True: always copy; False: never copy, and
      ValueError when a copy is needed)

  Returns
  -------
  Tensor
  """
  if isinstance(obj, Tensor):
    if dtype is not None and _dtype(dtype).np != obj.dtype:
      if copy is False:
        raise ValueError(f"asarray: unable to avoid a copy converting {obj.dtype} to {np.dtype(dtype)} (copy=False)")
      return obj.astype(dtype)
    return obj.copy() if copy else obj
  if type(obj) is int and not -2 ** 63 <= obj < 2 ** 64:
    raise OverflowError(f"asarray: Python int {obj} too large to convert to a 64-bit integer")
  if isinstance(obj, (str, bytes)) or obj is None:
    raise TypeError(f"asarray: cannot make a Tensor from {type(obj).__name__} {obj!r}")
  fresh = False       # whether `a` is an array made here, which nobody else can change
  if isinstance(obj, np.ndarray): a = obj
  elif hasattr(obj, "__array__") or hasattr(obj, "__array_interface__"): a = np.asarray(obj)
  else:
    try: a, fresh = np.array(obj), True
    except ValueError as e: raise ValueError(f"asarray: {e} (ragged nested sequences are not supported)") from None
  if a.dtype.kind in "OUSVMm":
    raise TypeError(f"asarray: unsupported dtype {a.dtype} (supported: {', '.join(d.name for d in dtypes.all)})")
  want = _dtype(dtype) if dtype is not None else \
    dtypes.from_numpy(a.dtype.newbyteorder("=") if not a.dtype.isnative else a.dtype)
  if copy is False:
    if a.dtype != want.np or not a.flags.c_contiguous:
      why = "it is not C-contiguous" if not a.flags.c_contiguous else f"it is not {want.name}"
      raise ValueError(f"asarray: unable to avoid a copy of a {a.dtype} array of shape {a.shape}: {why} (copy=False)")
    return Tensor._of(borrow(a))
  if fresh and a.dtype == want.np and a.flags.c_contiguous and not copy: return Tensor._of(a)
  return Tensor._of(np.array(a, dtype=want.np, order="C", copy=True))


array = asarray


def _unpickle(a: np.ndarray) -> Tensor:
  """Tensor.__reduce__'s inverse: the unpickled array (a fresh one, nobody else's) held without a copy."""
  return Tensor._of(a) if a.flags.c_contiguous and a.dtype.isnative else asarray(a)


# ---------------------------------------------------------------------- ufuncs on Tensors
def foreign(x) -> bool:
  """Another library's array (dask, xarray, pandas, ...): it has its own __array_ufunc__, which NumPy's ufuncs
  must ask instead of computing on its values."""
  return getattr(type(x), "__array_ufunc__", None) is not None and not isinstance(x, (Tensor, np.ndarray, np.generic))


_NO_UFUNC = object()
_SCALAR_PRIORITY = -1000000.0      # NumPy's NPY_SCALAR_PRIORITY: the priority of an object that states none


def defers(other, inplace: bool = False) -> bool:
  """Whether a Tensor's binary operator returns NotImplemented to `other`, so that Python asks other's reflected
  operator: NumPy's rule for ndarray (binop_override.h). A type with `__array_ufunc__ = None` opts out of ufuncs
  and gets the operator (not in place); a type with another __array_ufunc__ gets it through the ufunc (binop);
  a type without one gets it when its `__array_priority__` is higher than the Tensor's (and it is no Tensor)."""
  t = type(other)
  if t is Tensor or t in _PY or other is None or t is np.ndarray: return False
  if (attr := getattr(t, "__array_ufunc__", _NO_UFUNC)) is not _NO_UFUNC: return not inplace and attr is None
  if isinstance(other, Tensor): return False
  return Tensor.__array_priority__ < getattr(other, "__array_priority__", _SCALAR_PRIORITY)


def binop(ufunc: np.ufunc, a, b, reflected: bool = False):
  """`a <op> b` for Tensor's operators (the Tensor is b when reflected), with NumPy's deferral rules: NotImplemented
  where `defers` says so (forward operators only, as NumPy's), NumPy's ufunc for another library's array (so its
  __array_ufunc__ decides: `t + dask_array` is a dask array), else apply_ufunc."""
  other = a if reflected else b
  if type(other) is not Tensor and type(other) not in _PY:
    if not reflected and defers(other): return NotImplemented
    if foreign(other): return ufunc(a, b)
  return apply_ufunc(ufunc, a, b)


_PY = U.PY_SCALARS
_FAST = U.LOOPS       # (ufunc, each operand's DType or Python type) -> its loop (ufuncs.loop): apply_ufunc's fast paths
_DIRECT = U.DIRECT    # (ufunc, DType, DType) -> the one ALU op of its loop (ufuncs.loop)


def _operand_type(x):
  """What NumPy's type resolution should see for an operand: a dtype, or the weak Python type."""
  if isinstance(x, Tensor): return x.dtype
  if type(x) is bool: return np.dtype(bool)   # resolve_dtypes takes no weak bool; bool is the lowest kind anyway
  if type(x) in _PY: return type(x)
  return np.asarray(x).dtype


def _resolved(ufunc: np.ufunc, operands: tuple, dtype: np.dtype | None) -> tuple:
  types = U.weak_types(operands)     # only Python scalars: NumPy gives them their default dtypes first
  return U.resolved(ufunc, types if types is not None else tuple(_operand_type(x) for x in operands), dtype)


def resolve_ufunc(ufunc: np.ufunc, operands: tuple, dtype: np.dtype | None = None) -> tuple[np.dtype, ...]:
  """NumPy's loop dtypes (inputs..., output) for these operands, with `dtype=` as NumPy's keyword (the loop
  whose output is dtype, inputs cast 'same_kind'); TypeError as NumPy raises it."""
  return _resolved(ufunc, operands, dtype)[0]


def apply_ufunc(ufunc: np.ufunc, *operands, dtype=None) -> Tensor:
  """ufunc(*operands) as a lazy Tensor, with NumPy's dtype rules (and its `dtype=` keyword) and broadcasting; the
  UOps come from ufuncs.TABLE."""
  if dtype is None:        # the common cases (a Tensor with a Tensor or a Python scalar, or alone) without the
    n = len(operands)      # general path's lists, their loop found by the operands' types (ufuncs.loop; W9)
    if n == 2:
      a, b = operands
      if type(a) is Tensor:
        ua = a.uop
        if type(b) is Tensor:
          ub = b.uop
          if (op := _DIRECT.get(k := (ufunc, ua.dtype, ub.dtype))) is not None and ua.shape == ub.shape:
            return _lazy(UOp(op, (ua, ub)))
          if (r := _FAST.get(k, _FAST)) is _FAST: r = U.loop(k)
          if r is not None:
            build, (da, db), out = r
            if (shape := ua.shape) == ub.shape: return _lazy(build(ua.cast(da), ub.cast(db)).cast(out))
            shape = broadcast_shapes(shape, ub.shape, op=ufunc.__name__)
            return _lazy(build(ua.cast(da).broadcast(shape), ub.cast(db).broadcast(shape)).cast(out))
        elif type(b) in _PY:
          if (r := _FAST.get(k := (ufunc, ua.dtype, type(b)), _FAST)) is _FAST: r = U.loop(k)
          if r is not None:
            build, (da, db), out = r
            return _lazy(build(ua.cast(da), U.scalar(b, db, ua.shape, ufunc.__name__)).cast(out))
        elif isinstance(b, np.generic) and (t := _with_numpy_scalar(ufunc, ua, b, False)) is not None: return t
      elif type(b) is Tensor and type(a) in _PY:
        ub = b.uop
        if (r := _FAST.get(k := (ufunc, type(a), ub.dtype), _FAST)) is _FAST: r = U.loop(k)
        if r is not None:
          build, (da, db), out = r
          return _lazy(build(U.scalar(a, da, ub.shape, ufunc.__name__), ub.cast(db)).cast(out))
      elif type(b) is Tensor and isinstance(a, np.generic) and \
          (t := _with_numpy_scalar(ufunc, b.uop, a, True)) is not None: return t
    elif n == 1 and type(a := operands[0]) is Tensor:
      ua = a.uop
      if (r := _FAST.get(k := (ufunc, ua.dtype), _FAST)) is _FAST: r = U.loop(k)
      if r is not None: return _lazy(r[0](ua.cast(r[1][0])).cast(r[2]))
  return _apply(ufunc, operands, dtype)


def _with_numpy_scalar(ufunc: np.ufunc, u: UOp, s: np.generic, left: bool) -> Tensor | None:
  """ufunc(u, s), or ufunc(s, u) when left, for a NumPy scalar s of a number dtype: typed as a 0-d array of its dtype
  (NumPy 2's rule: not weak as a Python scalar is) and made a constant, without _apply's conversions (`n * eps` with
  eps = finfo(float64).eps); None where _apply decides (np.power checks integer exponents there)."""
  if ufunc is np.power or s.dtype.kind not in "biufc": return None
  d = dtypes.from_numpy(s.dtype)
  if (r := _FAST.get(k := (ufunc, d, u.dtype) if left else (ufunc, u.dtype, d), _FAST)) is _FAST: r = U.loop(k)
  if r is None: return None
  build, (da, db), out = r
  if left: return _lazy(build(U.scalar(s.item(), da, u.shape, ufunc.__name__), u.cast(db)).cast(out))
  return _lazy(build(u.cast(da), U.scalar(s.item(), db, u.shape, ufunc.__name__)).cast(out))


def _apply(ufunc: np.ufunc, operands: tuple, dtype) -> Tensor:
  """apply_ufunc's general path: any operands (scalars, array-likes), broadcasting, dtype=. Another library's
  array among them gets NumPy's ufunc, so its __array_ufunc__ decides (`mt.exp(dask_array)` is a dask array)."""
  if any(foreign(x) for x in operands): return ufunc(*operands, **({} if dtype is None else {"dtype": dtype}))
  if (build := U.TABLE.get(ufunc)) is None: raise TypeError(f"minitensor does not implement numpy.{ufunc.__name__}")
  if len(operands) != ufunc.nin: raise TypeError(f"{ufunc.__name__}: takes {ufunc.nin} arguments, got {len(operands)}")
  _, ins, out = _resolved(ufunc, operands, None if dtype is None else np.dtype(dtype))
  tensors = [x if type(x) in _PY or isinstance(x, Tensor) else asarray(x) for x in operands]
  shape = broadcast_shapes(*[t.shape for t in tensors if type(t) not in _PY], op=ufunc.__name__)
  if ufunc in U.COMPARISONS and (c := U.out_of_range(ufunc, tensors, ins)) is not None:
    return Tensor(U._broadcast(c, shape))
  uops = [t.uop.cast(d).broadcast(shape) if type(t) not in _PY else U.scalar(t, d, shape, ufunc.__name__)
          for t, d in zip(tensors, ins)]
  if ufunc is np.power and ins[1].is_int and isinstance(e := operands[1], (int, np.integer)) and e < 0:
    raise ValueError("Integers to negative integer powers are not allowed.")
  return Tensor(build(*uops).cast(out))


# ---------------------------------------------------------------------- the backend, imported on first use
# `import minitensor` builds graphs only; the compiler (backend/realize.py and every stage below it, cffi) is
# imported by the first realize. Each stub rebinds its global to the backend's function, so later calls go direct.
def _realize(outputs: list[UOp]) -> list[np.ndarray]:
  _backend()
  return _realize(outputs)


def realize_base(u: UOp) -> None:
  _backend()
  return realize_base(u)


def _realize_held(us: list[UOp]) -> list[np.ndarray]:
  """_realize(us), realizing with them the held roots their graph computes (live.held_with)."""
  if not L.WRITTEN.refs and us[0].depth <= L.DEEP and len(us) == 1: return _realize(us)      # (the common case)
  held = L.held_with(us)
  hu = [t._uop for t in held]
  res = _realize(us + hu) if held else _realize(us)
  for t, u, a in zip(held, hu, res[len(us):]): _commit(t, u, a)      # (unless written since: _commit checks)
  return res[:len(us)]


def _backend():
  """Import the compiler and rebind the stubs above to its functions."""
  global _realize, realize_base
  from minitensor.backend import realize as R
  _realize, realize_base = R.realize, R.realize_base


# ---------------------------------------------------------------------- functions with NumPy names
def realize(*tensors: Tensor) -> list[np.ndarray]:
  """Compute several Tensors together (shared work is done once); each keeps its result.

  Parameters
  ----------
  *tensors : Tensor

  Returns
  -------
  list of numpy.ndarray
  """
  out = [t._realized() for t in tensors]
  if todo := [k for k, a in enumerate(out) if a is None]:
    us = [tensors[k].uop for k in todo]
    for k, u, a in zip(todo, us, _realize_held(us)):
      out[k] = a
      _commit(tensors[k], u, a)
  return out


def _commit(t: Tensor, u: UOp, a: np.ndarray) -> None:
  """t keeps a, its value realized from graph u, unless a write replaced u meanwhile (another thread's, whose graph
  holds this value): the check and the update are one step under views.WRITES, so no write is ever lost."""
  _writes_lock()                     # (acquire and release: `with` costs twice as much, W9)
  try:
    if t._uop is not u: return
    t._uop, t._data = None, a
    if L.WRITTEN.refs: L.WRITTEN.discard(t)
    if t._link is None: t._version, t._writes = t._version + 1, 0     # views re-derive from the buffer
  finally: _writes_unlock()


def where(cond, x=None, y=None, /) -> Tensor | tuple[Tensor, ...]:
  """x where cond is true, else y (broadcast together; x and y promoted as NumPy does). As NumPy's where, a
  Python int goes through int64 (or uint64) and wraps into the result dtype: where(c, int8_t, 1000) holds -24.
  where(cond) alone is nonzero(cond).

  Parameters
  ----------
  cond : array_like of bool
  x, y : array_like or scalar

  Returns
  -------
  Tensor, or a tuple of int64 Tensors (one per axis) for where(cond)
  """
  if x is None or y is None:
    if x is not y: raise ValueError("where: either both or neither of x and y should be given")
    return (cond if isinstance(cond, Tensor) else asarray(cond)).nonzero()
  if type(cond) is Tensor and type(x) is Tensor and (uc := cond.uop).dtype is dtypes.bool and \
      (d := x.uop.dtype).is_float:   # (a mask, a float Tensor, a Tensor of its dtype or a weak Python number)
    # (a Python int becomes x's float dtype directly, as NumPy's: 2**70 is 1.2e21, inf in float16)
    uy = y.uop if type(y) is Tensor and y.uop.dtype is d else UOp.const(d.python(y), d) \
      if type(y) is float or type(y) is int else None
    if uy is not None:
      ux = x.uop
      shape = ux.shape if uc.shape == ux.shape and not uy.shape else broadcast_shapes(uc.shape, ux.shape, uy.shape,
                                                                                        op="where")
      return _lazy(uc.broadcast(shape).where(ux.broadcast(shape), uy.broadcast(shape)))
  c = asarray(cond) if not isinstance(cond, Tensor) else cond
  if c.uop.dtype is not dtypes.bool: c = c.astype(bool)
  xs = [v if isinstance(v, Tensor) or U.is_weak(v) else asarray(v) for v in (x, y)]
  for v in xs:
    if type(v) is int and not -2**63 <= v < 2**64:
      raise OverflowError(f"where: Python int {v} too large to convert to int64")
  d = dtypes.from_numpy(np.result_type(*(v.dtype if isinstance(v, Tensor) else v for v in xs)))
  shape = broadcast_shapes(c.shape, *(v.shape for v in xs if isinstance(v, Tensor)), op="where")
  a, b = (v.uop.cast(d).broadcast(shape) if isinstance(v, Tensor) else UOp.const(d.python(v), d).broadcast(shape)
          for v in xs)
  return Tensor(c.uop.broadcast(shape).where(a, b))
