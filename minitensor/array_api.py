"""The Array API (2024.12) namespace: what `Tensor.__array_namespace__()` (the minitensor module) adds to NumPy's names.

    dtypes                    NumPy dtype objects (mt.float32 == x.dtype), complex64 and complex128 included
    dtype functions           isdtype, result_type, can_cast, finfo, iinfo, astype
    inspection                __array_namespace_info__(): one device "cpu"
    creation                  NumPy's creation functions with the standard's keyword `device` (None or "cpu"):
                              array_api_creation.py
    elementwise               the standard's names of NumPy's ufuncs (acos = arccos, bitwise_invert = invert, ...);
                              acosh asinh atanh copysign hypot logaddexp signbit built from existing ops (complex
                              acosh asinh atanh: glibc's cacosh casinh catanh, as NumPy's):
                              acosh(x) = log1p(t + sqrt(t (t + 2))), t = x - 1 (log(x) + log 2 past 1e8)
                              asinh(x) = log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x|, sign restored (same cutoff)
                              atanh(x) = log1p(2a / (1 - a)) / 2, a = |x|, sign restored
                              hypot = max * sqrt(1 + (min / max)^2) (no overflow; inf wins over NaN)
                              logaddexp = max + log1p(exp(-|x1 - x2|)) (x1 == x2: x1 + log 2, so inf stays inf)
                              signbit = x < 0 or x is -0.0 (1 / x < 0); the sign bit of a NaN is not visible
                              (the IR has no bit casts): signbit(-nan) is False, unlike NumPy
    versions                  x.__array_namespace__(api_version=v) for v in 2021.12 ... 2024.12: the minitensor
                              module for 2024.12 (and None); for older versions a copy of it whose meshgrid and
                              broadcast_arrays return lists, as those versions say (2024.12: tuples)
    DLPack                    Tensor.__dlpack__ exports the realized read-only buffer (zero copy); from_dlpack
                              wraps a producer's memory without a copy when it is C-contiguous (methods.py)
    nextafter                 realizes and calls NumPy (the graph has no bit casts)
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
from typing import NamedTuple
import numpy as np
from minitensor import functions as F
from minitensor import movement, rearranging
from minitensor import tensor as T
from minitensor.array_api_creation import _device
from minitensor.backend.uop import Ops, UOp
from minitensor.tensor import Tensor, apply_ufunc, tensor_methods, where

__array_api_version__ = "2024.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")
__all__ = ["__array_api_version__", "__array_namespace_info__", "e", "pi", "inf", "nan", "newaxis",
           "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64",
           "complex64", "complex128", "isdtype", "result_type", "can_cast", "finfo", "iinfo", "astype",
           "from_dlpack", "clip", "expand_dims", "reshape",
           "acos", "asin", "atan", "atan2", "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift",
           "acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh", "copysign", "hypot", "logaddexp", "signbit",
           "real", "imag", "conj", "conjugate", "nextafter", "cumulative_prod", "angle"]

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


class finfo_object(NamedTuple):
  """finfo's result: the standard's attributes, as Python numbers."""
  bits: int
  eps: float
  max: float
  min: float
  smallest_normal: float
  dtype: np.dtype


class iinfo_object(NamedTuple):
  """iinfo's result: the standard's attributes, as Python numbers."""
  bits: int
  max: int
  min: int
  dtype: np.dtype


def finfo(type, /) -> finfo_object:
  """Machine limits of a floating-point dtype.

  Parameters
  ----------
  type : dtype or Tensor

  Returns
  -------
  finfo_object
      bits, eps, max, min, smallest_normal (Python floats) and dtype.
  """
  f = np.finfo(_as_dtype(type, "finfo"))      # of a complex dtype: its real part's limits, as the standard says
  return finfo_object(f.bits, float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), f.dtype)


def iinfo(type, /) -> iinfo_object:
  """Machine limits of an integer dtype.

  Parameters
  ----------
  type : dtype or Tensor

  Returns
  -------
  iinfo_object
      bits, max, min (Python ints) and dtype.
  """
  i = np.iinfo(_as_dtype(type, "iinfo"))
  return iinfo_object(i.bits, int(i.max), int(i.min), i.dtype)


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

  def devices(self) -> list[str]: return ["cpu"]

  def default_dtypes(self, *, device=None) -> dict:
    _device(device, "default_dtypes")
    return {"real floating": _DTYPES["float64"], "complex floating": _DTYPES["complex128"],
            "integral": _DTYPES["int64"], "indexing": _DTYPES["int64"]}

  def dtypes(self, *, device=None, kind=None) -> dict:
    _device(device, "dtypes")
    return {n: d for n, d in _DTYPES.items() if kind is None or isdtype(d, kind)}


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
  """The namespace of an Array API version: minitensor itself for None and 2024.12; for 2021.12 to 2023.12 a
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
  return ns


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
_LN2 = math.log(2.0)
_BIG = 1e8          # past this, sqrt(x^2 +- 1) is x to double precision, and x^2 may overflow float32


def _loop(ufunc: np.ufunc, *xs) -> tuple[list, np.dtype]:
  """The operands in the dtype NumPy's loop for ufunc computes in (float16 loops computed in float32), and the
  loop's output dtype; Python scalars stay weak."""
  dts = T.resolve_ufunc(ufunc, xs)
  calc = [np.dtype(np.float32) if d == np.float16 else d for d in dts[:-1]]
  return [x if isinstance(x, (int, float)) else T.asarray(x).astype(d) for x, d in zip(xs, calc)], dts[-1]


def _complex_op(op: Ops, t: Tensor) -> Tensor: return Tensor(UOp(op, (t.uop,)))
def _with_sign(x: Tensor, r: Tensor) -> Tensor: return where(signbit(x), -r, r)


def signbit(x, /) -> Tensor:
  """Whether the sign bit is set: x < 0, and -0.0 (NaN counts as positive; see the module notes).

  Parameters
  ----------
  x : array_like

  Returns
  -------
  Tensor
      bool.
  """
  (t,), _ = _loop(np.signbit, x)      # NumPy's loops are floating: integers are converted
  return (t < 0) | ((t == 0) & (F.arctan2(t, -1.0) < 0))      # -pi for -0.0 (1 / t would divide by zero)


def acosh(x, /) -> Tensor:
  """Inverse hyperbolic cosine (NaN below 1).

  Parameters
  ----------
  x : array_like

  Returns
  -------
  Tensor
      NumPy's result dtype (float64 for integers).
  """
  (t,), out = _loop(np.arccosh, x)
  if out.kind == "c": return _complex_op(Ops.ACOSH, t)
  small = t < _BIG                     # (each branch on arguments it takes: no overflow or log(0) of the other's)
  d = where(small, t, 1) - 1
  r = where(small, F.log1p(d + F.sqrt(d * (d + 2))), F.log(where(small, _BIG, t)) + _LN2)
  return where(t >= 1, r, nan).astype(out)


def asinh(x, /) -> Tensor:
  """Inverse hyperbolic sine.

  Parameters
  ----------
  x : array_like

  Returns
  -------
  Tensor
      NumPy's result dtype.
  """
  (t,), out = _loop(np.arcsinh, x)
  if out.kind == "c": return _complex_op(Ops.ASINH, t)
  a = F.absolute(t)
  small = a < _BIG
  s = where(small, a, 0)
  r = where(small, F.log1p(s + s * s / (1 + F.sqrt(1 + s * s))), F.log(where(small, _BIG, a)) + _LN2)
  return _with_sign(t, r).astype(out)


def atanh(x, /) -> Tensor:
  """Inverse hyperbolic tangent (+-inf at +-1, NaN beyond).

  Parameters
  ----------
  x : array_like

  Returns
  -------
  Tensor
      NumPy's result dtype.
  """
  (t,), out = _loop(np.arctanh, x)
  if out.kind == "c": return _complex_op(Ops.ATANH, t)
  a = F.absolute(t)
  return _with_sign(t, 0.5 * F.log1p(2 * a / (1 - a))).astype(out)


arccosh, arcsinh, arctanh = acosh, asinh, atanh


def copysign(x1, x2, /) -> Tensor:
  """|x1| with the sign of x2 (-0.0 counts as negative).

  Parameters
  ----------
  x1, x2 : array_like or Python scalar

  Returns
  -------
  Tensor
      NumPy's result dtype (floating).
  """
  (a, b), out = _loop(np.copysign, x1, x2)
  m = F.absolute(a)
  return where(signbit(b), -m, m).astype(out)


def hypot(x1, x2, /) -> Tensor:
  """sqrt(x1^2 + x2^2) without intermediate overflow or underflow; inf if either is infinite, even with NaN.

  Parameters
  ----------
  x1, x2 : array_like or Python scalar

  Returns
  -------
  Tensor
      NumPy's result dtype (floating).
  """
  (a, b), out = _loop(np.hypot, x1, x2)
  a, b = F.absolute(a), F.absolute(b)
  hi, lo = F.maximum(a, b), F.minimum(a, b)
  edge = (hi == 0) | F.isinf(hi)       # (0 / 0, inf / inf and inf * lo would raise flags NumPy does not)
  r = where(edge, 0, lo) / where(edge, 1, hi)
  h = hi * F.sqrt(1 + r * r)
  return where(F.isinf(a) | F.isinf(b), inf, h).astype(out)


def logaddexp(x1, x2, /) -> Tensor:
  """log(exp(x1) + exp(x2)) without overflow.

  Parameters
  ----------
  x1, x2 : array_like or Python scalar

  Returns
  -------
  Tensor
      NumPy's result dtype (floating).
  """
  (a, b), out = _loop(np.logaddexp, x1, x2)
  r = F.maximum(a, b) + F.log1p(F.exp(-F.absolute(a - b)))
  return where(a == b, a + _LN2, r).astype(out)


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


def conj(x, /) -> Tensor:
  """The complex conjugate: the imaginary part negated (x itself for a real x).

  Parameters
  ----------
  x : array_like

  Returns
  -------
  Tensor
  """
  return apply_ufunc(np.conjugate, x)


conjugate = conj


def nextafter(x1, x2, /) -> Tensor:
  """The next representable floating-point value after x1 towards x2 (realizes both and calls NumPy: the graph
  has no bit casts).

  Parameters
  ----------
  x1, x2 : array_like or Python scalar

  Returns
  -------
  Tensor
      NumPy's result dtype (floating).
  """
  (a, b), _ = _loop(np.nextafter, x1, x2)
  a, b = (np.asarray(v) if isinstance(v, Tensor) else v for v in (a, b))
  with np.errstate(all="ignore"): return T.asarray(np.nextafter(a, b))     # no warnings, as minitensor's kernels


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
