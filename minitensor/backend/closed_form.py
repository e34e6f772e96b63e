"""closed_form: a reduction without its loop, where the value it reduces does not change along the loop.

rangeify's REDUCE rule asks these when the value at the reduce's index mentions none of its loops (a broadcast
constant, an expand along the reduced axes): the loop is dropped only where the closed form is exactly what the loop
computes, in any order (integers wrap; a float sum only where no partial sum rounds).
"""
from __future__ import annotations
import math
import numpy as np
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import Ops, UOp


def closed_form_symbolic(rop: Ops, v: UOp, sizes: tuple) -> UOp | None:
  """closed_form over prod(sizes) copies, some sizes VARs: what holds for every count (MAX, MIN, integers, a
  float sum of 0 or of a non-finite constant); None for the float and complex sums and products whose value or
  exactness depends on it."""
  d = v.dtype
  if rop in (Ops.MAX, Ops.MIN) or d.is_bool: return v
  n = UOp.const(1)
  for s in sizes: n = n * s
  n = simplify(n)
  if d.is_int:
    if rop is Ops.ADD: return v * n.cast(d)
    return UOp(Ops.POW, (v, n.cast(d))) if n.vmax <= d.max else None
  if rop is Ops.ADD and v.op is Ops.CONST and d.is_float and (v.arg == 0 or not math.isfinite(v.arg)):
    return UOp.const(0.0, d) if v.arg == 0 else v
  return None


def closed_form(rop: Ops, v: UOp, n: int) -> UOp | None:
  """rop over n >= 1 copies of v, exactly as a loop in any order computes it, or None. MAX and MIN (OR and AND
  for bool) give v; integers wrap, so a sum is v * n and a product v ** n in the dtype's arithmetic. A float sum
  folds only for a constant c = M * 2**e (M odd) with n * M <= 2**precision: every partial sum k * c is then
  exact, so no rounding happens in the loop (or in NumPy's pairwise sum); a float product only for c = +-2**e
  whose power is exact. Other float sums and products keep their loop: n * c would round differently."""
  d = v.dtype
  if rop in (Ops.MAX, Ops.MIN) or d.is_bool: return v
  if d.is_complex: return None                 # complex products and sums of infinities: left to the loop
  if d.is_int:
    if rop is Ops.ADD: return v * UOp.const(d.python(n), d)
    return UOp(Ops.POW, (v, UOp.const(n, d))) if n <= d.max else None
  if v.op is not Ops.CONST: return None
  c, bits = v.arg, d.mantissa
  if rop is Ops.ADD:
    if not math.isfinite(c): return v
    if c == 0: return UOp.const(0.0, d)       # the loop starts from +0.0: a sum of -0.0 is +0.0
    m, _ = abs(c).as_integer_ratio()
    m //= m & -m                              # the odd part of the mantissa
    r = c * n                                 # exact in float64 when n * m <= 2**53
    return UOp.const(r, d) if n * m <= 2 ** bits and d.python(r) == r and math.isfinite(r) else None
  p, q = abs(c).as_integer_ratio() if math.isfinite(c) and c else (3, 1)
  if p & (p - 1) or q & (q - 1): return None  # |c| is not a power of two
  e = p.bit_length() - q.bit_length()         # |c| = 2**e, so the product is +-2**(e*n): exact while in range
  if not int(np.log2(np.finfo(d.np).smallest_subnormal)) <= e * n < np.finfo(d.np).maxexp: return None
  return UOp.const(math.copysign(2.0 ** (e * n), c if n % 2 else 1.0), d)
