"""ndarray's memory-layout attributes on Tensor (a family of Tensor methods: tensor.py's `tensor_methods`), as NumPy
gives them for the equivalent array: a root owns C-contiguous memory, and a view (views.py) has the strides NumPy's
view has over it.

    t.strides       bytes per step along each axis (views.strides_of times the root's itemsize)
    t.flags         C_CONTIGUOUS F_CONTIGUOUS (NumPy's rule: size-1 axes never matter, empty arrays are both),
                    WRITEABLE (False for broadcast_to, diagonal and a real .imag view), OWNDATA (a root), ALIGNED,
                    WRITEBACKIFCOPY; read as flags["C_CONTIGUOUS"] or flags.c_contiguous; `t.flags.writeable =
                    False` makes t read-only (views.set_writeable)
    t.base          None for a root, the root for a view (NumPy's base is the array owning the memory)
    t.flat          a flatiter: iterates the elements in C order, flat[k] reads (an int: a value; a slice, an index
                    array or a mask: a 1-D Tensor), flat[k] = v writes into t (v repeated to fill, as NumPy's)
    t.view(dtype)   the bytes reinterpreted as dtype, NumPy's itemsize rules: of the same itemsize a lazy view (a
                    BITCAST in the graph; writes go both ways, as NumPy's); a different itemsize resizes the last
                    axis, which must be contiguous, and is computed now on the realized bytes, read-only (a write
                    could not reach t); t.view(cls) a view of a Tensor subclass (its __array_finalize__ called)

NumPy's functions of those attributes, which read no values (a lazy Tensor stays lazy; NumPy's own would realize it
to convert it first):

    ndim(a) shape(a) size(a, axis=None) iscomplexobj(x) isrealobj(x)
"""
from __future__ import annotations
import builtins
import numpy as np
from minitensor import views as V
from minitensor.backend.dtype import dtypes
from minitensor.numpy_rules import normalize_axes
from minitensor.tensor import Tensor, asarray, tensor_methods

__all__ = ["ndim", "shape", "size", "iscomplexobj", "isrealobj"]


def ndim(a) -> int:
  """The number of dimensions of a (numpy.ndim)."""
  return a.ndim if isinstance(a, Tensor) else np.ndim(a)


def shape(a) -> tuple[int, ...]:
  """The shape of a (numpy.shape)."""
  return a.shape if isinstance(a, Tensor) else np.shape(a)


def size(a, axis=None) -> int:
  """The number of elements of a, or along axis (an int or a tuple of ints: their product), as numpy.size."""
  if not isinstance(a, Tensor): return np.size(a, axis)
  if axis is None: return a.size
  axes = normalize_axes(axis, a.ndim, "size")
  return int(np.prod([a.shape[k] for k in axes], dtype=np.int64))


def iscomplexobj(x) -> bool:
  """Whether x's dtype is complex (numpy.iscomplexobj: the type, not the values)."""
  return x.dtype.kind == "c" if isinstance(x, Tensor) else np.iscomplexobj(x)


def isrealobj(x) -> bool:
  """Whether x's dtype is not complex (numpy.isrealobj)."""
  return not iscomplexobj(x)

_FLAGS = ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED", "WRITEBACKIFCOPY")


def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int, order: str) -> bool:
  if 0 in shape: return True
  want = itemsize
  axes = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
  for k in axes:
    if shape[k] == 1: continue
    if strides[k] != want: return False
    want *= shape[k]
  return True


class flagsobj:
  """A Tensor's memory-layout flags, as numpy.ndarray.flags; only writeable can be set (False: t is read-only)."""

  def __init__(self, t: Tensor):
    st, shape = t.strides, t.shape
    link = t._link
    object.__setattr__(self, "_t", t)
    object.__setattr__(self, "_v", {"C_CONTIGUOUS": _contiguous(shape, st, t.itemsize, "C"),
                                    "F_CONTIGUOUS": _contiguous(shape, st, t.itemsize, "F"), "OWNDATA": link is None,
                                    "WRITEABLE": V.writeable(t), "ALIGNED": True, "WRITEBACKIFCOPY": False})

  def __getitem__(self, key: str) -> bool:
    k = {"C": "C_CONTIGUOUS", "F": "F_CONTIGUOUS", "CONTIGUOUS": "C_CONTIGUOUS", "FORTRAN": "F_CONTIGUOUS",
         "W": "WRITEABLE", "O": "OWNDATA", "A": "ALIGNED"}.get(key, key)
    if k not in self._v: raise KeyError(f"Unknown flag {key!r}")
    return self._v[k]

  def __getattr__(self, name: str) -> bool:
    if name.startswith("_") or name.upper() not in self._v: raise AttributeError(name)
    return self._v[name.upper()]

  def __setattr__(self, name: str, value) -> None:
    if name.upper() not in ("WRITEABLE", "W"): raise AttributeError(f"flags.{name} cannot be set (only writeable)")
    V.set_writeable(self._t, bool(value))
    self._v["WRITEABLE"] = V.writeable(self._t)

  def __setitem__(self, key: str, value) -> None:
    setattr(self, "writeable" if key in ("W", "WRITEABLE") else key, value)

  def __repr__(self) -> str: return "\n".join(f"  {k} : {self._v[k]}" for k in _FLAGS)


class flatiter:
  """A flat (C-order) iterator over a Tensor, as numpy.flatiter: iterable, indexable and assignable."""

  def __init__(self, t: Tensor): self.base = t

  def __len__(self) -> int: return self.base.size
  def __iter__(self): return iter(self.base.reshape(-1).tolist())
  def __array__(self, dtype=None, copy=None) -> np.ndarray: return np.asarray(self.base.reshape(-1), dtype=dtype)
  def copy(self) -> Tensor: return self.base.reshape(-1).copy()

  def __getitem__(self, k):
    if isinstance(k, Tensor): k = k.numpy()
    if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu": k = int(k)     # as NumPy: a value
    return self.base.reshape(-1)[k]

  def __setitem__(self, k, value) -> None:
    t = self.base
    pos = np.arange(t.size).reshape(-1)[k.numpy() if isinstance(k, Tensor) else k]
    pos = np.atleast_1d(pos)
    v = np.resize(np.asarray(value.numpy() if isinstance(value, Tensor) else value), pos.shape)
    if isinstance(k, (int, np.integer)) and np.ndim(value.numpy() if isinstance(value, Tensor) else value):
      raise ValueError(f"Error setting single item of array: flat[{k}] = a sequence of shape {np.shape(value)}")
    if t.ndim: t[np.unravel_index(pos, t.shape)] = v
    elif v.size: t[()] = v.reshape(-1)[-1]


@tensor_methods
class _LayoutAttributes:
  @property
  def strides(self) -> tuple[int, ...]:
    """Bytes to step along each axis, as the equivalent NumPy array's."""
    isz = self._link.root.itemsize if self._link is not None else self.itemsize
    return tuple(s * isz for s in V.strides_of(self))

  @property
  def flags(self) -> flagsobj:
    """Memory-layout flags (C_CONTIGUOUS, F_CONTIGUOUS, WRITEABLE, OWNDATA, ALIGNED), as numpy.ndarray.flags."""
    return flagsobj(self)

  @property
  def base(self) -> Tensor | None:
    """The Tensor whose memory a view shows (its root); None for a Tensor that owns its data."""
    return None if self._link is None else self._link.root

  @property
  def flat(self) -> flatiter:
    """A flat iterator over the elements in C order: iterable, indexable and assignable (numpy.ndarray.flat)."""
    return flatiter(self)

  @flat.setter
  def flat(self, value) -> None: flatiter(self)[...] = value

  def view(self, dtype=None, type=None) -> Tensor:
    """The same bytes read as another dtype, or as a subclass of Tensor (numpy.ndarray.view). Of the same item
    size (not bool or complex) it is a lazy view, as NumPy's: writes into it write self, and it follows writes into
    self. With a different item size the last axis resizes (it must be contiguous, and its bytes divisible by the
    new itemsize), and the view is computed now on the realized bytes and read-only (a write into it would not
    reach self, so it raises ValueError). A subclass (as `dtype` or `type`) gets a view of that class, made without
    calling its constructor, then its `__array_finalize__(self)` if it has one, as NumPy's.

    Parameters
    ----------
    dtype : data-type or subclass of Tensor, optional
    type : subclass of Tensor, optional

    Returns
    -------
    Tensor
    """
    if isinstance(dtype, builtins.type) and issubclass(dtype, Tensor): dtype, type = None, dtype
    if type is not None:
      if not (isinstance(type, builtins.type) and issubclass(type, Tensor)):
        raise TypeError(f"view: type must be a subclass of Tensor, got {type!r}")
      v = self.view(dtype)
      w = V.make_view(v, V.Step(lambda u: u, lambda src, new: new), V.strides_of(v), type)
      if (fin := getattr(w, "__array_finalize__", None)) is not None: fin(self)
      return w
    if dtype is None or np.dtype(dtype) == self.dtype: return self[...]
    d = np.dtype(dtype)
    if d.itemsize == self.itemsize and not {d.kind, self.dtype.kind} & set("bc"):
      to, frm = dtypes.from_numpy(d), dtypes.from_numpy(self.dtype)
      return V.make_view(self, V.Step(lambda u: u.bitcast(to), lambda src, new: new.bitcast(frm)), V.strides_of(self))
    if d.itemsize != self.itemsize:
      if self.ndim == 0:
        raise ValueError(f"Changing the dtype of a 0d array is only supported if the itemsize is unchanged "
                         f"({self.dtype} to {d})")
      if not self.flags.c_contiguous and self.strides[-1] != self.itemsize and self.shape[-1] != 1:
        raise ValueError(f"To change to a dtype of a different size, the last axis must be contiguous (strides "
                         f"{self.strides}, shape {self.shape})")
    out = asarray(np.array(np.asarray(self), order="C").view(d))
    V.set_writeable(out, False)
    return out
