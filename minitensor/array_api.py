"""The Array API (2025.12) namespace: what `Tensor.__array_namespace__()` (the minitensor module) adds to NumPy's names.

    dtypes                    NumPy dtype objects (mt.float32 == x.dtype), complex64 and complex128 included
    dtype functions           isdtype, result_type, can_cast, finfo, iinfo, astype
    inspection                __array_namespace_info__(): one device "cpu"
    creation                  NumPy's creation functions with the standard's keyword `device` (None or "cpu"):
                              array_api_creation.py
    elementwise               the standard's names of NumPy's ufuncs (acos = arccos, bitwise_invert = invert, ...);
                              acosh asinh atanh copysign hypot logaddexp nextafter: elementwise.py
    versions                  x.__array_namespace__(api_version=v) for v in 2021.12 ... 2025.12: the minitensor
                              module for 2025.12 (and None); for older versions a copy of it whose meshgrid,
                              broadcast_arrays and __array_namespace_info__().devices() return lists, as those
                              versions say (2025.12: tuples)
    DLPack                    Tensor.__dlpack__ exports the realized read-only buffer (zero copy); from_dlpack
                              wraps a producer's memory without a copy when it is C-contiguous (methods.py)
    signatures                where the standard's differ from NumPy's (clip, expand_dims, reshape), the functions
                              here accept both: the standard's keyword-only and positional-only parameters are
                              ordinary parameters in the same places, so NumPy-style calls keep working
"""
from __future__ import annotations
import builtins
import functools
import inspect
import math
import sys
import types
import numpy as np
from minitensor import functions as F
from minitensor import movement, rearranging
from minitensor import tensor as T
from minitensor.array_api_creation import _device
from minitensor.tensor import Tensor, tensor_methods

__array_api_version__ = "2025.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")
__all__ = ["__array_api_version__", "__array_namespace_info__", "e", "pi", "inf", "nan", "newaxis",
           "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64",
           "complex64", "complex128", "isdtype", "result_type", "can_cast", "finfo", "iinfo", "astype",
           "from_dlpack", "clip", "expand_dims", "reshape",
           "acos", "asin", "atan", "atan2", "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift",
           "real", "imag", "conj", "conjugate", "cumulative_prod", "angle"]

e, pi, inf, nan, newaxis = math.e, math.pi, math.inf, math.nan, None
_NAMES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64",
          "complex64", "complex128")
_DTYPES = {n: np.dtype(n) for n in _NAMES}
_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu", "real floating": "f",
          "complex floating": "c", "numeric": "iufc"}


# ---------------------------------------------------------------------- data types
def _as_dtype(x, op: str) -> np.dtype:
  """The dtype of a Tensor, ndarray or dtype-like; TypeError for dtypes minitensor does not have."""
  d = x.dtype if isinstance(x, (Tensor, np.ndarray)) else np.dtype(x)
  if d.kind in "OUSVMm": raise TypeError(f"{op}: dtype {d} is not supported by minitensor")
  return d


def isdtype(dtype, kind) -> builtins.bool:
  """Whether dtype is of the given kind.

  Parameters
  ----------
  dtype : dtype
      A dtype object (mt.float32, x.dtype) or a NumPy scalar type.
  kind : str, dtype or tuple of them
      "bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating" or
      "numeric"; a dtype matches itself; a tuple matches if any entry does.

  Returns
  -------
  bool
  """
  if not isinstance(dtype, np.dtype) and not (isinstance(dtype, type) and issubclass(dtype, np.generic)):
    raise TypeError(f"isdtype: dtype must be a dtype object, got {dtype!r}")
  d = np.dtype(dtype)
  if isinstance(kind, tuple): return any(isdtype(d, k) for k in kind)
  if isinstance(kind, str):
    if kind not in _KINDS:
      raise ValueError(f"isdtype: unknown kind {kind!r} (expected one of {', '.join(map(repr, _KINDS))})")
    return d.kind in _KINDS[kind]
  return d == np.dtype(kind)


def result_type(*arrays_and_dtypes) -> np.dtype:
  """The dtype NumPy's promotion gives the arguments (Python scalars are weak).

  Parameters
  ----------
  *arrays_and_dtypes : Tensor, ndarray, dtype or Python scalar
      At least one.

  Returns
  -------
  dtype
  """
  d = np.result_type(*(x.dtype if isinstance(x, Tensor) else x for x in arrays_and_dtypes))
  return _as_dtype(d, "result_type")


def can_cast(from_, to, /) -> builtins.bool:
  """Whether from_ casts to `to` under the "safe" rule.

  Parameters
  ----------
  from_ : Tensor, ndarray or dtype
  to : dtype

  Returns
  -------
  bool
  """
  return np.can_cast(_as_dtype(from_, "can_cast"), _as_dtype(to, "can_cast"))


class _Limit(float):
  """A limit of a float16/float32 dtype as a Python float (the Array API's type) that prints as NumPy's scalar of
  that dtype (finfo(float32).max prints 3.4028235e+38, as NumPy's)."""
  __slots__ = ()
  scalar: type = np.float32

  def __repr__(self) -> str: return repr(self.scalar(self))
  def __str__(self) -> str: return str(self.scalar(self))


_LIMITS = {np.dtype(np.float32): _Limit, np.dtype(np.float16): type("_Limit16", (_Limit,), {"scalar": np.float16}),
           np.dtype(np.float64): np.float64, np.dtype(np.longdouble): np.float64}


class finfo_object:
  """finfo's result: numpy.finfo's attributes (bits, eps, max, min, smallest_normal, dtype, resolution, tiny,
  precision, ...); the floating values are floats that print as NumPy's (np.float64 for float64) and its repr is
  NumPy's."""

  def __init__(self, f: np.finfo):
    self._np = f
    t = _LIMITS[f.dtype]
    self.bits, self.dtype = f.bits, f.dtype
    self.eps, self.max, self.min, self.smallest_normal = (t(v) for v in (f.eps, f.max, f.min, f.smallest_normal))

  def __getattr__(self, name: str): return getattr(self._np, name)
  def __repr__(self) -> str: return repr(self._np)
  def __eq__(self, other) -> builtins.bool: return isinstance(other, finfo_object) and other.dtype == self.dtype
  def __hash__(self) -> int: return hash(self.dtype)


def finfo(type, /) -> finfo_object:
  """Machine limits of a floating-point dtype, as numpy.finfo.

  Parameters
  ----------
  type : dtype or Tensor

  Returns
  -------
  finfo_object
      bits, eps, max, min, smallest_normal, dtype (the real dtype of a complex type) and NumPy's other attributes.
  """
  return finfo_object(np.finfo(_as_dtype(type, "finfo")))


def iinfo(type, /) -> np.iinfo:
  """Machine limits of an integer dtype: numpy.iinfo (bits, max and min are Python ints).

  Parameters
  ----------
  type : dtype or Tensor

  Returns
  -------
  numpy.iinfo
  """
  return np.iinfo(_as_dtype(type, "iinfo"))


def astype(x, dtype, /, *, copy=True, device=None) -> Tensor:
  """x converted to dtype (C conversion rules, as NumPy's astype).

  Parameters
  ----------
  x : array_like
  dtype : dtype
  copy : bool, optional
      Accepted: results never share memory with their inputs (assignment is functional).
  device : None or "cpu", optional

  Returns
  -------
  Tensor
  """
  _device(device, "astype")
  return T.asarray(x).astype(_as_dtype(dtype, "astype"))


class _Info:
  """The namespace's inspection object (`__array_namespace_info__()`)."""

  def capabilities(self) -> dict:
    return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

  def default_device(self) -> str: return "cpu"

  def devices(self) -> tuple[str, ...]: return ("cpu",)

  def default_dtypes(self, *, device=None) -> dict:
    _device(device, "default_dtypes")
    return {"real floating": _DTYPES["float64"], "complex floating": _DTYPES["complex128"],
            "integral": _DTYPES["int64"], "indexing": _DTYPES["int64"]}

  def dtypes(self, *, device=None, kind=None) -> dict:
    _device(device, "dtypes")
    key = kind if type(kind) is not list else tuple(kind)
    try: found = _OF_KIND.get(key)
    except TypeError: found = None                                  # (an unhashable kind: isdtype's error below)
    if found is None:
      found = {n: d for n, d in _DTYPES.items() if kind is None or isdtype(d, kind)}
      if len(_OF_KIND) < 64: _OF_KIND[key] = found
    return dict(found)          # (a new dict each call: the caller may change it; scikit-learn asks 8 times a fit)


_OF_KIND: dict = {}            # kind -> the dtypes of that kind (_Info.dtypes)


def __array_namespace_info__() -> _Info:
  """The Array API inspection object: capabilities(), default_device(), devices(), default_dtypes(), dtypes().

  Returns
  -------
  object
  """
  return _Info()


def from_dlpack(x, /, *, device=None, copy=None) -> Tensor:
  """A Tensor of any object that exports DLPack (through NumPy's importer), or of a Tensor.

  Without copy=True the producer's memory is wrapped without a copy when it is C-contiguous and of a supported
  dtype (as asarray(a, copy=False): the Tensor shows that memory's current values); otherwise it is copied.

  Parameters
  ----------
  x : object with __dlpack__ and __dlpack_device__, or Tensor
  device : None or "cpu", optional
  copy : bool, optional
      True: always copy; False: never (BufferError or ValueError when a copy is needed); None: only as needed.

  Returns
  -------
  Tensor
  """
  _device(device, "from_dlpack")
  if isinstance(x, Tensor): return x.copy() if copy else x
  a = np.from_dlpack(x, copy=copy)
  try: return T.asarray(a, copy=False)
  except ValueError:
    if copy is False: raise
    return T.asarray(a)


def namespace(api_version: str | None = None) -> types.ModuleType:
  """The namespace of an Array API version: minitensor itself for None and 2025.12; for 2021.12 to 2024.12 a
  copy of it whose meshgrid and broadcast_arrays return lists (those versions' return type)."""
  if api_version is None or api_version == __array_api_version__: return _package()
  if api_version not in _VERSIONS:
    raise ValueError(f"__array_namespace__: unsupported api_version {api_version!r} "
                     f"(supported: {', '.join(_VERSIONS)})")
  return _older(api_version)


def _package() -> types.ModuleType:
  """The minitensor package (the namespace), looked up rather than imported: it imports this module, and it is
  always loaded before any of its modules runs."""
  return sys.modules[__name__.rpartition(".")[0]]


@tensor_methods
class _ArrayApi:
  def __array_namespace__(self, *, api_version: str | None = None) -> types.ModuleType:
    """The Array API namespace of this Tensor (the minitensor module): namespace(api_version)."""
    return namespace(api_version)


@functools.cache
def _older(version: str) -> types.ModuleType:
  from minitensor import fft, linalg  # noqa: F401  (loaded, so that the copy holds them)
  mt = _package()
  ns = types.ModuleType("minitensor", f"minitensor as the Array API {version} namespace")
  ns.__dict__.update({k: v for k, v in vars(mt).items() if k not in ("__name__", "__doc__")})
  ns.__array_api_version__ = version
  ns.meshgrid = lambda *arrays, indexing="xy", sparse=False: list(mt.meshgrid(*arrays, indexing=indexing,
                                                                              sparse=sparse))
  ns.broadcast_arrays = lambda *arrays: list(mt.broadcast_arrays(*arrays))
  ns.meshgrid.__signature__ = inspect.signature(mt.meshgrid)
  ns.broadcast_arrays.__signature__ = inspect.signature(mt.broadcast_arrays)
  ns.__array_namespace_info__ = _OlderInfo
  return ns


class _OlderInfo(_Info):
  """The inspection object of the versions before 2025.12: devices() is a list."""

  def devices(self) -> list[str]: return ["cpu"]


# ---------------------------------------------------------------------- signatures the standard spells differently
def clip(a, /, min=None, max=None, *, a_min=None, a_max=None) -> Tensor:
  """Values limited to [min, max] (NaN propagates); either bound may be None.

  Parameters
  ----------
  a : array_like
  min, max : scalar or array_like, optional
      Broadcast against a; NumPy's promotion rules.
  a_min, a_max : scalar or array_like, optional
      NumPy's older names of min and max.

  Returns
  -------
  Tensor
  """
  return F.clip(a, a_min if min is None else min, a_max if max is None else max)


def expand_dims(a, /, axis=0) -> Tensor:
  """a with size-1 axes inserted at the given positions (of the result).

  Parameters
  ----------
  a : array_like
  axis : int or tuple of ints, optional

  Returns
  -------
  Tensor
  """
  return movement.expand_dims(a, axis)


def reshape(a, /, shape, order: str = "C", *, copy=None) -> Tensor:
  """The same elements in row-major order with another shape (one -1 is inferred).

  Parameters
  ----------
  a : array_like
  shape : int or sequence of ints
  order : "C", optional
  copy : bool, optional
      Accepted: a reshape never copies, and results never share memory with their inputs.

  Returns
  -------
  Tensor
  """
  return rearranging.reshape(a, shape, order)


# ---------------------------------------------------------------------- elementwise
acos, asin, atan, atan2 = F.arccos, F.arcsin, F.arctan, F.arctan2
bitwise_invert, bitwise_left_shift, bitwise_right_shift = F.invert, F.left_shift, F.right_shift


def real(x, /) -> Tensor:
  """The real part (in the real dtype of a complex x; x itself for a real x).

  Parameters
  ----------
  x : array_like

  Returns
  -------
  Tensor
  """
  return T.asarray(x).real


def imag(x, /) -> Tensor:
  """The imaginary part (in the real dtype of a complex x; zeros of x's shape and dtype for a real x).

  Parameters
  ----------
  x : array_like

  Returns
  -------
  Tensor
  """
  return T.asarray(x).imag


conj = conjugate = F.conjugate


def cumulative_prod(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False) -> Tensor:
  """Cumulative product (the Array API's function): axis may be omitted only for arrays of at most one dimension.

  Parameters
  ----------
  x : array_like
  axis : int, optional
  dtype : data-type, optional
      As cumprod.
  include_initial : bool, optional
      Start with the product of no elements (one), so the axis grows by one.

  Returns
  -------
  Tensor
  """
  from minitensor.extra import cumulative
  return cumulative(x, axis, dtype, include_initial, "prod")


def angle(z, deg: builtins.bool = False) -> Tensor:
  """The argument of z: arctan2(imag, real), in radians (degrees with deg=True), as numpy.angle.

  Parameters
  ----------
  z : array_like
  deg : bool, default False

  Returns
  -------
  Tensor
      The real dtype of a complex z; float64 for integers, as NumPy.
  """
  t = T.asarray(z)
  a = F.arctan2(t.imag, t.real) if t.uop.dtype.is_complex else F.arctan2(0, t)
  return a * (180 / math.pi) if deg else a

# The dtype objects are bound last: from here on `bool` in this module is np.dtype("bool").
(bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float32, float64, complex64,
 complex128) = _DTYPES.values()
