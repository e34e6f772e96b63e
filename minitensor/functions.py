"""NumPy-named module functions: the ufunc table as functions, reductions, and movement."""
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
    def fn(x, /): return apply_ufunc(f, x)
  else:
    def fn(x1, x2, /): return apply_ufunc(f, x1, x2)
  fn.__name__ = fn.__qualname__ = f.__name__
  fn.at = functools.partial(_at, f)
  fn.__doc__ = f"""Elementwise ``numpy.{f.__name__}`` as a lazy Tensor (NumPy's dtypes and broadcasting).

  Parameters
  ----------
  {'x' if f.nin == 1 else 'x1, x2'} : Tensor, array_like or Python scalar

  Returns
  -------
  Tensor
  """
  return fn


for _f in U.TABLE: globals()[_f.__name__] = _ufunc(_f)
divide = globals()["divide"]
abs = globals()["absolute"]
pow = globals()["power"]
mod = globals()["remainder"]
__all__ = [f.__name__ for f in U.TABLE] + ["abs", "pow", "mod", "copyto"]
