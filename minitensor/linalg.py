"""mt.linalg: the Array API's linear-algebra extension with numpy.linalg's names, signatures and exceptions.

    lazy (recorded in the graph, fused with what surrounds them, compiled by minitensor):
      matmul tensordot vecdot outer matrix_transpose diagonal trace   the module functions on the last two axes
      cross                  three products of slices along axis, stacked
      matrix_power           repeated squaring: about 2 log2(n) matmuls (n < 0 inverts first, which realizes)
      vector_norm            sum |x|^ord ** (1/ord); ord 2: sqrt(sum x^2); inf/-inf: max/min |x|; 0: count of nonzeros
      matrix_norm            'fro', 1, -1, inf, -inf: sums and max/min of |x| over the last two axes
      norm                   numpy.linalg.norm's dispatch onto vector_norm / matrix_norm
    realizing (the input is computed, then NumPy's LAPACK routine runs; the result is a realized Tensor):
      det slogdet inv solve cholesky qr svd svdvals eig eigvals eigh eigvalsh pinv matrix_rank lstsq,
      matrix_norm with ord 2, -2 or 'nuc' (singular values)

Errors are NumPy's: LinAlgError (numpy.linalg.LinAlgError, also mt.linalg.LinAlgError) for singular or
non-square matrices, with the operation and the shape in the message; ValueError for bad orders and shapes.
"""
from __future__ import annotations
import math
import operator
from typing import NamedTuple
import numpy as np
from numpy.linalg import LinAlgError
from minitensor import extra as E
from minitensor import manipulation as M
from minitensor import products as P
from minitensor import rearranging as R
from minitensor import tensor as T
from minitensor.tensor import Tensor, apply_ufunc, asarray

__all__ = ["LinAlgError", "matmul", "matrix_transpose", "vecdot", "tensordot", "outer", "trace", "diagonal", "cross",
           "matrix_power", "norm", "vector_norm", "matrix_norm", "det", "slogdet", "inv", "solve", "cholesky", "qr",
           "svd", "svdvals", "eig", "eigvals", "eigh", "eigvalsh", "pinv", "matrix_rank", "lstsq", "EigResult",
           "EighResult", "QRResult", "SVDResult", "SlogdetResult"]


class EigResult(NamedTuple):
  eigenvalues: Tensor
  eigenvectors: Tensor


class EighResult(NamedTuple):
  eigenvalues: Tensor
  eigenvectors: Tensor


class QRResult(NamedTuple):
  Q: Tensor
  R: Tensor


class SVDResult(NamedTuple):
  U: Tensor
  S: Tensor
  Vh: Tensor


class SlogdetResult(NamedTuple):
  sign: Tensor
  logabsdet: Tensor


def from_numpy(r: np.ndarray):
  """A NumPy result as a realized Tensor without a copy; the ndarray itself while minitensor has no dtype for it."""
  r = np.asarray(r)
  if not r.flags.c_contiguous: r = np.ascontiguousarray(r)    # (ascontiguousarray alone makes 0-d results 1-d)
  try: T._dtype(r.dtype)
  except TypeError: return r
  return Tensor._of(r)


def _lapack(name: str, x, *more, **kwargs):
  """numpy.linalg.<name> on the realized operands, its exceptions naming the operation and the shapes."""
  arrays = [np.asarray(asarray(a)) for a in (x,) + more]
  try: return getattr(np.linalg, name)(*arrays, **kwargs)
  except LinAlgError as e:
    shapes = ", ".join(str(a.shape) for a in arrays)
    raise LinAlgError(f"{name}: {e} (input shape{'s' if more else ''} {shapes})") from None


def _square(t: Tensor, name: str) -> None:
  if t.ndim < 2: raise LinAlgError(f"{name}: {t.ndim}-dimensional array given. Array must be at least two-dimensional")
  if t.shape[-1] != t.shape[-2]:
    raise LinAlgError(f"{name}: Last 2 dimensions of the array must be square, got shape {t.shape}")


# ---------------------------------------------------------------------- lazy
def matmul(x1, x2, /) -> Tensor:
  """x1 @ x2 (NumPy's rules: 1-D operands promoted, batches broadcast); lazy."""
  return P.matmul(x1, x2)


def matrix_transpose(x, /) -> Tensor:
  """The last two axes swapped (a view); lazy."""
  return R.matrix_transpose(x)


def tensordot(x1, x2, /, *, axes=2) -> Tensor:
  """Sum of products over axes (an int: the last of x1 with the first of x2; or two sequences of axes); lazy."""
  return P.tensordot(x1, x2, axes)


def vecdot(x1, x2, /, *, axis: int = -1) -> Tensor:
  """sum(conj(x1) * x2) along axis, the other axes broadcast; lazy."""
  return E.vecdot(x1, x2, axis=axis)


def outer(x1, x2, /) -> Tensor:
  """The outer product of two 1-D arrays, shape (x1.size, x2.size); lazy."""
  a, b = asarray(x1), asarray(x2)
  if a.ndim != 1 or b.ndim != 1:
    raise ValueError(f"outer: Input arrays must be one-dimensional, got shapes {a.shape} and {b.shape}")
  return E.outer(a, b)


def trace(x, /, *, offset: int = 0, dtype=None) -> Tensor:
  """Sums along the offset-th diagonals of the last two axes (NumPy's sum dtype unless dtype); lazy."""
  t = asarray(x)
  if t.ndim < 2: raise ValueError(f"trace: input must be at least 2-dimensional, got shape {t.shape}")
  return E.trace(t, offset, -2, -1, dtype)


def diagonal(x, /, *, offset: int = 0) -> Tensor:
  """The offset-th diagonals of the last two axes, as a last axis (a view); lazy."""
  t = asarray(x)
  if t.ndim < 2: raise ValueError(f"diagonal: input must be at least 2-dimensional, got shape {t.shape}")
  return E.diagonal(t, offset, -2, -1)


def cross(x1, x2, /, *, axis: int = -1) -> Tensor:
  """The cross product of 3-vectors along axis (of each operand), the other axes broadcast; lazy.

  Parameters
  ----------
  x1, x2 : array_like
      Size 3 along axis.
  axis : int, optional

  Returns
  -------
  Tensor
      The broadcast shape, the vectors along axis.
  """
  a, b = asarray(x1), asarray(x2)
  if a.ndim == 0 or b.ndim == 0:
    raise ValueError(f"cross: operands must be at least 1-D, got shapes {a.shape} and {b.shape}")
  a, b = R.moveaxis(a, axis, -1), R.moveaxis(b, axis, -1)
  if a.shape[-1] != 3 or b.shape[-1] != 3:
    raise ValueError(f"cross: both input arrays must be (arrays of) 3-dimensional vectors along axis {axis}, "
                     f"got shapes {a.shape} and {b.shape} (axis moved last)")
  (a0, a1, a2), (b0, b1, b2) = ([t[..., k] for k in range(3)] for t in (a, b))
  r = M.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
  return R.moveaxis(r, -1, axis)


def matrix_power(x, n, /) -> Tensor:
  """x raised to the integer power n by repeated squaring (lazy); n = 0: identities, n < 0: inv(x) ** -n
  (inv realizes).

  Parameters
  ----------
  x : array_like
      (..., M, M).
  n : int

  Returns
  -------
  Tensor
  """
  t = asarray(x)
  try: n = operator.index(n)
  except TypeError: raise TypeError(f"matrix_power: exponent must be an integer, got {n!r}") from None
  _square(t, "matrix_power")
  if n == 0: return asarray(np.broadcast_to(np.eye(t.shape[-1], dtype=t.dtype), t.shape))
  if n < 0: t, n = inv(t), -n
  result, p = None, t
  while True:
    if n & 1: result = p if result is None else P.matmul(result, p)
    n >>= 1
    if not n: return result.copy() if result is t else result     # never the caller's own Tensor
    p = P.matmul(p, p)


def _floating(t: Tensor) -> Tensor:
  """t as NumPy's norms see it: integers and bool as float64."""
  return t if t.dtype.kind in "fc" else t.astype(np.float64)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> Tensor:
  """The vector p-norm over axis (all axes when None, as one vector); lazy.

  Parameters
  ----------
  x : array_like
  axis : None, int or tuple of ints, optional
  keepdims : bool, optional
  ord : int, float, inf or -inf, optional
      2 (default; None too), 1, inf (max |x|), -inf (min |x|), 0 (the count of nonzeros), or any p:
      sum(|x|^p)^(1/p).

  Returns
  -------
  Tensor
      A real floating dtype (float64 for integer input).
  """
  t = _floating(asarray(x))
  if isinstance(ord, str): raise ValueError(f"vector_norm: invalid norm order {ord!r} for vectors")
  if ord is None: ord = 2
  a = abs(t)
  if ord == math.inf: return a.max(axis, keepdims, initial=0)      # an empty vector's norm is 0
  if ord == -math.inf: return a.min(axis, keepdims)
  if ord == 0: return (a != 0).sum(axis, dtype=a.dtype, keepdims=keepdims)
  if ord == 1: return a.sum(axis, keepdims=keepdims)
  if ord == 2: return apply_ufunc(np.sqrt, (a * a).sum(axis, keepdims=keepdims))
  return apply_ufunc(np.power, apply_ufunc(np.power, a, float(ord)).sum(axis, keepdims=keepdims), 1.0 / ord)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> Tensor:
  """The matrix norm of the last two axes: lazy for 'fro', 1, -1, inf, -inf; ord 2, -2 and 'nuc' take singular
  values from LAPACK (the input is realized).

  Parameters
  ----------
  x : array_like
      (..., M, N), at least 2-D.
  keepdims : bool, optional
      Keep the last two axes with size 1.
  ord : {'fro', 'nuc', 1, -1, 2, -2, inf, -inf, None}, optional
      None: 'fro'.

  Returns
  -------
  Tensor
  """
  t = _floating(asarray(x))
  if t.ndim < 2: raise ValueError(f"matrix_norm: input must be at least 2-dimensional, got shape {t.shape}")
  a = abs(t)
  if ord is None or ord == "fro": r = apply_ufunc(np.sqrt, (a * a).sum((-2, -1)))
  elif ord in (1, -1): r = (a.sum(-2).max(-1, initial=0) if ord == 1 else a.sum(-2).min(-1))
  elif ord in (math.inf, -math.inf): r = (a.sum(-1).max(-1, initial=0) if ord > 0 else a.sum(-1).min(-1))
  elif ord in (2, -2, "nuc"):
    s = svdvals(t)
    r = s.max(-1, initial=0) if ord == 2 else s.min(-1) if ord == -2 else s.sum(-1)
  else: raise ValueError(f"matrix_norm: invalid norm order {ord!r} for matrices")
  return r.reshape(r.shape + (1, 1)) if keepdims else r


def norm(x, ord=None, axis=None, keepdims: bool = False) -> Tensor:
  """numpy.linalg.norm: with axis None, the 2-norm of the flattened array (ord None) or the vector/matrix norm
  of a 1-D/2-D array; an int axis: vector_norm; a pair of axes: matrix_norm. Lazy except ord 2, -2, 'nuc' on
  matrices.

  Parameters
  ----------
  x : array_like
  ord : {None, 'fro', 'nuc', int, float, inf, -inf}, optional
  axis : None, int or 2-tuple of ints, optional
  keepdims : bool, optional

  Returns
  -------
  Tensor
  """
  t = _floating(asarray(x))
  if axis is None:
    if ord is None:
      r = vector_norm(t.reshape(-1))
      return r.reshape((1,) * t.ndim) if keepdims else r
    if t.ndim not in (1, 2):
      raise ValueError(f"norm: Improper number of dimensions to norm (shape {t.shape} with ord={ord!r})")
    axis = tuple(range(t.ndim))
  axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
  if len(axes) == 1: return vector_norm(t, axis=axes[0], keepdims=keepdims, ord=2 if ord is None else ord)
  if len(axes) != 2: raise ValueError(f"norm: Improper number of dimensions to norm (axis={axis!r})")
  r0, r1 = (T.normalize_axes(a, t.ndim, "norm")[0] for a in axes)
  if r0 == r1: raise ValueError(f"norm: Duplicate axes given (axis={axis!r})")
  rest = [k for k in range(t.ndim) if k not in (r0, r1)]
  r = matrix_norm(t.transpose(rest + [r0, r1]), ord="fro" if ord is None else ord)
  if keepdims: r = r.reshape(tuple(1 if k in (r0, r1) else s for k, s in enumerate(t.shape)))
  return r


# ---------------------------------------------------------------------- realizing: NumPy's LAPACK routines
def det(x, /) -> Tensor:
  """The determinant of each matrix of the last two axes (realizes; LAPACK getrf through NumPy)."""
  return from_numpy(_lapack("det", x))


def slogdet(x, /) -> SlogdetResult:
  """sign and log|det| of each matrix (realizes; LAPACK through NumPy): det = sign * exp(logabsdet)."""
  r = _lapack("slogdet", x)
  return SlogdetResult(from_numpy(r.sign), from_numpy(r.logabsdet))


def inv(x, /) -> Tensor:
  """The inverse of each matrix (realizes; LAPACK gesv through NumPy); LinAlgError when singular."""
  return from_numpy(_lapack("inv", x))


def solve(x1, x2, /) -> Tensor:
  """The solution of x1 @ x = x2 (realizes; LAPACK gesv through NumPy); x2 is a vector only when 1-D, as
  NumPy 2 and the Array API say; LinAlgError when x1 is singular."""
  return from_numpy(_lapack("solve", x1, x2))


def cholesky(x, /, *, upper: bool = False) -> Tensor:
  """The Cholesky factor L (x = L @ L^H; upper: U with x = U^H @ U) of each Hermitian positive-definite matrix
  (realizes; LAPACK potrf through NumPy); LinAlgError when not positive-definite."""
  return from_numpy(_lapack("cholesky", x, upper=upper))


def qr(x, /, mode: str = "reduced"):
  """The QR factorization of each matrix (realizes; LAPACK geqrf/orgqr through NumPy).

  Parameters
  ----------
  x : array_like
      (..., M, N).
  mode : {"reduced", "complete", "r", "raw"}, optional

  Returns
  -------
  QRResult(Q, R) for "reduced"/"complete"; R alone for "r"; (h, tau) for "raw"
  """
  r = _lapack("qr", x, mode=mode)
  if mode == "r": return from_numpy(r)
  if mode == "raw": return tuple(from_numpy(a) for a in r)
  return QRResult(from_numpy(r.Q), from_numpy(r.R))


def svd(x, /, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
  """The singular value decomposition x = U @ diag(S) @ Vh (realizes; LAPACK gesdd through NumPy).

  Parameters
  ----------
  x : array_like
      (..., M, N).
  full_matrices : bool, optional
      U (..., M, M) and Vh (..., N, N); else (..., M, K) and (..., K, N), K = min(M, N).
  compute_uv : bool, optional
      False: S alone.
  hermitian : bool, optional
      x is Hermitian (NumPy uses an eigendecomposition).

  Returns
  -------
  SVDResult(U, S, Vh), or S
  """
  r = _lapack("svd", x, full_matrices=full_matrices, compute_uv=compute_uv, hermitian=hermitian)
  return SVDResult(*(from_numpy(a) for a in r)) if compute_uv else from_numpy(r)


def svdvals(x, /) -> Tensor:
  """The singular values of each matrix, descending (realizes; LAPACK through NumPy)."""
  return from_numpy(_lapack("svdvals", x))


def _complex(a: np.ndarray) -> np.ndarray:
  return a.astype(np.result_type(a.dtype, np.complex64)) if a.dtype.kind != "c" else a


def eig(x, /) -> EigResult:
  """Eigenvalues and right eigenvectors (columns) of each square matrix (realizes; LAPACK geev through NumPy).
  Complex always, as the Array API 2025.12 says (complex64 for float32, complex128 for float64), where NumPy
  returns a real result when every eigenvalue is real."""
  r = _lapack("eig", x)
  return EigResult(from_numpy(_complex(r.eigenvalues)), from_numpy(_complex(r.eigenvectors)))


def eigvals(x, /) -> Tensor:
  """The eigenvalues of each square matrix, complex always as eig's (realizes; LAPACK geev through NumPy)."""
  return from_numpy(_complex(_lapack("eigvals", x)))


def eigh(x, /, UPLO: str = "L") -> EighResult:
  """Eigenvalues (ascending) and eigenvectors of each Hermitian matrix, from its UPLO triangle (realizes; LAPACK
  syevd/heevd through NumPy)."""
  r = _lapack("eigh", x, UPLO=UPLO)
  return EighResult(from_numpy(r.eigenvalues), from_numpy(r.eigenvectors))


def eigvalsh(x, /, UPLO: str = "L") -> Tensor:
  """The eigenvalues (ascending) of each Hermitian matrix (realizes; LAPACK through NumPy)."""
  return from_numpy(_lapack("eigvalsh", x, UPLO=UPLO))


def pinv(x, /, rcond=None, hermitian: bool = False, *, rtol=None) -> Tensor:
  """The Moore-Penrose pseudo-inverse; singular values below rtol (or NumPy's rcond) times the largest are
  dropped (realizes; an SVD through NumPy)."""
  kw = {} if rtol is None else {"rtol": rtol}
  return from_numpy(_lapack("pinv", x, rcond=rcond, hermitian=hermitian, **kw))


def matrix_rank(x, /, tol=None, hermitian: bool = False, *, rtol=None) -> Tensor:
  """The number of singular values above tol (absolute) or rtol times the largest (realizes; an SVD through
  NumPy)."""
  return from_numpy(np.asarray(_lapack("matrix_rank", x, tol=tol, hermitian=hermitian, rtol=rtol)))


def lstsq(a, b, /, rcond=None) -> tuple:
  """The least-squares solution of a @ x = b (realizes; LAPACK gelsd through NumPy).

  Returns
  -------
  (x, residuals, rank, s)
      Tensors, except rank: a Python int, as NumPy's.
  """
  x, res, rank, s = _lapack("lstsq", a, b, rcond=rcond)
  return from_numpy(x), from_numpy(res), int(rank), from_numpy(s)
