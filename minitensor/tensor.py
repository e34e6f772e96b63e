"""The lazy Tensor: NumPy semantics in the shape world.

A Tensor is a handle on a UOp graph. Operations validate their arguments (NumPy's exception types, the op
and the shapes in the message), promote dtypes as NumPy 2 does, and record UOps; nothing runs until a value
is asked for (`.numpy()`, `np.asarray(t)`, `float(t)`, `repr(t)`). Then the graph is realized by the backend
and the Tensor keeps the result: its graph becomes a load of that buffer, so later graphs reuse it.

Movement never copies: reshape, transpose, slicing, broadcasting, flip and pad are index maps. Realized data
is always C-contiguous.
"""
from __future__ import annotations
import operator
import warnings
from typing import Any
import numpy as np
from numpy.exceptions import AxisError
from minitensor import ufuncs as U
from minitensor import views as V
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.realize import array_of, borrow, buffer_of, is_borrowed, realize_base
from minitensor.backend.realize import realize as _realize
from minitensor.backend.uop import Ops, UOp, prod
from minitensor.methods import NdarrayMethods, add_where


def _dtype(d) -> DType:
  """A DType from anything NumPy accepts as a dtype; TypeError for unsupported kinds."""
  if isinstance(d, DType): return d
  try: nd = np.dtype(d)
  except TypeError as e: raise TypeError(f"data type {d!r} not understood") from e
  return dtypes.from_numpy(nd)


def broadcast_shapes(*shapes: tuple[int, ...], op: str = "broadcast_shapes") -> tuple[int, ...]:
  """NumPy's broadcast of shapes; ValueError naming the op and the shapes when they don't broadcast."""
  if len(shapes) == 2 and shapes[0] == shapes[1] and type(shapes[0]) is tuple: return shapes[0]   # the common case
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
  axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
  out = []
  for a in axes:
    try: a = operator.index(a)
    except TypeError: raise TypeError(f"{op}: axis must be an integer or a tuple of integers, got {a!r}") from None
    if not -ndim <= a < ndim: raise AxisError(a, ndim, f"{op}")
    out.append(a % ndim)
  if len(set(out)) != len(out): raise ValueError(f"{op}: duplicate value in 'axis': {axis}")
  return tuple(sorted(out))


def _acc_dtype(kind: str, d: DType) -> DType:
  """NumPy's result dtype of sum/prod/mean over d."""
  nd = d.np
  if kind in ("sum", "prod"): return dtypes.from_numpy((np.sum if kind == "sum" else np.prod)(np.zeros(1, nd)).dtype)
  return dtypes.from_numpy(np.mean(np.zeros(1, nd)).dtype)


_WIDER = {dtypes.float16: dtypes.float32, dtypes.float32: dtypes.float64, dtypes.complex64: dtypes.complex128}


class Tensor(NdarrayMethods):
  """A lazy n-dimensional array with NumPy's API; values are computed by minitensor's compiler on demand."""
  # _link: how a view derives from its root (views.py), None for a root; _version counts a root's writes and
  # realizations (views compare it); _writes counts the writes pending since the root's last realization
  __slots__ = ("_uop", "_data", "_link", "_version", "_writes", "__weakref__")
  __array_priority__ = 100.0

  def __init__(self, data: Any = None, dtype=None):
    self._link, self._version, self._writes = None, 0, 0
    if isinstance(data, UOp): self._uop, self._data = data, None
    else:
      t = asarray(data, dtype=dtype)
      self._uop, self._data = (t._uop, t._data) if t._link is None else (t.uop, None)

  @classmethod
  def _of(cls, a: np.ndarray) -> Tensor:
    """A realized root holding the C-contiguous ndarray a (its graph leaf is made when first needed)."""
    t = object.__new__(cls)
    t._uop, t._data, t._link, t._version, t._writes = None, a, None, 0, 0
    return t

  @property
  def uop(self) -> UOp:
    """The graph of this tensor's current value. A realized tensor is a load of its buffer, made when first
    used in a graph (so a result that is only read costs no node)."""
    if self._link is not None: V.sync(self)
    if (u := self._uop) is None: u = self._uop = buffer_of(self._data).reshape(self._data.shape)
    return u

  # ------------------------------------------------------------------ attributes
  @property
  def shape(self) -> tuple[int, ...]: return self._data.shape if self._data is not None else self._uop.shape
  @property
  def dtype(self) -> np.dtype: return self._data.dtype if self._data is not None else self._uop.dtype.np
  @property
  def ndim(self) -> int: return len(self.shape)
  @property
  def size(self) -> int: return prod(self.shape)
  @property
  def itemsize(self) -> int: return self.dtype.itemsize
  @property
  def nbytes(self) -> int: return self.size * self.itemsize
  @property
  def device(self) -> str: return "cpu"
  @property
  def T(self) -> Tensor: return self.transpose()
  @property
  def mT(self) -> Tensor:
    if self.ndim < 2: raise ValueError(f"matrix transpose needs at least 2 dimensions, got shape {self.shape}")
    return self.swapaxes(-1, -2)

  # ------------------------------------------------------------------ realization
  def realize(self) -> Tensor:
    """Compute the value now (if not yet computed) and keep it; returns self."""
    realize(self)
    return self

  def _realized(self) -> np.ndarray | None:
    if self._link is not None: V.sync(self)
    if self._data is not None: return self._data
    u = self._uop
    if u.op is Ops.RESHAPE and u.src[0].op is Ops.BUFFER: u = u.src[0]
    # a user's memory (asarray(copy=False)) is only the borrowing root's own value: results never alias it
    return array_of(u).reshape(self.shape) if u.op is Ops.BUFFER and not is_borrowed(u.data) else None

  def numpy(self) -> np.ndarray:
    """The value as an ndarray (a fresh, writable copy)."""
    return np.array(self._value(), copy=True)

  def _value(self, element: bool = False) -> np.ndarray:
    """The realized value. element: for an element read, which first computes a small lazy value the element
    is taken from whole (kept on its graph node), so reading its other elements needs no compile."""
    if (a := self._realized()) is None:
      if element: realize_base(self.uop)
      if self._link is None:        # a root: what realize(self) does, without its lists (the dispatch cost, W9)
        a, self._uop, self._version, self._writes = _realize([self.uop])[0], None, self._version + 1, 0
        self._data = a
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

  def tolist(self): return self._value(element=True).tolist()
  def item(self, *args):
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
  def __reduce__(self): return (asarray, (self.numpy(),))

  # ------------------------------------------------------------------ elementwise
  def __add__(self, x): return apply_ufunc(np.add, self, x)
  def __radd__(self, x): return apply_ufunc(np.add, x, self)
  def __sub__(self, x): return apply_ufunc(np.subtract, self, x)
  def __rsub__(self, x): return apply_ufunc(np.subtract, x, self)
  def __mul__(self, x): return apply_ufunc(np.multiply, self, x)
  def __rmul__(self, x): return apply_ufunc(np.multiply, x, self)
  def __truediv__(self, x): return apply_ufunc(np.true_divide, self, x)
  def __rtruediv__(self, x): return apply_ufunc(np.true_divide, x, self)
  def __floordiv__(self, x): return apply_ufunc(np.floor_divide, self, x)
  def __rfloordiv__(self, x): return apply_ufunc(np.floor_divide, x, self)
  def __mod__(self, x): return apply_ufunc(np.remainder, self, x)
  def __rmod__(self, x): return apply_ufunc(np.remainder, x, self)
  def __divmod__(self, x): return self // x, self % x
  def __rdivmod__(self, x): return x // self, x % self
  def __pow__(self, x):
    f = self._fast_power(x)
    return apply_ufunc(f, self) if f is not None else apply_ufunc(np.power, self, x)
  def _fast_power(self, x):
    """NumPy's `**` shortcut for float and complex arrays: the exponent exactly the Python int 2 or -1, or the
    Python float 0.5, computes square, reciprocal or sqrt (whose special values differ from power's)."""
    if type(x) not in (int, float) or self.uop.dtype.kind not in "fc": return None
    return {(int, 2): np.square, (int, -1): np.reciprocal, (float, 0.5): np.sqrt}.get((type(x), x))
  def __rpow__(self, x): return apply_ufunc(np.power, x, self)
  def __matmul__(self, x): return matmul(self, x)
  def __rmatmul__(self, x): return matmul(x, self)
  def __and__(self, x): return apply_ufunc(np.bitwise_and, self, x)
  def __rand__(self, x): return apply_ufunc(np.bitwise_and, x, self)
  def __or__(self, x): return apply_ufunc(np.bitwise_or, self, x)
  def __ror__(self, x): return apply_ufunc(np.bitwise_or, x, self)
  def __xor__(self, x): return apply_ufunc(np.bitwise_xor, self, x)
  def __rxor__(self, x): return apply_ufunc(np.bitwise_xor, x, self)
  def __lshift__(self, x): return apply_ufunc(np.left_shift, self, x)
  def __rlshift__(self, x): return apply_ufunc(np.left_shift, x, self)
  def __rshift__(self, x): return apply_ufunc(np.right_shift, self, x)
  def __rrshift__(self, x): return apply_ufunc(np.right_shift, x, self)
  def __neg__(self): return apply_ufunc(np.negative, self)
  def __pos__(self): return apply_ufunc(np.positive, self)
  def __abs__(self): return apply_ufunc(np.absolute, self)
  def __invert__(self): return apply_ufunc(np.invert, self)
  def __lt__(self, x): return apply_ufunc(np.less, self, x)
  def __le__(self, x): return apply_ufunc(np.less_equal, self, x)
  def __gt__(self, x): return apply_ufunc(np.greater, self, x)
  def __ge__(self, x): return apply_ufunc(np.greater_equal, self, x)
  # t == None is all False, as NumPy's (the overrides of object's __eq__/__ne__ return Tensors)
  def __eq__(self, x): return full(self.shape, False, bool) if x is None else apply_ufunc(np.equal, self, x)
  def __ne__(self, x): return full(self.shape, True, bool) if x is None else apply_ufunc(np.not_equal, self, x)

  # in place: the result (computed from the current values) is written into self, so every alias and view of
  # self sees it; NumPy's rules: the result is cast to self's dtype only 'same_kind', and must have self's shape
  def _inplace(self, ufunc, x) -> Tensor:
    fast = self._fast_power(x) if ufunc is np.power else None
    r = matmul(self, x) if ufunc is np.matmul else apply_ufunc(fast, self) if fast is not None else \
      apply_ufunc(ufunc, self, x)
    if not np.can_cast(r.dtype, self.dtype, "same_kind"):
      raise TypeError(f"Cannot cast ufunc '{ufunc.__name__}' output from {r.dtype!r} to {self.dtype!r} "
                      "with casting rule 'same_kind'")
    if r.shape != self.shape:
      raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't match the broadcast "
                       f"shape {r.shape}")
    V.write(self, r.uop.cast(self.uop.dtype))
    return self
  def __iadd__(self, x): return self._inplace(np.add, x)
  def __isub__(self, x): return self._inplace(np.subtract, x)
  def __imul__(self, x): return self._inplace(np.multiply, x)
  def __itruediv__(self, x): return self._inplace(np.true_divide, x)
  def __ifloordiv__(self, x): return self._inplace(np.floor_divide, x)
  def __imod__(self, x): return self._inplace(np.remainder, x)
  def __ipow__(self, x): return self._inplace(np.power, x)
  def __imatmul__(self, x): return self._inplace(np.matmul, x)
  def __iand__(self, x): return self._inplace(np.bitwise_and, x)
  def __ior__(self, x): return self._inplace(np.bitwise_or, x)
  def __ixor__(self, x): return self._inplace(np.bitwise_xor, x)
  def __ilshift__(self, x): return self._inplace(np.left_shift, x)
  def __irshift__(self, x): return self._inplace(np.right_shift, x)

  def astype(self, dtype, copy: bool = True) -> Tensor:
    """The values converted to dtype (C conversion rules, as NumPy's astype); complex to a real dtype keeps the
    real part and warns with NumPy's ComplexWarning."""
    d = _dtype(dtype)
    if self.uop.dtype.is_complex and not d.is_complex and not d.is_bool:
      warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning,
                    stacklevel=2)
    return Tensor(self.uop.cast(d))

  def round(self, decimals: int = 0) -> Tensor: return round(self, decimals)
  def conj(self) -> Tensor: return apply_ufunc(np.conjugate, self)
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

  # ------------------------------------------------------------------ reductions
  def _reduce(self, op: Ops, axis, keepdims: bool, name: str, acc: DType | None = None) -> Tensor:
    # as NumPy's ufunc.reduce: axis 0 or -1 of a 0-d array reduces nothing (mean raises)
    if self.ndim == 0 and name != "mean" and isinstance(axis, (int, np.integer)) and axis in (0, -1): axis = None
    axes = normalize_axes(axis, self.ndim, name)
    u = self.uop.cast(acc) if acc is not None else self.uop
    if op in (Ops.MAX, Ops.MIN) and any(self.shape[a] == 0 for a in axes):
      raise ValueError(f"zero-size array to reduction operation {name} which has no identity "
                       f"(shape {self.shape}, axis {axis})")
    if u.dtype.is_bool: op = {Ops.ADD: Ops.MAX, Ops.MUL: Ops.MIN}.get(op, op)      # NumPy's bool add/multiply: or/and
    keep = [k for k in range(self.ndim) if k not in axes]
    r = u.permute(tuple(keep + list(axes))).reduce(op, len(axes))
    if keepdims: r = r.reshape(tuple(1 if k in axes else s for k, s in enumerate(self.shape)))
    return Tensor(r)

  def sum(self, axis=None, dtype=None, keepdims: bool = False) -> Tensor:
    """Sum over axis with NumPy's result dtype (int64 for smaller ints). float16 is accumulated in float32 and
    float32 in float64, rounded once at the end (NumPy accumulates float32 in float32: README, Limitations)."""
    out = _dtype(dtype) if dtype is not None else _acc_dtype("sum", self.uop.dtype)
    acc = _WIDER.get(out, out)
    return Tensor(self._reduce(Ops.ADD, axis, keepdims, "sum", acc).uop.cast(out))

  def prod(self, axis=None, dtype=None, keepdims: bool = False) -> Tensor:
    out = _dtype(dtype) if dtype is not None else _acc_dtype("prod", self.uop.dtype)
    return Tensor(self._reduce(Ops.MUL, axis, keepdims, "prod", _WIDER.get(out, out)).uop.cast(out))

  def max(self, axis=None, keepdims: bool = False) -> Tensor: return self._reduce(Ops.MAX, axis, keepdims, "maximum")
  def min(self, axis=None, keepdims: bool = False) -> Tensor: return self._reduce(Ops.MIN, axis, keepdims, "minimum")

  def _count(self, axis) -> int: return prod(self.shape[a] for a in normalize_axes(axis, self.ndim, "mean"))

  def mean(self, axis=None, dtype=None, keepdims: bool = False) -> Tensor:
    """Mean over axis; with an integer dtype the sum is divided in float64 and truncated, as NumPy does."""
    out = _dtype(dtype) if dtype is not None else _acc_dtype("mean", self.uop.dtype)
    s = self._reduce(Ops.ADD, axis, keepdims, "mean", _WIDER.get(out, out)).uop
    if s.dtype.kind not in "fc": s = s.cast(dtypes.float64)
    return Tensor((s / s.const_like(float(self._count(axis)))).cast(out))   # 0 / 0: NaN for an empty mean

  def var(self, axis=None, dtype=None, ddof: float = 0, keepdims: bool = False, *, correction=None) -> Tensor:
    """Variance: the sum of squared deviations from the mean divided by max(N - ddof, 0), in NumPy's steps
    (an integer dtype truncates the mean, the squares and the result)."""
    if correction is not None: ddof = correction
    if self.uop.dtype.is_complex:     # NumPy: the mean of |x - mean|^2 = re^2 + im^2, in the real dtype
      d = self - self.mean(axis, dtype, keepdims=True)       # a real dtype: the mean of the real parts, as NumPy
      sq = d.real * d.real + d.imag * d.imag
      r = sq.sum(axis, keepdims=keepdims) / float(max(self._count(axis) - ddof, 0))
      return r if dtype is None else r.astype(dtype)
    out = _dtype(dtype) if dtype is not None else _acc_dtype("mean", self.uop.dtype)
    acc = _WIDER.get(out, out)
    d = (Tensor(self.uop.cast(acc)) if acc.is_float else self) - self.mean(axis, acc, keepdims=True)
    s = (d * d).sum(axis, acc, keepdims).uop
    if not s.dtype.is_float: s = s.cast(dtypes.float64)
    return Tensor((s / s.const_like(float(max(self._count(axis) - ddof, 0)))).cast(out))

  def std(self, axis=None, dtype=None, ddof: float = 0, keepdims: bool = False, *, correction=None) -> Tensor:
    v = self.var(axis, dtype, ddof, keepdims, correction=correction)
    if v.uop.dtype.is_float: return Tensor(UOp(Ops.SQRT, (v.uop,)))
    # NumPy converts the square root of a scalar back to an integer or bool dtype, but cannot cast an array's
    if v.ndim: raise TypeError(f"std: the square root of {v.dtype} cannot be cast back to {v.dtype}; use a float dtype")
    return Tensor(UOp(Ops.SQRT, (v.uop.cast(dtypes.float64),)).cast(v.uop.dtype))

  def any(self, axis=None, keepdims: bool = False) -> Tensor:
    return self.astype(bool)._reduce(Ops.MAX, axis, keepdims, "any") if self.size else \
      _full_bool(self, axis, keepdims, False)
  def all(self, axis=None, keepdims: bool = False) -> Tensor:
    return self.astype(bool)._reduce(Ops.MIN, axis, keepdims, "all") if self.size else \
      _full_bool(self, axis, keepdims, True)

  def argmax(self, axis=None, keepdims: bool = False) -> Tensor: return _arg(self, axis, keepdims, Ops.MAX)
  def argmin(self, axis=None, keepdims: bool = False) -> Tensor: return _arg(self, axis, keepdims, Ops.MIN)

  # ------------------------------------------------------------------ movement
  def reshape(self, *shape, order: str = "C") -> Tensor:
    """The same elements in row-major order, viewed with another shape (one -1 is inferred)."""
    if order != "C": raise NotImplementedError("reshape: only order='C' is supported")
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)): shape = tuple(shape[0])
    try: shape = tuple(operator.index(s) for s in shape)
    except TypeError: raise TypeError(f"reshape: shape must be integers, got {shape!r}") from None
    if shape.count(-1) > 1: raise ValueError("reshape: can only specify one unknown dimension")
    if any(s < -1 for s in shape): raise ValueError(f"reshape: negative dimensions not allowed: {shape}")
    if -1 in shape:
      known = prod(s for s in shape if s != -1)
      if known == 0 or self.size % known:
        raise ValueError(f"cannot reshape array of size {self.size} into shape {shape}")
      shape = tuple(self.size // known if s == -1 else s for s in shape)
    _check_shape(shape, "reshape", self.itemsize)
    if prod(shape) != self.size: raise ValueError(f"cannot reshape array of size {self.size} into shape {shape}")
    return V.reshaped(self, shape)

  def transpose(self, *axes) -> Tensor:
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)) or (len(axes) == 1 and axes[0] is None): axes = axes[0]
    if not axes: axes = tuple(range(self.ndim))[::-1]
    if len(axes) != self.ndim:
      raise ValueError(f"transpose: axes {tuple(axes)} don't match array of shape {self.shape}")
    ax = [operator.index(a) for a in axes]
    for a in ax:
      if not -self.ndim <= a < self.ndim: raise AxisError(a, self.ndim, "transpose")
    ax = [a % self.ndim for a in ax]
    if len(set(ax)) != len(ax): raise ValueError(f"transpose: repeated axis in {tuple(axes)}")
    return V.permuted(self, tuple(ax))

  def permute_dims(self, axes) -> Tensor: return self.transpose(axes)
  def swapaxes(self, a: int, b: int) -> Tensor:
    a, b = (normalize_axes(x, self.ndim, "swapaxes")[0] for x in (a, b))
    p = list(range(self.ndim)); p[a], p[b] = p[b], p[a]
    return V.permuted(self, tuple(p))

  def flatten(self) -> Tensor: return Tensor(self.uop.reshape((self.size,)))
  def ravel(self) -> Tensor: return self.reshape(-1)

  def squeeze(self, axis=None) -> Tensor:
    axes = tuple(k for k, s in enumerate(self.shape) if s == 1) if axis is None else \
      normalize_axes(axis, self.ndim, "squeeze")
    for a in axes:
      if self.shape[a] != 1:
        raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size not equal to one "
                         f"(axis {a} of shape {self.shape})")
    return V.reshaped(self, tuple(s for k, s in enumerate(self.shape) if k not in axes))

  def expand_dims(self, axis) -> Tensor: return expand_dims(self, axis)

  def broadcast_to(self, shape) -> Tensor:
    shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else \
      tuple(operator.index(s) for s in shape)
    _check_shape(shape, "broadcast_to", self.itemsize)
    if len(shape) < self.ndim or broadcast_shapes(self.shape, shape, op="broadcast_to") != shape:
      raise ValueError(f"broadcast_to: cannot broadcast a tensor of shape {self.shape} to shape {shape}")
    st = (0,) * (len(shape) - self.ndim) + tuple(0 if n == 1 else s for n, s in zip(self.shape, V.strides_of(self)))
    return V.readonly_view(self, lambda u: U._broadcast(u, shape), st)

  def flip(self, axis=None) -> Tensor:
    axes = normalize_axes(axis, self.ndim, "flip")
    return V.flipped(self, axes)

  # ------------------------------------------------------------------ indexing and linear algebra
  def __getitem__(self, idx) -> Tensor:
    from minitensor.indexing import getitem
    return getitem(self, idx)

  def __setitem__(self, idx, value) -> None:
    """NumPy's assignment: the root of self (and so every view of it) holds the new values from now on."""
    from minitensor.indexing import setitem
    V.write(self, setitem(self, idx, value).uop)


  # ------------------------------------------------------------------ NumPy protocols
  def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
    from minitensor.interop import array_ufunc
    return array_ufunc(ufunc, method, inputs, kwargs)

  def __array_function__(self, func, types, args, kwargs):
    from minitensor.interop import array_function
    return array_function(func, types, args, kwargs)

  def __array_namespace__(self, *, api_version: str | None = None):
    from minitensor.array_api import namespace
    return namespace(api_version)


# ---------------------------------------------------------------------- helpers of the methods above
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
  iota = asarray(np.arange(n, dtype=np.int64)).reshape(tuple(n if k == ax else 1 for k in range(t.ndim)))
  return where(hit, iota, n).min(axis=ax, keepdims=keepdims)


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


def full(shape, fill_value, dtype=None) -> Tensor:
  shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(operator.index(s) for s in shape)
  if any(s < 0 for s in shape): raise ValueError(f"full: negative dimensions are not allowed: {shape}")
  if isinstance(fill_value, Tensor):
    return Tensor(U._broadcast(fill_value.uop.cast(_dtype(dtype)) if dtype else fill_value.uop, shape))
  d = _dtype(dtype) if dtype is not None else dtypes.from_numpy(np.asarray(fill_value).dtype)
  _check_shape(shape, "full", d.itemsize)
  if isinstance(fill_value, complex) and not d.is_complex:       # NumPy's unsafe cast: the real part, with a warning
    if not d.is_bool:
      warnings.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning,
                    stacklevel=2)
    fill_value = bool(fill_value) if d.is_bool else fill_value.real
  c = U.scalar_uop(fill_value, d, "full") if isinstance(fill_value, int) and not isinstance(fill_value, bool) else \
    UOp.const(fill_value, d)
  return Tensor(c.reshape((1,) * len(shape)).expand(shape) if shape else c)


MAX_DIMS = 64


def _check_shape(shape: tuple[int, ...], op: str, itemsize: int = 1) -> None:
  """NumPy's limits, at the call: at most 64 dimensions, and a byte size (of the non-zero axes, as NumPy
  counts) that fits in a signed 64-bit integer."""
  if len(shape) > MAX_DIMS:
    raise ValueError(f"{op}: maximum supported dimension for a Tensor is {MAX_DIMS}, found {len(shape)}")
  if prod(s for s in shape if s) * itemsize >= 2 ** 63:
    raise ValueError(f"{op}: array is too big; the size of shape {shape} is larger than the maximum possible size")


def zeros(shape, dtype=None) -> Tensor: return full(shape, 0, float if dtype is None else dtype)
def ones(shape, dtype=None) -> Tensor: return full(shape, 1, float if dtype is None else dtype)
def empty(shape, dtype=None) -> Tensor: return full(shape, 0, float if dtype is None else dtype)


# ---------------------------------------------------------------------- ufuncs on Tensors
_PY = U.PY_SCALARS


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
  if (build := U.TABLE.get(ufunc)) is None: raise TypeError(f"minitensor does not implement numpy.{ufunc.__name__}")
  if len(operands) != ufunc.nin: raise TypeError(f"{ufunc.__name__}: takes {ufunc.nin} arguments, got {len(operands)}")
  if dtype is None and len(operands) == 2 and type(a := operands[0]) is Tensor and type(b := operands[1]) is Tensor \
     and a.shape == b.shape:       # the common case, without the general path's lists (dispatch cost: W9)
    _, (da, db), out = U.resolved(ufunc, (a.dtype, b.dtype), None)
    return Tensor(build(a.uop.cast(da), b.uop.cast(db)).cast(out))
  _, ins, out = _resolved(ufunc, operands, None if dtype is None else np.dtype(dtype))
  tensors = [x if type(x) in _PY or isinstance(x, Tensor) else asarray(x) for x in operands]
  shape = broadcast_shapes(*[t.shape for t in tensors if type(t) not in _PY], op=ufunc.__name__)
  if ufunc in U.COMPARISONS and (c := U.out_of_range(ufunc, tensors, ins)) is not None:
    return Tensor(U._broadcast(c, shape))
  uops = [U._broadcast(t.uop.cast(d), shape) if type(t) not in _PY else U.scalar(t, d, shape, ufunc.__name__)
          for t, d in zip(tensors, ins)]
  if ufunc is np.power and ins[1].is_int and isinstance(e := operands[1], (int, np.integer)) and e < 0:
    raise ValueError("Integers to negative integer powers are not allowed.")
  return Tensor(build(*uops).cast(out))


# ---------------------------------------------------------------------- functions with NumPy names
def realize(*tensors: Tensor) -> list[np.ndarray]:
  """Compute several tensors together (shared work is done once); each keeps its result."""
  todo = [t for t in tensors if t._realized() is None]
  if todo:
    for t, a in zip(todo, _realize([t.uop for t in todo])):
      t._uop, t._data = None, a
      if t._link is None: t._version, t._writes = t._version + 1, 0     # views re-derive from the buffer
  return [t._realized() for t in tensors]


def where(cond, x=None, y=None, /) -> Tensor | tuple[Tensor, ...]:
  """x where cond is true, else y (broadcast together; x and y promoted as NumPy does). As NumPy's where, a
  Python int goes through int64 (or uint64) and wraps into the result dtype: where(c, int8_t, 1000) holds -24.
  where(cond) alone is nonzero(cond)."""
  if x is None or y is None:
    if x is not y: raise ValueError("where: either both or neither of x and y should be given")
    from minitensor.sorting import nonzero
    return nonzero(cond)
  c = asarray(cond) if not isinstance(cond, Tensor) else cond
  if c.uop.dtype is not dtypes.bool: c = c.astype(bool)
  xs = [v if isinstance(v, Tensor) or U.is_weak(v) else asarray(v) for v in (x, y)]
  for v in xs:
    if type(v) is int and not -2**63 <= v < 2**64:
      raise OverflowError(f"where: Python int {v} too large to convert to int64")
  d = dtypes.from_numpy(np.result_type(*(v.dtype if isinstance(v, Tensor) else v for v in xs)))
  shape = broadcast_shapes(c.shape, *(v.shape for v in xs if isinstance(v, Tensor)), op="where")
  a, b = (U._broadcast(v.uop.cast(d) if isinstance(v, Tensor) else UOp.const(d.python(v), d), shape) for v in xs)
  return Tensor(U._broadcast(c.uop, shape).where(a, b))


def clip(a, a_min=None, a_max=None) -> Tensor:
  """min(max(a, a_min), a_max). As NumPy 2, a Python int bound past the end of a's integer range on its own
  side clips nothing (clip(int8_t, -1000, 1000) is int8_t); past the other end it raises OverflowError."""
  a = asarray(a)
  d = a.uop.dtype
  if d.is_int and type(a_min) is int and a_min < d.min: a_min = None
  if d.is_int and type(a_max) is int and a_max > d.max: a_max = None
  if a_min is not None: a = apply_ufunc(np.maximum, a, a_min)
  if a_max is not None: a = apply_ufunc(np.minimum, a, a_max)
  return a


def round(a, decimals: int = 0) -> Tensor:
  """Round half to even to `decimals` digits, in NumPy's steps: rint(a * 10**d) / 10**d, or rint(a / 10**-d) *
  10**-d for d < 0. Integers are unchanged for d >= 0, rounded in float64 (and wrapped back) for d < 0; bool
  rounds to float16 for d = 0 and raises TypeError otherwise."""
  a = asarray(a)
  d = a.uop.dtype
  if decimals == 0: return a if d.is_int else apply_ufunc(np.rint, a)
  if d.is_bool: raise TypeError(f"round: cannot cast the float64 result back to bool (decimals={decimals})")
  if d.is_int and decimals > 0: return a
  if decimals > 0: return apply_ufunc(np.rint, a * 10.0 ** decimals) / 10.0 ** decimals
  f = 10 ** -decimals if d.is_int else 10.0 ** -decimals
  return (apply_ufunc(np.rint, a / f) * f).astype(d)


def expand_dims(a, axis) -> Tensor:
  a = asarray(a)
  axes = axis if isinstance(axis, (tuple, list)) else (axis,)
  n = a.ndim + len(axes)
  axes = normalize_axes(axes, n, "expand_dims")
  it = iter(a.shape)
  return a.reshape(tuple(1 if k in axes else next(it) for k in range(n)))


def matmul(a, b) -> Tensor:
  """a @ b with NumPy's rules: 1-D operands are promoted and the added axis removed, batches broadcast."""
  a, b = asarray(a), asarray(b)
  if a.ndim == 0 or b.ndim == 0:
    raise ValueError("matmul: Input operand does not have enough dimensions (scalars are not allowed)")
  a2 = a.reshape(1, a.shape[0]) if a.ndim == 1 else a
  b2 = b.reshape(b.shape[0], 1) if b.ndim == 1 else b
  (m, k), (k2, n) = a2.shape[-2:], b2.shape[-2:]
  if k != k2: raise ValueError(f"matmul: mismatch in core dimension: {a.shape} @ {b.shape} ({k} != {k2})")
  batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2], op="matmul")
  acc = dtypes.from_numpy(np.result_type(a.dtype, b.dtype))
  if acc.is_complex and k: return _complex_matmul(a2.astype(acc), b2.astype(acc)).reshape(
    batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ()))
  au = U._broadcast(a2.uop.cast(acc), batch + (m, k)).reshape(batch + (m, 1, k)).expand(batch + (m, n, k))
  bu = U._broadcast(b2.uop.cast(acc), batch + (k, n)).permute(tuple(range(len(batch))) + (len(batch) + 1, len(batch)))
  bu = bu.reshape(batch + (1, n, k)).expand(batch + (m, n, k))
  prodt = au & bu if acc.is_bool else au * bu
  r = Tensor(prodt.reduce(Ops.MAX if acc.is_bool else Ops.ADD, 1) if k else
             UOp.const(False if acc.is_bool else 0, acc).reshape((1,) * (len(batch) + 2)).expand(batch + (m, n)))
  shape = batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
  return r.reshape(shape)


def _complex_matmul(a: Tensor, b: Tensor) -> Tensor:
  """Complex a @ b as four real products (pairs of floats: the real GEMM's vectorized, tiled loops, where a complex
  accumulator does not vectorize; measured in the README), re = ar@br - ai@bi, im = ar@bi + ai@br."""
  ar, ai, br, bi = (Tensor(p.uop.stage()) for p in (a.real, a.imag, b.real, b.imag))   # contiguous float parts
  rr, ii, ri, ir = (matmul(x, y).uop.stage() for x, y in ((ar, br), (ai, bi), (ar, bi), (ai, br)))   # a GEMM each
  return Tensor(UOp(Ops.CMPLX, (rr - ii, ri + ir)))


def dot(a, b) -> Tensor:
  a, b = asarray(a), asarray(b)
  if a.ndim == 0 or b.ndim == 0: return a * b
  if b.ndim <= 2: return matmul(a, b)
  return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))


def tensordot(a, b, axes=2) -> Tensor:
  a, b = asarray(a), asarray(b)
  if isinstance(axes, int):
    if axes < 0: raise ValueError("tensordot: axes must be non-negative")
    ax_a, ax_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
  else:
    ax_a, ax_b = ([x] if isinstance(x, int) else list(x) for x in axes)
  for x, t in [(x, a) for x in ax_a] + [(x, b) for x in ax_b]:
    if not -t.ndim <= x < t.ndim: raise AxisError(x, t.ndim, "tensordot")
  ax_a, ax_b = [x % a.ndim for x in ax_a], [x % b.ndim for x in ax_b]
  if len(ax_a) != len(ax_b) or any(a.shape[i] != b.shape[j] for i, j in zip(ax_a, ax_b)):
    raise ValueError(f"tensordot: shape-mismatch for sum: {a.shape} axes {ax_a} vs {b.shape} axes {ax_b}")
  free_a = [k for k in range(a.ndim) if k not in ax_a]
  free_b = [k for k in range(b.ndim) if k not in ax_b]
  ka = prod(a.shape[i] for i in ax_a)
  am = a.transpose(free_a + ax_a).reshape(prod(a.shape[i] for i in free_a), ka)
  bm = b.transpose(ax_b + free_b).reshape(ka, prod(b.shape[i] for i in free_b))
  return matmul(am, bm).reshape(tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b))


# ---------------------------------------------------------------------- NumPy-style docs of the short methods
def _doc(summary: str, params: str, returns: str = "Tensor") -> str:
  lines = [summary, "", "Parameters", "----------"]
  lines += [p.strip() for p in params.split(";") if p.strip()] or ["(none)"]
  return "\n".join(lines + ["", "Returns", "-------", returns])


_AXIS = "axis : None, int or tuple of ints, optional (negative counts from the end, None: all axes)"
_DOCS = {
  "realize": ("Compute the value now (unless computed already) and keep it.", "", "Tensor\n    self"),
  "numpy": ("The value as a fresh, writable ndarray.", "", "numpy.ndarray"),
  "tolist": ("The value as nested Python lists of Python scalars (no compile for a realized Tensor).", "",
             "list or scalar"),
  "item": ("One element as a Python scalar.",
           "*args : int or tuple of ints, optional (a flat or multi-dimensional index; none for size 1)",
           "int, float or bool"),
  "astype": ("The values converted to `dtype` with C (NumPy) conversion rules.",
             "dtype : dtype-like; copy : bool (accepted; Tensors are immutable)"),
  "clip": ("Values limited to [min, max] (NumPy's clip, NaN propagates).", "min, max : scalar, array_like or None"),
  "round": ("Values rounded half to even to `decimals` places.", "decimals : int, default 0"),
  "conj": ("The complex conjugate (the Tensor itself for real dtypes).", ""),
  "sum": ("Sum over `axis`; ints accumulate in int64/uint64, float16 in float32, float32 in float64.",
          f"{_AXIS}; dtype : dtype-like, optional; keepdims : bool, default False"),
  "prod": ("Product over `axis`, with NumPy's accumulation dtype.",
           f"{_AXIS}; dtype : dtype-like, optional; keepdims : bool, default False"),
  "max": ("Maximum over `axis` (NaN propagates; ValueError for an empty reduction).",
          f"{_AXIS}; keepdims : bool, default False"),
  "min": ("Minimum over `axis` (NaN propagates; ValueError for an empty reduction).",
          f"{_AXIS}; keepdims : bool, default False"),
  "mean": ("Mean over `axis` (float64 for integer input).",
           f"{_AXIS}; dtype : dtype-like, optional; keepdims : bool, default False"),
  "var": ("Variance over `axis`: mean squared deviation, divided by N - ddof.",
          f"{_AXIS}; dtype : dtype-like, optional; ddof : float, default 0; keepdims : bool, default False; "
          "correction : float, optional (Array API name of ddof)"),
  "std": ("Standard deviation over `axis` (the square root of var).",
          f"{_AXIS}; dtype : dtype-like, optional; ddof : float, default 0; keepdims : bool, default False; "
          "correction : float, optional"),
  "any": ("Whether any element along `axis` is true.", f"{_AXIS}; keepdims : bool, default False"),
  "all": ("Whether every element along `axis` is true.", f"{_AXIS}; keepdims : bool, default False"),
  "argmax": ("Index of the first maximum (or first NaN) along `axis` (None: of the flattened Tensor).",
             "axis : int or None; keepdims : bool, default False"),
  "argmin": ("Index of the first minimum (or first NaN) along `axis` (None: of the flattened Tensor).",
             "axis : int or None; keepdims : bool, default False"),
  "reshape": ("The same elements in row-major order with another shape (no copy; one -1 is inferred).",
              "*shape : ints or a tuple of ints; order : 'C'"),
  "transpose": ("The axes permuted (reversed by default); no copy.", "*axes : ints, a tuple of ints, or none"),
  "permute_dims": ("The axes permuted (Array API name of transpose).", "axes : tuple of ints"),
  "swapaxes": ("Axes a and b exchanged.", "a, b : int"),
  "flatten": ("The elements as a 1-D Tensor in row-major order (no copy: Tensors are immutable).", ""),
  "ravel": ("The elements as a 1-D Tensor in row-major order.", ""),
  "squeeze": ("Size-1 axes removed (all of them, or those in `axis`; ValueError for an axis of another size).",
              f"{_AXIS}"),
  "expand_dims": ("Size-1 axes inserted at the positions `axis` (of the result).", "axis : int or tuple of ints"),
  "broadcast_to": ("The Tensor broadcast to `shape` (NumPy's rules; no copy).", "shape : int or tuple of ints"),
  "flip": ("The order of elements reversed along `axis` (all axes for None); no copy.", f"{_AXIS}"),
  "dot": ("numpy.dot with another operand.", "other : Tensor or array_like"),
  "explain": ("The schedule realizing this Tensor runs: kernels, their C, buffers, loop-iteration counts.", "",
              "minitensor.inspect.Explanation"),
}
for _name, _d in _DOCS.items(): getattr(Tensor, _name).__doc__ = _doc(*_d)

broadcast_shapes.__doc__ = _doc("NumPy's broadcast of shapes; ValueError naming the op and the shapes when they do "
                                "not broadcast.",
                                "*shapes : tuples of ints; op : str (the operation named in errors)", "tuple of ints")
where.__doc__ = _doc("x where cond is true, else y (broadcast together; x and y promoted as NumPy does).",
                     "cond : array_like of bool; x, y : array_like or scalar")
clip.__doc__ = _doc("Values of a limited to [a_min, a_max] (NumPy's clip).",
                    "a : array_like; a_min, a_max : scalar, array_like or None")
round.__doc__ = _doc("Values rounded half to even to `decimals` places (NumPy's round).",
                     "a : array_like; decimals : int, default 0")
matmul.__doc__ = _doc("a @ b with NumPy's rules: 1-D operands are promoted and the added axis removed, batches "
                      "broadcast.", "a, b : array_like (at least 1-D)")
dot.__doc__ = _doc("numpy.dot: a product for scalars, matmul for up to 2-D b, a sum over a's last and b's "
                   "second-to-last axis otherwise.", "a, b : array_like")
tensordot.__doc__ = _doc("Sum of products over the given axes of a and b (numpy.tensordot).",
                         "a, b : array_like; axes : int or (axes of a, axes of b), default 2")
realize.__doc__ = _doc("Compute several Tensors together (shared work is done once); each keeps its result.",
                       "*tensors : Tensor", "list of numpy.ndarray")
add_where(Tensor)     # after the docs above: the wrappers extend them
