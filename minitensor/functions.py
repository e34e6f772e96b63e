"""NumPy-named module functions: the ufunc table (ufuncs.TABLE) as ufunc objects (ufunc_objects.py), one per ufunc;
clip and round, composed of those ufuncs with NumPy's rules for Python int bounds and negative decimals."""
from __future__ import annotations
import numpy as np
from minitensor import ufuncs as U
from minitensor.interop import copyto  # noqa: F401  (copyto: numpy.copyto on Tensors)
from minitensor.tensor import Tensor, apply_ufunc, asarray
from minitensor.ufunc_objects import ufunc

for _f in U.TABLE: globals()[_f.__name__] = ufunc(_f)
divide = true_divide = globals()["divide"]
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


__all__ = [f.__name__ for f in U.TABLE] + ["true_divide", "abs", "pow", "mod", "copyto", "clip", "round", "ufunc"]
