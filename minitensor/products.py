"""Matrix and tensor products: matmul (the @ operator), dot and tensordot. A product is a broadcast multiply and
one REDUCE over the shared axis, which the backend lowers to a tiled GEMM; complex products run as four real ones.
float16 operands are multiplied and summed in float32, rounded to float16 once at the end, as NumPy's are."""
from __future__ import annotations
import numpy as np
from numpy.exceptions import AxisError
from minitensor import ufuncs as U
from minitensor.backend.dtype import dtypes
from minitensor.backend.uop import Ops, UOp, prod
from minitensor.numpy_rules import PRODUCT_ACC, broadcast_shapes
from minitensor.tensor import Tensor, _lazy, asarray, defers, foreign, tensor_methods


def matmul(a, b) -> Tensor:
  """a @ b with NumPy's rules: 1-D operands are promoted and the added axis removed, batches broadcast.

  Parameters
  ----------
  a, b : array_like
      At least 1-D.

  Returns
  -------
  Tensor
  """
  if type(a) is Tensor and type(b) is Tensor and len(sa := (ua := a.uop).shape) == 2 and \
      len(sb := (ub := b.uop).shape) == 2 and (d := ua.dtype) is ub.dtype and d in _FLOATS and (k := sa[1]) == sb[0] \
      and k:      # (two float32 or float64 matrices: the general steps' graph, built directly; 26 -> 17 us)
    m, n = sa[0], sb[1]
    return _lazy((ua.reshape((m, 1, k)).broadcast((m, n, k)) *
                  ub.permute((1, 0)).reshape((1, n, k)).broadcast((m, n, k))).reduce(Ops.ADD, 1))
  a, b = asarray(a), asarray(b)
  ua, ub = a.uop, b.uop
  sa, sb = ua.shape, ub.shape
  if not sa or not sb:
    raise ValueError("matmul: Input operand does not have enough dimensions (scalars are not allowed)")
  a2 = ua.reshape((1, sa[0])) if len(sa) == 1 else ua
  b2 = ub.reshape((sb[0], 1)) if len(sb) == 1 else ub
  (m, k), (k2, n) = a2.shape[-2:], b2.shape[-2:]
  if k != k2: raise ValueError(f"matmul: mismatch in core dimension: {sa} @ {sb} ({k} != {k2})")
  batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2], op="matmul")
  if (acc := _RESULT.get((ua.dtype, ub.dtype))) is None:
    acc = _RESULT[(ua.dtype, ub.dtype)] = dtypes.from_numpy(np.result_type(a.dtype, b.dtype))
  shape = batch + ((m,) if len(sa) > 1 else ()) + ((n,) if len(sb) > 1 else ())
  if acc.is_complex and k: return _complex_matmul(Tensor(a2.cast(acc)), Tensor(b2.cast(acc))).reshape(shape)
  work = PRODUCT_ACC.get(acc, acc)
  au = U._broadcast(a2.cast(work), batch + (m, k)).reshape(batch + (m, 1, k)).expand(batch + (m, n, k))
  bu = U._broadcast(b2.cast(work), batch + (k, n)).permute(tuple(range(len(batch))) + (len(batch) + 1, len(batch)))
  bu = bu.reshape(batch + (1, n, k)).expand(batch + (m, n, k))
  prodt = au & bu if acc.is_bool else au * bu
  r = Tensor((prodt.reduce(Ops.MAX if acc.is_bool else Ops.ADD, 1) if k else
              UOp.const(False if acc.is_bool else 0, work).reshape((1,) * (len(batch) + 2)).expand(batch + (m, n)))
             .cast(acc))
  return r if shape == r.shape else r.reshape(shape)      # (r is new: no view of it is needed)


_RESULT: dict = {}      # (DType, DType) -> NumPy's result dtype of the two (asked of NumPy once)
_FLOATS = frozenset((dtypes.float32, dtypes.float64))       # (accumulated in their own dtype: PRODUCT_ACC)


def _complex_matmul(a: Tensor, b: Tensor) -> Tensor:
  """Complex a @ b as four real products (pairs of floats: the real GEMM's vectorized, tiled loops, where a complex
  accumulator does not vectorize; measured in the README), re = ar@br - ai@bi, im = ar@bi + ai@br."""
  ar, ai, br, bi = (Tensor(p.uop.stage()) for p in (a.real, a.imag, b.real, b.imag))   # contiguous float parts
  rr, ii, ri, ir = (matmul(x, y).uop.stage() for x, y in ((ar, br), (ai, bi), (ar, bi), (ai, br)))   # a GEMM each
  return Tensor(UOp(Ops.CMPLX, (rr - ii, ri + ir)))


def dot(a, b) -> Tensor:
  """numpy.dot: a product for scalars, matmul for up to 2-D b, a sum over a's last and b's second-to-last axis
  otherwise.

  Parameters
  ----------
  a, b : array_like

  Returns
  -------
  Tensor
  """
  a, b = asarray(a), asarray(b)
  if a.ndim == 0 or b.ndim == 0: return a * b
  if b.ndim <= 2: return matmul(a, b)
  return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 2]))


def tensordot(a, b, axes=2) -> Tensor:
  """Sum of products over the given axes of a and b (numpy.tensordot).

  Parameters
  ----------
  a, b : array_like
  axes : int or (axes of a, axes of b), default 2
      An int n: the last n axes of a with the first n of b.

  Returns
  -------
  Tensor
  """
  a, b = asarray(a), asarray(b)
  if isinstance(axes, int):
    if axes < 0: raise ValueError("tensordot: axes must be non-negative")
    ax_a, ax_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
  else:
    ax_a, ax_b = ([x] if isinstance(x, int) else list(x) for x in axes)
  for x, t in [(x, a) for x in ax_a] + [(x, b) for x in ax_b]:
    if not -t.ndim <= x < t.ndim: raise AxisError(x, t.ndim, "tensordot")
  ax_a, ax_b = [x % a.ndim for x in ax_a], [x % b.ndim for x in ax_b]
  if len(ax_a) != len(ax_b) or any(a.shape[i] != b.shape[j] for i, j in zip(ax_a, ax_b)):
    raise ValueError(f"tensordot: shape-mismatch for sum: {a.shape} axes {ax_a} vs {b.shape} axes {ax_b}")
  free_a = [k for k in range(a.ndim) if k not in ax_a]
  free_b = [k for k in range(b.ndim) if k not in ax_b]
  ka = prod(a.shape[i] for i in ax_a)
  am = a.transpose(free_a + ax_a).reshape(prod(a.shape[i] for i in free_a), ka)
  bm = b.transpose(ax_b + free_b).reshape(ka, prod(b.shape[i] for i in free_b))
  return matmul(am, bm).reshape(tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b))


@tensor_methods
class _Products:
  def __matmul__(self, x): return NotImplemented if defers(x) else np.matmul(self, x) if foreign(x) else matmul(self, x)
  def __rmatmul__(self, x): return np.matmul(x, self) if foreign(x) else matmul(x, self)

  def dot(self, other) -> Tensor:
    """numpy.dot with another operand: minitensor.dot.

    Parameters
    ----------
    other : Tensor or array_like

    Returns
    -------
    Tensor
    """
    return dot(self, other)
