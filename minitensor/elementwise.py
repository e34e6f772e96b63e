"""Elementwise functions that are NumPy ufuncs outside the op table, built from existing ops (complex acosh asinh
atanh: glibc's cacosh casinh catanh, as NumPy's), exported as ufunc objects (ufunc_objects.py) with NumPy's names
and the Array API's:

    acosh(x) = log1p(t + sqrt(t (t + 2))), t = x - 1 (log(x) + log 2 past 1e8)
    asinh(x) = log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x|, sign restored (same cutoff)
    atanh(x) = log1p(2a / (1 - a)) / 2, a = |x|, sign restored
    hypot = max * sqrt(1 + (min / max)^2) (no overflow; inf wins over NaN)
    logaddexp = max + log1p(exp(-|x1 - x2|)) (x1 == x2: x1 + log 2, so inf stays inf)
    nextafter               realizes its operands and calls NumPy (the graph has no bit casts)
    copysign                |x1| with the sign bit of x2 (the op table's SIGNBIT: also of -0.0 and -NaN)
    degrees rad2deg radians deg2rad   x * (180 / pi), x * (pi / 180)
    fabs cbrt               |x|; sign(x) |x|^(1/3) with one Newton step (within an ulp or two of C's cbrt)
    float_power             power in float64 (complex128 for complex)
    logaddexp2              max + log2(1 + 2^-|x1 - x2|) (x1 == x2: x1 + 1)
    heaviside               0 below zero, 1 above, x2 at zero, NaN for NaN
    divmod modf             (floor_divide, remainder); (|x - trunc(x)| with x's sign, trunc(x)), +-inf: (+-0, +-inf)
"""
from __future__ import annotations
import math
import numpy as np
from minitensor import functions as F
from minitensor import tensor as T
from minitensor.backend.uop import Ops, UOp
from minitensor.tensor import Tensor, where
from minitensor.ufunc_objects import ufunc

__all__ = ["acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh", "copysign", "hypot", "logaddexp",
           "nextafter", "degrees", "rad2deg", "radians", "deg2rad", "fabs", "cbrt", "float_power", "logaddexp2",
           "heaviside", "divmod", "modf"]
_LN2 = math.log(2.0)
_BIG = 1e8          # past this, sqrt(x^2 +- 1) is x to double precision, and x^2 may overflow float32


def _loop(ufunc: np.ufunc, *xs) -> tuple[list, np.dtype]:
  """The operands in the dtype NumPy's loop for ufunc computes in (float16 loops computed in float32), and the
  loop's output dtype; Python scalars stay weak."""
  dts = T.resolve_ufunc(ufunc, xs)
  calc = [np.dtype(np.float32) if d == np.float16 else d for d in dts[:-1]]
  return [x if isinstance(x, (int, float)) else T.asarray(x).astype(d) for x, d in zip(xs, calc)], dts[-1]


def _complex_op(op: Ops, t: Tensor) -> Tensor: return Tensor(UOp(op, (t.uop,)))
def _with_sign(x: Tensor, r: Tensor) -> Tensor: return where(F.signbit(x), -r, r)


def _acosh(x, /) -> Tensor:
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
  d = t - 1
  r = where(t < _BIG, F.log1p(d + F.sqrt(d * (d + 2))), F.log(t) + _LN2)
  return where(t >= 1, r, math.nan).astype(out)


def _asinh(x, /) -> Tensor:
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
  r = where(a < _BIG, F.log1p(a + a * a / (1 + F.sqrt(1 + a * a))), F.log(a) + _LN2)
  return _with_sign(t, r).astype(out)


def _atanh(x, /) -> Tensor:
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




def _copysign(x1, x2, /) -> Tensor:
  """|x1| with the sign bit of x2 (also of -0.0 and of a negative NaN)."""
  (a, b), out = _loop(np.copysign, x1, x2)
  m = F.absolute(a)
  return where(F.signbit(b), -m, m).astype(out)


def _hypot(x1, x2, /) -> Tensor:
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
  r = lo / hi
  h = where(hi == 0, 0, hi * F.sqrt(1 + r * r))
  return where(F.isinf(a) | F.isinf(b), math.inf, h).astype(out)


def _logaddexp(x1, x2, /) -> Tensor:
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


def _nextafter(x1, x2, /) -> Tensor:
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



acosh = arccosh = ufunc(np.arccosh, _acosh)
asinh = arcsinh = ufunc(np.arcsinh, _asinh)
atanh = arctanh = ufunc(np.arctanh, _atanh)
copysign, hypot, logaddexp = ufunc(np.copysign, _copysign), ufunc(np.hypot, _hypot), ufunc(np.logaddexp, _logaddexp)
nextafter = ufunc(np.nextafter, _nextafter)


def _scaled(ufunc_: np.ufunc, c: float):
  def f(x, /) -> Tensor:
    """x times a constant, in NumPy's loop dtype."""
    (t,), out = _loop(ufunc_, x)
    return (t * c).astype(out)
  return f


def _fabs(x, /) -> Tensor:
  """|x| in NumPy's floating loop dtype."""
  (t,), out = _loop(np.fabs, x)
  return F.absolute(t).astype(out)


def _cbrt(x, /) -> Tensor:
  """The real cube root: sign(x) |x|^(1/3), refined by one Newton step (1/3 is inexact: pow alone is off by
  ln|x| * 2e-17 relative, up to 60 ulp)."""
  (t,), out = _loop(np.cbrt, x)
  a = F.absolute(t)
  y = F.power(a, 1.0 / 3.0)
  y = where((a == 0) | F.isinf(a), y, y - (y - a / (y * y)) / 3)
  return _with_sign(t, y).astype(out)


def _float_power(x1, x2, /) -> Tensor:
  """x1 ** x2 in float64 (complex128 when either is complex)."""
  (a, b), out = _loop(np.float_power, x1, x2)
  return F.power(a, b).astype(out)


def _logaddexp2(x1, x2, /) -> Tensor:
  """log2(2^x1 + 2^x2) without overflow."""
  (a, b), out = _loop(np.logaddexp2, x1, x2)
  r = F.maximum(a, b) + F.log1p(F.exp2(-F.absolute(a - b))) / _LN2
  return where(a == b, a + 1, r).astype(out)


def _heaviside(x1, x2, /) -> Tensor:
  """0 where x1 < 0, 1 where x1 > 0, x2 where x1 == 0, NaN where x1 is NaN."""
  (a, b), out = _loop(np.heaviside, x1, x2)
  return where(a < 0, 0, where(a > 0, 1, where(a == 0, b, a))).astype(out)


def _divmod(x1, x2, /) -> tuple[Tensor, Tensor]:
  """(x1 // x2, x1 % x2), NumPy's floor division and remainder."""
  return F.floor_divide(x1, x2), F.remainder(x1, x2)


def _modf(x, /) -> tuple[Tensor, Tensor]:
  """(fractional part, integral part), both with x's sign; (+-0, +-inf) for +-inf."""
  (t,), out = _loop(np.modf, x)
  i = F.trunc(t)
  frac = where(F.isinf(t), 0.0, F.absolute(t - i))
  return _with_sign(t, frac).astype(out), i.astype(out)


degrees, rad2deg = (ufunc(f, _scaled(f, 180 / math.pi)) for f in (np.degrees, np.rad2deg))
radians, deg2rad = (ufunc(f, _scaled(f, math.pi / 180)) for f in (np.radians, np.deg2rad))
fabs, cbrt, float_power = ufunc(np.fabs, _fabs), ufunc(np.cbrt, _cbrt), ufunc(np.float_power, _float_power)
logaddexp2, heaviside = ufunc(np.logaddexp2, _logaddexp2), ufunc(np.heaviside, _heaviside)
divmod, modf = ufunc(np.divmod, _divmod), ufunc(np.modf, _modf)
