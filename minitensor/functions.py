"""NumPy-named module functions: the ufunc table (ufuncs.TABLE) as functions, one per ufunc, made by `_ufunc`; clip
and round, composed of those ufuncs with NumPy's rules for Python int bounds and negative decimals."""
from __future__ import annotations
import functools
import numpy as np
from minitensor import ufuncs as U
from minitensor.interop import copyto, ufunc_at  # noqa: F401  (copyto: numpy.copyto on Tensors)
from minitensor.tensor import Tensor, apply_ufunc, asarray


def _at(f: np.ufunc, a, indices, b=None) -> None:
  """`ufunc.at(a, indices, b)`: unbuffered in place, as NumPy's (repeated indices accumulate). On a Tensor the
  result is written into it, so its aliases and views see it; on an ndarray NumPy does it."""
  if isinstance(a, Tensor): ufunc_at(f, a, indices, b)
  else: f.at(a, indices, *(() if b is None else (b,)))


def _ufunc(f: np.ufunc):
  # explicit positional-only parameters (the Array API's `add(x1, x2, /)`), so inspect.signature shows them
  if f.nin == 1:
    def fn(x, /):
      """Elementwise: the NumPy ufunc of this function's name (``numpy.<name>``) as a lazy Tensor, with NumPy's
      dtypes. `<name>.at(a, indices)` is ``numpy.<name>.at``, unbuffered in place (into a Tensor: its aliases and
      views see it).

      Parameters
      ----------
      x : Tensor, array_like or Python scalar

      Returns
      -------
      Tensor
      """
      return apply_ufunc(f, x)
  else:
    def fn(x1, x2, /):
      """Elementwise: the NumPy ufunc of this function's name (``numpy.<name>``) as a lazy Tensor, with NumPy's
      dtypes and broadcasting. `<name>.at(a, indices, b)` is ``numpy.<name>.at``, unbuffered in place (into a
      Tensor: its aliases and views see it; repeated indices accumulate).

      Parameters
      ----------
      x1, x2 : Tensor, array_like or Python scalar

      Returns
      -------
      Tensor
      """
      return apply_ufunc(f, x1, x2)
  fn.__name__ = fn.__qualname__ = f.__name__
  fn.at = functools.partial(_at, f)
  return fn


for _f in U.TABLE: globals()[_f.__name__] = _ufunc(_f)
divide = globals()["divide"]
abs = globals()["absolute"]
pow = globals()["power"]
mod = globals()["remainder"]


def clip(a, a_min=None, a_max=None) -> Tensor:
  """Values of a limited to [a_min, a_max]: min(max(a, a_min), a_max), NumPy's clip. As NumPy 2, a Python int
  bound past the end of a's integer range on its own side clips nothing (clip(int8_t, -1000, 1000) is int8_t);
  past the other end it raises OverflowError.

  Parameters
  ----------
  a : array_like
  a_min, a_max : scalar, array_like or None

  Returns
  -------
  Tensor
  """
  a = asarray(a)
  d = a.uop.dtype
  if d.is_int and type(a_min) is int and a_min < d.min: a_min = None
  if d.is_int and type(a_max) is int and a_max > d.max: a_max = None
  if a_min is not None: a = apply_ufunc(np.maximum, a, a_min)
  if a_max is not None: a = apply_ufunc(np.minimum, a, a_max)
  return a


def round(a, decimals: int = 0) -> Tensor:
  """Values rounded half to even to `decimals` digits (NumPy's round), in NumPy's steps: rint(a * 10**d) / 10**d,
  or rint(a / 10**-d) * 10**-d for d < 0. Integers are unchanged for d >= 0, rounded in float64 (and wrapped
  back) for d < 0; bool rounds to float16 for d = 0 and raises TypeError otherwise.

  Parameters
  ----------
  a : array_like
  decimals : int, default 0

  Returns
  -------
  Tensor
  """
  a = asarray(a)
  d = a.uop.dtype
  if decimals == 0: return a if d.is_int else apply_ufunc(np.rint, a)
  if d.is_bool: raise TypeError(f"round: cannot cast the float64 result back to bool (decimals={decimals})")
  if d.is_int and decimals > 0: return a
  if decimals > 0: return apply_ufunc(np.rint, a * 10.0 ** decimals) / 10.0 ** decimals
  f = 10 ** -decimals if d.is_int else 10.0 ** -decimals
  return (apply_ufunc(np.rint, a / f) * f).astype(d)


__all__ = [f.__name__ for f in U.TABLE] + ["abs", "pow", "mod", "copyto", "clip", "round"]
