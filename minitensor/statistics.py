"""tri, cov and corrcoef with NumPy's names, results, warnings and errors, built lazily.

    tri        two iotas compared (rows >= cols - k), as NumPy's greater_equal.outer: only the N + M integers of
               the iotas are data
    cov        the observations (rows are variables) centred by their mean, the Gram matrix of the centred rows
               by matmul, times 1 / fact, the axes of size 1 squeezed away, in NumPy's steps and dtypes
    corrcoef   cov divided by the outer product of the square roots of its diagonal, clipped to [-1, 1]

Everything computed from the data is a graph. The weights of cov are realized at the call: NumPy validates
them by value (integral, non-negative, not summing to zero) and the divisor depends on their sum, so the
"Degrees of freedom <= 0" RuntimeWarning and every error come at the call, as NumPy's. A divisor <= 0 makes
the scale inf, as in NumPy: zeros become NaN, other entries +-inf.
"""
from __future__ import annotations
import warnings
import numpy as np
from minitensor.creation import full
from minitensor.extra import diagonal
from minitensor.functions import clip
from minitensor.manipulation import _concatenate
from minitensor.products import matmul
from minitensor.tensor import Tensor, _dtype, apply_ufunc, asarray

__all__ = ["tri", "cov", "corrcoef"]


def _min_int(low, high) -> type:
  """The smallest integer dtype holding [low, high] (the iota dtypes of NumPy's tri)."""
  for d in (np.int8, np.int16, np.int32):
    if np.iinfo(d).min <= low and high <= np.iinfo(d).max: return d
  return np.int64


def tri(N: int, M: int | None = None, k: int = 0, dtype=float) -> Tensor:
  """An (N, M) array with ones at and below the k-th diagonal and zeros elsewhere.

  Parameters
  ----------
  N : int
      Number of rows.
  M : int, optional
      Number of columns (default N).
  k : int, optional
      The sub-diagonal at and below which the array is filled: 0 the main diagonal, k < 0 below it, k > 0 above.
  dtype : data-type, optional
      Default float64.

  Returns
  -------
  Tensor
      T[i, j] == 1 for j <= i + k, else 0. The sizes follow NumPy's arange of the arguments (a negative size
      gives an empty axis, as NumPy).
  """
  M = N if M is None else M
  d = _dtype(dtype)
  rows = np.arange(N, dtype=_min_int(0, N)).astype(np.int64)
  cols = np.arange(-k, M - k, dtype=_min_int(-k, M - k)).astype(np.int64)
  if not rows.size or not cols.size: return full((rows.size, cols.size), 0, d)
  return (asarray(rows).reshape(rows.size, 1) >= asarray(cols).reshape(1, cols.size)).astype(d.np)


def _observations(x: Tensor, d, transpose: bool) -> Tensor:
  """x as 2-D rows of variables (np.array(x, ndmin=2, dtype=d), transposed when asked)."""
  x = x.reshape((1,) * (2 - x.ndim) + x.shape).astype(d.np)
  return x.T if transpose else x


def _weights(w, n: int, name: str) -> np.ndarray:
  """fweights or aweights as a float64 ndarray, checked as NumPy checks them (same exception types)."""
  w = np.asarray(w.numpy() if isinstance(w, Tensor) else w, dtype=float)
  if name == "fweights" and not np.all(w == np.around(w)): raise TypeError(f"cov: fweights must be integer, got {w}")
  if w.ndim > 1: raise RuntimeError(f"cov: cannot handle multidimensional {name} (shape {w.shape})")
  if w.ndim == 0: raise IndexError(f"cov: {name} must be 1-D with one weight per observation, got a scalar")
  if w.shape[0] != n: raise RuntimeError(f"cov: incompatible numbers of samples ({n}) and {name} ({w.shape[0]})")
  if (w < 0).any(): raise ValueError(f"cov: {name} cannot be negative, got {w}")
  return w


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof: int | None = None, fweights=None, aweights=None,
        *, dtype=None) -> Tensor:
  """The covariance matrix of the variables in m (and y), as numpy.cov.

  Parameters
  ----------
  m : array_like
      At most 2-D: each row a variable and each column an observation (the transpose when rowvar is False);
      a 1-D m is one variable.
  y : array_like, optional
      More variables, in the same layout, joined after m's.
  rowvar : bool, optional
  bias : bool, optional
      Normalize by N (True) instead of N - 1; ignored when ddof is given.
  ddof : int, optional
      The divisor is N - ddof (a weighted form of it with weights). A divisor <= 0 warns (RuntimeWarning) and
      the result is inf / NaN, as NumPy's.
  fweights : 1-D array_like of non-negative integers, optional
      How many times each observation occurs.
  aweights : 1-D array_like of non-negative numbers, optional
      Importance weights of the observations.
  dtype : data-type, optional
      The dtype of the computation; default float64 or wider (NumPy's result_type(m, y, float64)). Weights
      compute the Gram matrix in float64, as NumPy. A non-float dtype raises TypeError (NumPy cannot subtract
      the mean in place).

  Returns
  -------
  Tensor
      (V, V) for V variables; 0-d for one variable; (0, 0) float64 when m has no variables.
  """
  if ddof is not None and ddof != int(ddof): raise ValueError(f"cov: ddof must be integer, got {ddof!r}")
  mt_, yt = asarray(m), None if y is None else asarray(y)
  for name, t in (("m", mt_), ("y", yt)):
    if t is not None and t.ndim > 2: raise ValueError(f"cov: {name} has more than 2 dimensions (shape {t.shape})")
  if dtype is None: dtype = np.result_type(mt_.dtype, *(() if yt is None else (yt.dtype,)), np.float64)
  d = _dtype(dtype)
  X = _observations(mt_, d, not rowvar and mt_.ndim != 1)
  if X.shape[0] == 0: return full((0, 0), 0, np.float64)
  if yt is not None:
    Y = _observations(yt, d, False)
    X = _concatenate([X, Y.T if not rowvar and Y.shape[0] != 1 else Y], 0, None, "same_kind", "cov")
  ddof = int(ddof) if ddof is not None else 0 if bias else 1
  n = X.shape[1]
  f = None if fweights is None else _weights(fweights, n, "fweights")
  a = None if aweights is None else _weights(aweights, n, "aweights")
  w = f if a is None else a if f is None else f * a
  if w is None: fact = n - ddof
  else:
    w_sum = w.sum()
    if w_sum == 0: raise ZeroDivisionError("cov: Weights sum to zero, can't be normalized")
    fact = w_sum if ddof == 0 else w_sum - ddof if a is None else w_sum - ddof * np.sum(w * a) / w_sum
  if fact <= 0: warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
  if not d.is_float:
    raise TypeError(f"cov: Cannot cast ufunc 'subtract' output from dtype('float64') to dtype('{d.name}') with casting "
                    "rule 'same_kind' (the mean cannot be subtracted in place; use a float dtype)")
  scale = 1 / float(fact) if fact > 0 else np.inf
  if w is None: Xc = X - X.mean(axis=1, keepdims=True)
  else:   # NumPy's weighted mean is float64 (the weights are); the centred rows go back to d in place
    wt = asarray(w)
    Xc = (X - (X * wt).sum(axis=1, keepdims=True) / w_sum).astype(d.np)
  c = matmul(Xc, (Xc if w is None else Xc * wt).T)
  # NumPy multiplies by a float64 scalar in place: float64 arithmetic, rounded back to c's dtype
  c = (c.astype(np.float64) * scale).astype(c.dtype) if c.dtype != np.float64 else c * scale
  return c.squeeze()


def corrcoef(x, y=None, rowvar: bool = True, *, dtype=None) -> Tensor:
  """Pearson correlation coefficients, as numpy.corrcoef: cov(x, y, rowvar) normalized by its diagonal.

  Parameters
  ----------
  x : array_like
      At most 2-D, as m of cov.
  y : array_like, optional
  rowvar : bool, optional
  dtype : data-type, optional
      As cov's.

  Returns
  -------
  Tensor
      (V, V) with entries clipped to [-1, 1]; for one variable the 0-d c / c (1.0, or NaN for a zero, NaN or
      inf variance). A variable of zero variance gives NaN (or inf) entries, as NumPy.
  """
  c = cov(x, y, rowvar, dtype=dtype)
  if c.ndim == 0: return c / c
  s = apply_ufunc(np.sqrt, diagonal(c))
  c = c / s.reshape(-1, 1) / s.reshape(1, -1)
  return clip(c, -1, 1)
