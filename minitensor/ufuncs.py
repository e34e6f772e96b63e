"""Elementwise functions with NumPy's names, types and broadcasting, as UOp builders.

This module knows no Tensor (tensor.py imports it, never the reverse): it holds the table of UOp builders, NumPy's
loop resolution (`resolved`) and the weak-scalar constants. Every elementwise function is keyed by the NumPy ufunc
it mirrors. `tensor.apply_ufunc(ufunc, *operands)` asks NumPy itself which loop it would pick
(`ufunc.resolve_dtypes`, with Python scalars passed as weak types, so int8 + 1 stays int8 and float32 * 2.0 stays
float32, as NEP 50 says), broadcasts the operands, casts them to the loop's input dtypes, builds the UOps with the
table below and casts to the loop's output dtype.
The same table serves Tensor methods and operators, `minitensor.exp(...)`, and `np.exp(tensor)` through
`__array_ufunc__`. Complex operands: +, ==, != and the functions of <complex.h> are UOps of complex dtype (the
renderer gives them NumPy's values); what NumPy computes part by part (negative, subtract, conjugate, isnan, sign,
reciprocal, rint, the lexicographic comparisons) is built here from REAL, IMAG and CMPLX. With only Python scalars
as operands (`mt.greater(2, 2)`), they take NumPy's default dtypes (int64, float64, complex128, bool; an int out of
int64's range raises OverflowError, or compares as NumPy's does); the result is a 0-d Tensor (every minitensor
function returns a Tensor) with the value and dtype of NumPy's scalar result (`np.greater(2, 2)` is `np.False_`,
`mt.greater(2, 2)` a 0-d bool Tensor holding False).
"""
from __future__ import annotations
import math
from typing import Callable
import numpy as np
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.ops import ALU_OPS
from minitensor.backend.uop import Ops, ParamArg, UOp

PY_SCALARS = (bool, int, float, complex)


def _lit(x: UOp, v) -> UOp: return x.const_like(v)
def _false_like(x: UOp) -> UOp: return x.cast(dtypes.bool).const_like(False)
def _bool(x: UOp) -> UOp: return x.cast(dtypes.bool)
def _re(z: UOp) -> UOp: return UOp(Ops.REAL, (z,))
def _im(z: UOp) -> UOp: return UOp(Ops.IMAG, (z,))
def _cplx(re: UOp, im: UOp) -> UOp: return UOp(Ops.CMPLX, (re, im))
def _parts(f: Callable[[UOp], UOp]) -> Callable[[UOp], UOp]:
  """f applied to the real and imaginary parts of a complex operand, f itself on a real one."""
  return lambda x: _cplx(f(_re(x)), f(_im(x))) if x.dtype.is_complex else f(x)


def _isnan(x: UOp) -> UOp:
  if x.dtype.is_complex: return _isnan(_re(x)) | _isnan(_im(x))
  return x.ne(x) if x.dtype.is_float else _false_like(x)


def _isinf(x: UOp) -> UOp:
  if x.dtype.is_complex: return _isinf(_re(x)) | _isinf(_im(x))
  return UOp(Ops.ABS, (x,)).eq(_lit(x, math.inf)) if x.dtype.is_float else _false_like(x)


def _csign(z: UOp) -> UOp:
  """NumPy 2's sign of a complex z: z / |z|, 0 for 0; NaN+NaNj when |z| is NaN; when |z| is infinite, +-1 along an
  infinite real part (NaN+NaNj if both are infinite), else +-1j."""
  re, im, a = _re(z), _im(z), UOp(Ops.ABS, (z,))
  zero, nan = _lit(re, 0.0), _lit(re, math.nan)
  unit = lambda v: (v > 0).where(_lit(re, 1.0), _lit(re, -1.0))
  inf_re, inf_im, inf_a, nan_a = _isinf(re), _isinf(im), _isinf(a), a.ne(a)
  def pick(inf_case: UOp, v: UOp) -> UOp:
    return nan_a.where(nan, inf_a.where(inf_case, a.eq(zero).where(zero, v / a)))
  return _cplx(pick(inf_re.where(inf_im.where(nan, unit(re)), zero), re),
               pick(inf_re.where(inf_im.where(nan, zero), unit(im)), im))


def _creciprocal(z: UOp) -> UOp:
  """NumPy's 1/z: scaled by the larger part (its loop, not its division)."""
  re, im = _re(z), _im(z)
  one = _lit(re, 1.0)
  small = UOp(Ops.ABS, (im,)) <= UOp(Ops.ABS, (re,))
  r1 = im / re
  d1 = re + im * r1
  r2 = re / im
  d2 = re * r2 + im
  return _cplx(small.where(one / d1, r2 / d2), small.where(-(r1 / d1), -(one / d2)))


def _clt(a: UOp, b: UOp, strict: bool) -> UOp:
  """NumPy's lexicographic a < b (a <= b unless strict) of complex values: the real parts decide unless an
  imaginary part is NaN; equal real parts leave it to the imaginary parts."""
  ar, ai, br, bi = _re(a), _im(a), _re(b), _im(b)
  ordered = (ar < br) & _isnan(ai).ne(True) & _isnan(bi).ne(True)
  return ordered | (ar.eq(br) & ((ai < bi) if strict else (ai <= bi)))


def _sign(x: UOp) -> UOp:
  if x.dtype.is_complex: return _csign(x)
  if x.dtype.is_bool: return x
  pos, neg = _lit(x, 1), _lit(x, -1) if not x.dtype.is_unsigned else _lit(x, 0)
  z = _lit(x, 0)
  inner = x.eq(z).where(z, x) if x.dtype.is_float else z
  return (x > 0).where(pos, (x < 0).where(neg, inner))


def _reciprocal(x: UOp) -> UOp:
  if x.dtype.is_complex: return _creciprocal(x)
  if x.dtype.is_float: return _lit(x, 1) / x
  d, one = x.dtype, _lit(x, 1)
  # NumPy computes (T)(1.0 / x): 1/0 = inf converts to INT_MIN for int32/int64 and to 0 for the other ints
  r = x.eq(_lit(x, 0)).where(_lit(x, d.min if d.kind == "i" and d.itemsize >= 4 else 0), _lit(x, 0))
  return x.eq(one).where(one, x.eq(_lit(x, -1)).where(_lit(x, -1), r) if not d.is_unsigned else r)


def _add(a: UOp, b: UOp) -> UOp: return a | b if a.dtype.is_bool else a + b
def _mul(a: UOp, b: UOp) -> UOp: return a & b if a.dtype.is_bool else a * b
def _round_like(op: Ops) -> Callable[[UOp], UOp]: return _parts(lambda x: UOp(op, (x,)) if x.dtype.is_float else x)
def _neg(x: UOp) -> UOp: return _cplx(-_re(x), -_im(x)) if x.dtype.is_complex else -x
def _sub(a: UOp, b: UOp) -> UOp: return _cplx(_re(a) - _re(b), _im(a) - _im(b)) if a.dtype.is_complex else a - b
def _conj(x: UOp) -> UOp: return _cplx(_re(x), -_im(x)) if x.dtype.is_complex else x
def _abs(x: UOp) -> UOp: return x if x.dtype.is_bool or x.dtype.is_unsigned else UOp(Ops.ABS, (x,))
def _unary(op: Ops) -> Callable[[UOp], UOp]: return lambda x: UOp(op, (x,))
def _binary(op: Ops) -> Callable[[UOp, UOp], UOp]:
  f = lambda a, b: UOp(op, (a, b))
  _ONE_NODE.add(f)
  return f


_ONE_NODE: set = set()     # builders that make one node over their two operands, whatever their shapes and values


def _invert(x: UOp) -> UOp: return x ^ (True if x.dtype.is_bool else -1)


def _compare(op: Callable[[UOp, UOp], UOp], np_op: np.ufunc) -> Callable[[UOp, UOp], UOp]:
  """A comparison; NumPy 2 also compares int64 with uint64 exactly (a negative signed value is below all)."""
  def f(a: UOp, b: UOp) -> UOp:
    if a.dtype.is_complex and np_op not in (np.equal, np.not_equal):
      if np_op in (np.greater, np.greater_equal): return _clt(b, a, np_op is np.greater)
      return _clt(a, b, np_op is np.less)
    if a.dtype is b.dtype: return op(a, b)
    neg, known = (a, bool(np_op(-1, 0))) if not a.dtype.is_unsigned else (b, bool(np_op(0, -1)))
    return (neg < 0).where(known, op(a.cast(dtypes.uint64), b.cast(dtypes.uint64)))
  return f


def _fmaxmin(a: UOp, b: UOp, is_max: bool) -> UOp:
  """fmax/fmin: the operand that is not NaN; of two equal ones (0.0 and -0.0) the first, as C's fmax and NumPy's
  scalar, float64 and float16 loops give (README, Limitations: NumPy's float32 and long SIMD loops differ)."""
  if a.dtype.is_complex: pick = a.maximum(b) if is_max else a.minimum(b)
  else: pick = (a >= b if is_max else a <= b).where(a, b)
  return _isnan(b).where(a, _isnan(a).where(b, pick))


def _op(op: Ops) -> Callable[..., UOp]: return _unary(op) if ALU_OPS[op].arity == 1 else _binary(op)


# np.<ufunc> -> its UOp builder: every ufunc the op table names is its op alone, unless NumPy's semantics need more
# (bool + and *, integer and complex rounding and abs, mixed-sign and complex comparisons), and the ufuncs that are
# built from several ops follow
TABLE: dict[np.ufunc, Callable[..., UOp]] = {getattr(np, d.ufunc): _op(o) for o, d in ALU_OPS.items() if d.ufunc}
TABLE.update({
  np.add: _add, np.subtract: _sub, np.multiply: _mul, np.absolute: _abs,
  np.floor: _round_like(Ops.FLOOR), np.ceil: _round_like(Ops.CEIL), np.trunc: _round_like(Ops.TRUNC),
  np.rint: _round_like(Ops.RINT),
  np.less: _compare(lambda a, b: a < b, np.less), np.less_equal: _compare(lambda a, b: a <= b, np.less_equal),
  np.greater: _compare(lambda a, b: a > b, np.greater),
  np.greater_equal: _compare(lambda a, b: a >= b, np.greater_equal),
  np.equal: _compare(lambda a, b: a.eq(b), np.equal), np.not_equal: _compare(lambda a, b: a.ne(b), np.not_equal),
  np.fmax: lambda a, b: _fmaxmin(a, b, True), np.fmin: lambda a, b: _fmaxmin(a, b, False),
  np.logical_and: lambda a, b: _bool(a) & _bool(b), np.logical_or: lambda a, b: _bool(a) | _bool(b),
  np.logical_xor: lambda a, b: _bool(a) ^ _bool(b), np.logical_not: lambda x: _bool(x) ^ True,
  np.invert: _invert, np.negative: _neg, np.conjugate: _conj, np.positive: lambda x: x, np.sign: _sign,
  np.square: lambda x: _mul(x, x), np.reciprocal: _reciprocal, np.isnan: _isnan, np.isinf: _isinf,
  np.isfinite: lambda x: (_isnan(x) | _isinf(x)) ^ True,
})


COMPARISONS = (np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal)


def is_weak(x) -> bool:
  """A Python bool, int, float or complex (not a NumPy scalar, though np.float64 subclasses float): typed by the
  other operands."""
  return type(x) in PY_SCALARS


_DEFAULT = {bool: np.dtype(bool), int: np.dtype(np.int64), float: np.dtype(np.float64),
            complex: np.dtype(np.complex128)}
_RESOLVED: dict = {}      # (ufunc, dtype, operand types) -> (NumPy's loop dtypes, input DTypes, output DType)


def resolved(ufunc: np.ufunc, types: tuple, dtype: np.dtype | None) -> tuple:
  """NumPy's loop for operands of these types (each a dtype, or a weak Python type), with `dtype=` as NumPy's
  keyword: (NumPy's loop dtypes, the input DTypes, the output DType); TypeError as NumPy raises it."""
  key = (ufunc, dtype, *types)
  if (r := _RESOLVED.get(key)) is not None: return r
  kw = {} if dtype is None else {"signature": (None,) * ufunc.nin + (dtype,) * ufunc.nout}
  try: dts = ufunc.resolve_dtypes(key[2:] + (None,) * ufunc.nout, casting="same_kind", **kw)
  except TypeError as e:
    names = ", ".join(getattr(d, "__name__", str(d)) for d in key[2:])
    raise TypeError(f"{ufunc.__name__}: not supported for {names}{'' if dtype is None else f' with dtype={dtype}'} "
                    f"({e})") from e
  r = _RESOLVED[key] = (dts, tuple(dtypes.from_numpy(d) for d in dts[:ufunc.nin]), dtypes.from_numpy(dts[-1]))
  return r


LOOPS: dict = {}      # ufuncs.loop's: (ufunc, *types) -> (builder, input DTypes, output DType) or None


def loop(key: tuple) -> tuple | None:
  """(ufunc's builder, NumPy's loop input DTypes, its output DType) for key = (ufunc, *types), a type per operand: a
  Tensor's DType or a Python scalar's type (NumPy's loop depends only on these); kept in LOOPS. None where the
  caller's general path decides: a ufunc without a builder or given other than its number of operands (its errors),
  and a Python int that the loop reads as an integer in np.power (negative integer exponents are checked) or in a
  comparison (it may lie outside the other operand's range: out_of_range). (`r ** -1.5` or `r > 0` of a float
  array take the loop: 7.4 -> 2.5 us for a comparison.)"""
  ufunc, types = key[0], key[1:]
  r = None
  if (build := TABLE.get(ufunc)) is not None and ufunc.nin == len(types):
    r = (build, *resolved(ufunc, tuple([t.np if isinstance(t, DType) else _DEFAULT[bool] if t is bool else t
                                        for t in types]), None)[1:])
    if (ufunc is np.power or ufunc in COMPARISONS) and any(t is int and d.is_int for t, d in zip(types, r[1])): r = None
  LOOPS[key] = r
  if r is not None and len(types) == 2 and (build in _ONE_NODE or build in (_add, _mul)) and r[1] == types:
    x, y = (UOp(Ops.BUFFER, (), ParamArg(-1 - k, d, (1,))) for k, d in enumerate(types))
    if (u := build(x, y)).src == (x, y) and u.dtype is r[2]: DIRECT[key] = u.op
  return r


# (ufunc, DType, DType) -> the op of the one node its loop builds over two operands of these dtypes, no cast on either
# side (found by building it once, in loop): apply_ufunc makes that node directly for operands of one shape (W9)
DIRECT: dict = {}


def weak_types(operands: tuple) -> tuple | None:
  """The types NumPy resolves a call of only Python scalars with (their default dtypes: int64, float64, complex128,
  bool); None when some operand is not a Python scalar."""
  return tuple(_DEFAULT[type(x)] for x in operands) if all(type(x) in PY_SCALARS for x in operands) else None


def out_of_range(ufunc: np.ufunc, operands: list, ins: tuple) -> UOp | None:
  """NumPy 2 compares an integer array with a Python int its dtype cannot hold as if the int were infinite."""
  for k, (x, d) in enumerate(zip(operands, ins)):
    if type(x) is int and d.is_int and not d.min <= x <= d.max:
      return UOp.const(bool(ufunc(*[(1 if x > 0 else -1) if j == k else 0 for j in range(2)])), dtypes.bool)
  return None


def scalar_uop(v, d: DType, op: str = "operation") -> UOp:
  """A weak Python scalar as a CONST of d; OverflowError for an integer that d cannot hold (as NumPy 2)."""
  if d.is_int and not isinstance(v, float) and not (d.min <= int(v) <= d.max):
    raise OverflowError(f"{op}: Python integer {v} out of bounds for {d.name}")
  return UOp.const(v, d)


_SCALARS: dict = {}     # (value, dtype, shape) -> its broadcast CONST, held so loops reuse the nodes
_SCALARS_MAX = 4096


def scalar(v, d, shape: tuple[int, ...], op: str) -> UOp:
  """A weak Python scalar as a CONST of d broadcast to shape. The last _SCALARS_MAX of them are kept: the cons
  table holds nodes weakly, and a loop that multiplies by the same 0.1 would otherwise build them every time."""
  if v != v: return scalar_uop(v, d, op).broadcast(shape)     # NaN: no key equals it
  sign = math.copysign(1.0, v) if type(v) is float else repr(v) if type(v) is complex else 0   # -0.0 and 0.0 differ
  key = (type(v), v, sign, d, shape)
  if (u := _SCALARS.get(key)) is None:
    if len(_SCALARS) >= _SCALARS_MAX: _SCALARS.clear()
    u = _SCALARS[key] = scalar_uop(v, d, op).broadcast(shape)     # (shape: an operand's, or the operands' broadcast)
  return u


def _broadcast(u: UOp, shape: tuple[int, ...]) -> UOp:
  if u.shape == shape: return u
  u = u.reshape((1,) * (len(shape) - len(u.shape)) + u.shape)
  return u.expand(shape)
