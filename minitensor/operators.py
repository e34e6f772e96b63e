"""operators: Python's operators on Tensors, each NumPy's ufunc of the operator (tensor.binop, apply_ufunc),
deferring to another library's array where NumPy's operators would (tensor.defers), and their in-place forms."""
from __future__ import annotations
import numpy as np
from minitensor import views as V
from minitensor.creation import full
from minitensor.tensor import Tensor, apply_ufunc, asarray, binop, defers, foreign, tensor_methods


@tensor_methods
class _Operators:
  def __add__(self, x): return binop(np.add, self, x)
  def __radd__(self, x): return binop(np.add, x, self, reflected=True)
  def __sub__(self, x): return binop(np.subtract, self, x)
  def __rsub__(self, x): return binop(np.subtract, x, self, reflected=True)
  def __mul__(self, x): return binop(np.multiply, self, x)
  def __rmul__(self, x): return binop(np.multiply, x, self, reflected=True)
  def __truediv__(self, x): return binop(np.true_divide, self, x)
  def __rtruediv__(self, x): return binop(np.true_divide, x, self, reflected=True)
  def __floordiv__(self, x): return binop(np.floor_divide, self, x)
  def __rfloordiv__(self, x): return binop(np.floor_divide, x, self, reflected=True)
  def __mod__(self, x): return binop(np.remainder, self, x)
  def __rmod__(self, x): return binop(np.remainder, x, self, reflected=True)
  def __divmod__(self, x): return NotImplemented if defers(x) else (self // x, self % x)
  def __rdivmod__(self, x): return x // self, x % self
  def __pow__(self, x):
    f = self._fast_power(x)
    return apply_ufunc(f, self) if f is not None else binop(np.power, self, x)
  def _fast_power(self, x):
    """NumPy's `**` shortcut: the exponent exactly the Python int 2 computes square (for every dtype: bool ** 2 is
    int8), and for float and complex arrays the Python int -1 or float 0.5 computes reciprocal or sqrt (whose
    special values differ from power's)."""
    if type(x) is int and x == 2: return np.square      # every dtype (bool squares to int8, as NumPy's)
    if type(x) not in (int, float) or self.uop.dtype.kind not in "fc": return None
    return {(int, -1): np.reciprocal, (float, 0.5): np.sqrt}.get((type(x), x))
  def __rpow__(self, x): return binop(np.power, x, self, reflected=True)
  def __and__(self, x): return binop(np.bitwise_and, self, x)
  def __rand__(self, x): return binop(np.bitwise_and, x, self, reflected=True)
  def __or__(self, x): return binop(np.bitwise_or, self, x)
  def __ror__(self, x): return binop(np.bitwise_or, x, self, reflected=True)
  def __xor__(self, x): return binop(np.bitwise_xor, self, x)
  def __rxor__(self, x): return binop(np.bitwise_xor, x, self, reflected=True)
  def __lshift__(self, x): return binop(np.left_shift, self, x)
  def __rlshift__(self, x): return binop(np.left_shift, x, self, reflected=True)
  def __rshift__(self, x): return binop(np.right_shift, self, x)
  def __rrshift__(self, x): return binop(np.right_shift, x, self, reflected=True)
  def __neg__(self): return apply_ufunc(np.negative, self)
  def __pos__(self): return apply_ufunc(np.positive, self)
  def __abs__(self): return apply_ufunc(np.absolute, self)
  def __invert__(self): return apply_ufunc(np.invert, self)
  def __lt__(self, x): return binop(np.less, self, x)
  def __le__(self, x): return binop(np.less_equal, self, x)
  def __gt__(self, x): return binop(np.greater, self, x)
  def __ge__(self, x): return binop(np.greater_equal, self, x)
  # t == None is all False, as NumPy's (the overrides of object's __eq__/__ne__ return Tensors)
  def __eq__(self, x): return full(self.shape, False, bool) if x is None else binop(np.equal, self, x)
  def __ne__(self, x): return full(self.shape, True, bool) if x is None else binop(np.not_equal, self, x)

  # in place: the result (computed from the current values) is written into self, so every alias and view of
  # self sees it; NumPy's rules: the result is cast to self's dtype only 'same_kind', and must have self's shape.
  # In place never defers to another library's array (as NumPy's): its values are computed and written into self.
  def _inplace(self, ufunc, x) -> Tensor:
    with V.WRITES: return self._inplace_locked(ufunc, x)      # (reading self and writing it are one step)
  def _inplace_locked(self, ufunc, x) -> Tensor:
    if defers(x, inplace=True): return NotImplemented
    if foreign(x): x = asarray(x)
    fast = self._fast_power(x) if ufunc is np.power else None
    r = self @ x if ufunc is np.matmul else apply_ufunc(fast, self) if fast is not None else \
      apply_ufunc(ufunc, self, x)
    if not np.can_cast(r.dtype, self.dtype, "same_kind"):
      raise TypeError(f"Cannot cast ufunc '{ufunc.__name__}' output from {r.dtype!r} to {self.dtype!r} "
                      "with casting rule 'same_kind'")
    if r.shape != self.shape:
      raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't match the broadcast "
                       f"shape {r.shape}")
    V.write(self, r.uop.cast(self.uop.dtype))
    return self
  def __iadd__(self, x): return self._inplace(np.add, x)
  def __isub__(self, x): return self._inplace(np.subtract, x)
  def __imul__(self, x): return self._inplace(np.multiply, x)
  def __itruediv__(self, x): return self._inplace(np.true_divide, x)
  def __ifloordiv__(self, x): return self._inplace(np.floor_divide, x)
  def __imod__(self, x): return self._inplace(np.remainder, x)
  def __ipow__(self, x): return self._inplace(np.power, x)
  def __imatmul__(self, x): return self._inplace(np.matmul, x)
  def __iand__(self, x): return self._inplace(np.bitwise_and, x)
  def __ior__(self, x): return self._inplace(np.bitwise_or, x)
  def __ixor__(self, x): return self._inplace(np.bitwise_xor, x)
  def __ilshift__(self, x): return self._inplace(np.left_shift, x)
  def __irshift__(self, x): return self._inplace(np.right_shift, x)
