"""numpy.emath for Tensors: the functions whose result is complex where the real function is out of its domain.

`mt.emath.sqrt(-1)` is 1j, `mt.emath.log(-1)` is pi*1j, as NumPy's. Whether the result is real or complex
depends on the values, so these compute on the realized input with numpy.emath and return Tensors of NumPy's
dtypes (float64 when every value is in the domain, else complex128).
"""
from __future__ import annotations
import numpy as np
from minitensor.interop import to_numpy
from minitensor.tensor import Tensor, asarray

__all__ = ["sqrt", "log", "log2", "log10", "logn", "power", "arccos", "arcsin", "arctanh"]


def sqrt(x) -> Tensor:
  """The square root; complex for negative inputs, as numpy.emath.sqrt."""
  return asarray(np.emath.sqrt(to_numpy(x)))


def log(x) -> Tensor:
  """The natural logarithm; complex for negative inputs, as numpy.emath.log."""
  return asarray(np.emath.log(to_numpy(x)))


def log2(x) -> Tensor:
  """The base-2 logarithm; complex for negative inputs, as numpy.emath.log2."""
  return asarray(np.emath.log2(to_numpy(x)))


def log10(x) -> Tensor:
  """The base-10 logarithm; complex for negative inputs, as numpy.emath.log10."""
  return asarray(np.emath.log10(to_numpy(x)))


def logn(n, x) -> Tensor:
  """The base-n logarithm of x; complex for negative inputs, as numpy.emath.logn."""
  return asarray(np.emath.logn(to_numpy(n), to_numpy(x)))


def power(x, p) -> Tensor:
  """x ** p; complex for negative x with a non-integer p, as numpy.emath.power."""
  return asarray(np.emath.power(to_numpy(x), to_numpy(p)))


def arccos(x) -> Tensor:
  """The inverse cosine; complex where abs(x) > 1, as numpy.emath.arccos."""
  return asarray(np.emath.arccos(to_numpy(x)))


def arcsin(x) -> Tensor:
  """The inverse sine; complex where abs(x) > 1, as numpy.emath.arcsin."""
  return asarray(np.emath.arcsin(to_numpy(x)))


def arctanh(x) -> Tensor:
  """The inverse hyperbolic tangent; complex where abs(x) > 1, as numpy.emath.arctanh."""
  return asarray(np.emath.arctanh(to_numpy(x)))
