"""NumPy-named module functions: the ufunc table (ufuncs.TABLE) as functions, one per ufunc, made by `_ufunc`."""
from __future__ import annotations
import functools
import numpy as np
from minitensor import ufuncs as U
from minitensor.interop import copyto, ufunc_at  # noqa: F401  (copyto: numpy.copyto on Tensors)
from minitensor.tensor import Tensor, apply_ufunc


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
__all__ = [f.__name__ for f in U.TABLE] + ["abs", "pow", "mod", "copyto"]
