"""Every ufunc of ufuncs.TABLE (as mt.<name>) and every Python operator, differentially against NumPy.

Values, result dtypes and exceptions must be NumPy's: exact for bool and integers (division and modulo by zero,
negative divisors, shifts past the width, overflow wrap included), within a dtype-aware tolerance for floats
with NaN positions and the signs of zeros equal. Compiling dominates the run time, so each test realizes many
results together (one C translation unit) and the value tests reuse the grid's graphs (same shapes and dtypes,
new data: a graph-cache hit).
"""
import operator
import warnings
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt
from minitensor import ufuncs as U

DTYPES = [np.dtype(d) for d in ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")]
UNARY = [u for u in U.TABLE if u.nin == 1]
BINARY = [u for u in U.TABLE if u.nin == 2]
RTOL = {2: 1e-3, 4: 1e-6, 8: 1e-12}
N = 22   # values per operand in the grid: binary ufuncs see all N * N pairs


def special(d: np.dtype) -> np.ndarray:
  """N values of d that exercise the edge cases: zeros of both signs, NaN, infinities, extremes, widths, wrap."""
  if d.kind == "b": v = [False, True] * (N // 2)
  elif d.kind in "iu":
    info, w = np.iinfo(d), 8 * d.itemsize
    v = [0, 1, -1, 2, -2, 3, -3, 7, -7, w - 1, w, w + 1, 100, -100, int(info.min), int(info.max), int(info.min) + 1,
         int(info.max) - 1, 5, -8, 64, 13]
  else:
    fi = np.finfo(d)
    v = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, -7.0, 1e-3, 100.0, -1e4, 1e30, float(fi.max), -float(fi.max),
         float(fi.tiny), float(fi.smallest_subnormal), np.nan, np.inf, -np.inf, 0.7853981633974483]
  with np.errstate(over="ignore"), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    return np.array(v, dtype=np.int64 if d.kind in "iu" else None).astype(d)


ERRORS = (TypeError, ValueError, OverflowError)


def numpy_or_error(f, *args):
  """NumPy's result, or the public exception type it raises (warnings off: NumPy only warns on inf/NaN/wrap)."""
  with np.errstate(all="ignore"):
    try: return f(*args)
    except ERRORS as e: return next(t for t in ERRORS if isinstance(e, t))


def assert_same(got, want, what: str = "") -> None:
  """got (a realized Tensor) equals NumPy's want: dtype, shape, values (floats: tolerance, NaNs, zero signs;
  not the sign of fmax/fmin(0.0, -0.0), which NumPy's float32/float64 loops choose by array length, nor of clip
  ties)."""
  got = np.asarray(got)
  want = np.asarray(want)
  assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy {want.dtype}"
  assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy {want.shape}"
  if want.dtype.kind != "f":
    bad = got != want
  else:
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(all="ignore"):
      bad = ~np.isclose(g, w, rtol=RTOL[want.dtype.itemsize], atol=0, equal_nan=True)
    if not what.startswith(("fmax", "fmin", "clip")): bad |= (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))
  if bad.any():
    i = tuple(np.argwhere(bad)[0]) if bad.ndim else ()
    raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} differ, first at {i}: got {got[i]!r}, "
                         f"NumPy {want[i]!r}")


def check_ufuncs(d: np.dtype, x: np.ndarray, y: np.ndarray) -> None:
  """Every ufunc on x (unary) and on (x as a column, y as a row) (binary), realized together, against NumPy.
  A ufunc NumPy rejects for d must raise the same exception type at construction."""
  col, row = x.reshape(-1, 1), y.reshape(1, -1)
  tx, tcol, trow = mt.asarray(x), mt.asarray(col), mt.asarray(row)
  cases = []
  for f in UNARY + BINARY:
    args, targs = ((x,), (tx,)) if f.nin == 1 else ((col, row), (tcol, trow))
    want = numpy_or_error(f, *args)
    if want is ValueError and f is np.power:   # integers to negative integer powers: NumPy checks the data
      args = (col, np.where(row < 0, 0, row).astype(d))
      targs, want = (tcol, mt.asarray(args[1])), numpy_or_error(f, *args)
    if isinstance(want, type):
      with pytest.raises(want): getattr(mt, f.__name__)(*targs)
    else: cases.append((f.__name__, getattr(mt, f.__name__)(*targs), want))
  mt.realize(*(c[1] for c in cases))
  for name, got, want in cases: assert_same(got, want, f"{name} on {d}")


@pytest.mark.parametrize("d", DTYPES, ids=str)
def test_every_ufunc_on_edge_values(d):
  x = special(d)
  check_ufuncs(d, x, x[::-1].copy())


@given(data=st.data())
def test_every_ufunc_on_drawn_values(data):
  d = data.draw(st.sampled_from(DTYPES), label="dtype")
  x, y = (data.draw(mtt.arrays(d, (N,)), label=k) for k in "xy")
  check_ufuncs(d, x, y)


@st.composite
def _operands(draw):
  """Two arrays of possibly different dtypes whose shapes broadcast (0-d, size-0 and size-1 axes included)."""
  sa = draw(mtt.shapes(max_dims=3, max_side=3))
  sb = draw(mtt.broadcastable_shapes(sa, max_dims=3, max_side=3))
  da, db = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
  return draw(mtt.arrays(da, sa)), draw(mtt.arrays(db, sb))


@given(ab=_operands(), fs=st.lists(st.sampled_from(BINARY), min_size=1, max_size=3, unique=True),
       g=st.sampled_from(UNARY))
def test_mixed_dtypes_and_broadcasting(ab, fs, g):
  a, b = ab
  ta, tb = mt.asarray(a), mt.asarray(b)
  cases = []
  for f in fs:
    want = numpy_or_error(f, a, b)
    if want is ValueError and f is np.power: continue   # data-dependent (negative integer exponents)
    if isinstance(want, type):
      with pytest.raises(want): getattr(mt, f.__name__)(ta, tb)
    else: cases.append((f"{f.__name__}({a.dtype}{a.shape}, {b.dtype}{b.shape})", getattr(mt, f.__name__)(ta, tb), want))
  want = numpy_or_error(g, a)
  if isinstance(want, type):
    with pytest.raises(want): getattr(mt, g.__name__)(ta)
  else: cases.append((f"{g.__name__}({a.dtype}{a.shape})", getattr(mt, g.__name__)(ta), want))
  mt.realize(*(c[1] for c in cases))
  for what, got, want in cases: assert_same(got, want, what)


C = np.arange(N) % 3 == 0
WHERE_CLIP_ROUND = {
  "where(c, x, y)": lambda ns, x, y: ns.where(C, x, y), "where(x, x, 0)": lambda ns, x, y: ns.where(x, x, 0),
  "where(c, x, 1000)": lambda ns, x, y: ns.where(C, x, 1000), "where(c, 2.5, y)": lambda ns, x, y: ns.where(C, 2.5, y),
  "where(c, np.float32(2), x)": lambda ns, x, y: ns.where(C, np.float32(2), x),
  "where(c[:, None], x, y)": lambda ns, x, y: ns.where(C[:, None], x, y),
  "clip(x, 0, 5)": lambda ns, x, y: ns.clip(x, 0, 5), "clip(x, -1000, 1000)": lambda ns, x, y: ns.clip(x, -1000, 1000),
  "clip(x, 1000, None)": lambda ns, x, y: ns.clip(x, 1000, None),
  "clip(x, y, None)": lambda ns, x, y: ns.clip(x, y, None),
  "clip(x, None, y)": lambda ns, x, y: ns.clip(x, None, y), "clip(x, 2.5, 7)": lambda ns, x, y: ns.clip(x, 2.5, 7),
  "clip(x, np.int8(-3), np.int8(3))": lambda ns, x, y: ns.clip(x, np.int8(-3), np.int8(3)),
  "clip(x, 5, 0)": lambda ns, x, y: ns.clip(x, 5, 0),
  **{f"round(x, {k})": (lambda k: lambda ns, x, y: ns.round(x, k))(k) for k in (0, 1, 2, -1, -2)},
}


@pytest.mark.parametrize("d", DTYPES, ids=str)
def test_where_clip_round(d):
  """NumPy's promotion, its wrapping of Python ints in where, its clip of out-of-range int bounds, its rounding
  steps (half to even; integers in float64 for negative decimals). NumPy leaves the zero sign of clip ties open."""
  x, y = special(d), special(d)[::-1].copy()
  t, u = mt.asarray(x), mt.asarray(y)
  cases = []
  for what, f in WHERE_CLIP_ROUND.items():
    want = numpy_or_error(f, np, x, y)
    if isinstance(want, type):
      with pytest.raises(want): f(mt, t, u)
    else: cases.append((what, f(mt, t, u), want))
  mt.realize(*(c[1] for c in cases))
  for what, got, want in cases: assert_same(got, want, f"{what} on {d}")


@settings(max_examples=80, deadline=None)
@given(st.sampled_from([np.float16, np.float32, np.float64]), st.sampled_from([(5, 4), (4,), (5, 1), ()]),
       st.sampled_from([(5, 4), (4,), (1, 4), ()]),
       st.sampled_from(["same", "other", 2.5, -0.0, float("nan"), float("-inf"), 3, -7, 2**70, 2**2000, True, "np"]),
       st.integers(0, 2**16))
def test_where_of_a_mask_and_a_float_tensor_matches_numpy(dtype, cshape, xshape, y, seed):
  # (tensor.where's path for a bool Tensor, a float Tensor and a Tensor of its dtype or a Python number)
  rng = np.random.default_rng(seed)
  c, x = rng.random(cshape) < 0.5, rng.standard_normal(xshape).astype(dtype)
  y = {"same": rng.standard_normal(xshape).astype(dtype), "other": rng.standard_normal(xshape).astype(np.float64),
       "np": np.float32(1.5)}.get(y, y) if isinstance(y, str) else y
  ty = mt.asarray(y) if isinstance(y, np.ndarray) else y
  want = numpy_or_error(lambda: np.where(c, x, y))
  what = f"where({cshape}, {dtype.__name__}{xshape}, {y!r})"
  if isinstance(want, type):
    with pytest.raises(want): mt.where(mt.asarray(c), mt.asarray(x), ty)
  else: assert_same(mt.where(mt.asarray(c), mt.asarray(x), ty), want, what)


# ---------------------------------------------------------------------- scalars: NEP 50 weak Python scalars
PY_SCALARS = [0, 1, -1, 7, 1000, -129, 2**40, 1.5, -0.0, float("nan"), float("inf"), True, False]
NP_SCALARS = [np.int8(-3), np.uint8(200), np.int64(5), np.uint64(5), np.float16(0.5), np.float32(2.5), np.float64(-1.0),
              np.bool_(True)]


@given(d=st.sampled_from(DTYPES),
       calls=st.lists(st.tuples(st.sampled_from(BINARY), st.sampled_from(PY_SCALARS + NP_SCALARS),
                                st.booleans()), min_size=1, max_size=4))
def test_scalar_operands(d, calls):
  """A Python scalar takes the Tensor's dtype (or raises OverflowError as NumPy 2); a NumPy scalar is typed."""
  x = special(d)
  t = mt.asarray(x)
  cases = []
  for f, s, left in calls:
    args, targs = ((s, x), (s, t)) if left else ((x, s), (t, s))
    want = numpy_or_error(f, *args)
    if want is ValueError and f is np.power and left: continue   # data-dependent (negative integer exponents)
    if isinstance(want, type):
      with pytest.raises(want): getattr(mt, f.__name__)(*targs)
    else: cases.append((f"{f.__name__}{args}", getattr(mt, f.__name__)(*targs), want))
  mt.realize(*(c[1] for c in cases))
  for what, got, want in cases: assert_same(got, want, what)


def test_weak_scalar_typing_examples():
  i8, f32, i64 = (np.arange(-3, 3, dtype=d) for d in (np.int8, np.float32, np.int64))
  ti8, tf32, ti64 = mt.asarray(i8), mt.asarray(f32), mt.asarray(i64)
  assert_same(ti8 + 1, i8 + 1, "int8 + 1 stays int8")
  assert_same(tf32 * 2.0, f32 * 2.0, "float32 * 2.0 stays float32")
  assert_same(ti64 + 1.5, i64 + 1.5, "int64 + 1.5 is float64")
  assert_same(ti8 < 1000, i8 < 1000, "comparison with an out-of-range int")
  assert_same(mt.asarray(np.array([2**63 - 1], np.int64)) == mt.asarray(np.array([2**64 - 1], np.uint64)),
              np.array([2**63 - 1], np.int64) == np.array([2**64 - 1], np.uint64), "int64 == uint64")
  for f in (operator.add, operator.mul, operator.sub):
    with pytest.raises(OverflowError): f(i8, 1000)
    with pytest.raises(OverflowError): f(ti8, 1000)
  with pytest.raises(ValueError): ti8 ** -1
  with pytest.raises(ValueError): ti8 ** np.int64(-1)


# ---------------------------------------------------------------------- Python operators
BINARY_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
              operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift, operator.lt, operator.le,
              operator.gt, operator.ge, operator.eq, operator.ne]
INPLACE_OPS = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
               operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
               operator.ipow: operator.pow, operator.iand: operator.and_, operator.ior: operator.or_,
               operator.ixor: operator.xor, operator.ilshift: operator.lshift, operator.irshift: operator.rshift}
UNARY_OPS = [operator.neg, operator.pos, abs, operator.invert]


def _numpy_op(op, *args):
  """NumPy's result of a Python operator, or the exception type (in-place forms on a copy of the first operand)."""
  if op in INPLACE_OPS: args = (np.array(args[0], copy=True),) + args[1:]
  return numpy_or_error(op, *args)


@pytest.mark.parametrize("d", [np.dtype(d) for d in ("bool", "int8", "uint8", "int64", "float16", "float32")], ids=str)
def test_operators(d):
  """Tensor op Tensor, Tensor op ndarray, ndarray op Tensor, scalar op Tensor, in-place forms, unary operators."""
  v = special(d)[:12]
  a, b = v.reshape(3, 4), v[::-1][:4].copy()
  b = np.where(b < 0, 0, b).astype(d) if d.kind in "iu" else b   # integer powers: exponents non-negative
  ta, tb = mt.asarray(a), mt.asarray(b)
  cases = []
  def case(what, op, targs, args):
    want = _numpy_op(op, *args)
    if want is ValueError and op is operator.pow: return   # 3 ** t: NumPy checks t's data for negative ints
    if isinstance(want, type):
      with pytest.raises(want): op(*targs)
    else: cases.append((what, op(*targs), want))
  for op in BINARY_OPS:
    case(f"t {op.__name__} t", op, (ta, tb), (a, b))
    case(f"t {op.__name__} ndarray", op, (ta, b), (a, b))
    case(f"ndarray {op.__name__} t", op, (a, tb), (a, b))
    case(f"3 {op.__name__} t", op, (3, ta), (3, a))
  for op in INPLACE_OPS:
    t = mt.asarray(a)
    alias, view = t, t[1:]
    want = _numpy_op(op, a, b)
    if isinstance(want, type):
      with pytest.raises(want): op(t, tb)
      assert_same(t, a, f"{op.__name__} failed: unchanged")
      continue
    assert op(t, tb) is t
    cases += [(f"t {op.__name__}= t", t, want), (f"alias after {op.__name__}=", alias, want),
              (f"view after {op.__name__}=", view, want[1:])]
  for op in UNARY_OPS: case(op.__name__, op, (ta,), (a,))
  q = _numpy_op(divmod, a, b)
  if isinstance(q, type):
    with pytest.raises(q): divmod(ta, tb)
  else: cases += [("divmod[0]", divmod(ta, tb)[0], q[0]), ("divmod[1]", divmod(ta, tb)[1], q[1])]
  mt.realize(*(c[1] for c in cases))
  for what, got, want in cases: assert_same(got, want, f"{what} on {d}")
  assert_same(ta, a, "operands are unchanged by in-place forms")


@pytest.mark.parametrize("dt", [np.float64, np.float16, np.float32])
def test_fmax_fmin_of_two_zeros_return_the_first_operand(dt):
  """fmax/fmin of 0.0 and -0.0 (either order, NaN beside) return the first operand, bit for bit NumPy's float64 and
  float16 results on short arrays and scalars (C's fmax). NumPy's float32 loops and its long float64 SIMD loops
  return another zero; minitensor keeps the rule for every dtype and length (README, Limitations)."""
  x, y = np.array([0.0, -0.0, np.nan, -0.0], dt), np.array([-0.0, 0.0, -0.0, np.nan], dt)
  pairs = [(x, y), (y, x), (x[0], y[0]), (x[1], y[1])]
  fs = [np.fmax, np.fmin]
  got = mt.realize(*(getattr(mt, f.__name__)(mt.asarray(a), mt.asarray(b)) for f in fs for a, b in pairs))
  bits = lambda v: np.asarray(v).view(f"u{np.dtype(dt).itemsize}")
  for (f, (a, b)), g in zip([(f, p) for f in fs for p in pairs], got):
    first = np.where(np.isnan(a), b, a)          # the rule: a unless a is NaN
    np.testing.assert_array_equal(bits(g), bits(first), err_msg=f"{f.__name__}({a}, {b})")
    if dt is not np.float32: np.testing.assert_array_equal(bits(g), bits(f(a, b)), err_msg=f"NumPy's {f.__name__}")


def test_inplace_updates_every_alias_as_numpy():
  t = mt.asarray(np.arange(4, dtype=np.int8))
  a = np.arange(4, dtype=np.int8)
  u, ua = t, a
  t += 1; a += 1
  t *= 3; a *= 3
  assert u is t
  assert_same(u, ua, "the alias")
  with pytest.raises(TypeError, match="same_kind"): t *= 1.5      # float64 into int8: NumPy's casting error
  with pytest.raises(ValueError, match="non-broadcastable"): t += mt.ones((2, 4), np.int8)
  with pytest.raises(OverflowError): t += 1000
  assert_same(t, a, "unchanged by the failed forms")
  f = mt.asarray(np.arange(4, dtype=np.float32)); fa = np.arange(4, dtype=np.float32)
  f /= np.float64(3); fa /= np.float64(3)                           # same kind: float32 stays
  assert_same(f, fa, "float32 /= float64")


def test_bad_operands():
  t = mt.asarray(np.arange(3.0))
  with pytest.raises(ValueError): t + mt.asarray(np.ones(4))
  with pytest.raises(TypeError): t + "a"
  with pytest.raises(TypeError): t & 1
  with pytest.raises(TypeError): mt.add(t)


# ---------------------------------------------------------------------- float -> integer casts
CAST_SPECIALS = [np.nan, np.inf, -np.inf, -1e20, 1e20, -5.0, 3e9, -0.5, 0.0, -0.0, 1.5, -2.9, 300.0, -129.0, 65536.0,
                 2.0**31, -2.0**31, -2.0**31 - 1, 2.0**32, 4294967295.5, 2.0**63, -2.0**63, 2.0**64, 1e300]
FLOATS = [np.dtype(d) for d in ("float16", "float32", "float64")]
INTS = [np.dtype(d) for d in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")]


def numpy_cast(a: np.ndarray, to: np.dtype) -> np.ndarray:
  """NumPy's float -> integer conversion on x86-64 as its scalars and strided loops do it, element by element
  (NumPy's contiguous float -> uint32 loop is vectorized and gives 2**31 instead of 0 for NaN, inf and values
  below -2**31: NumPy disagrees with itself there; minitensor gives the scalar value in every layout)."""
  with np.errstate(all="ignore"), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    return np.array([np.array(v).astype(to) for v in a.ravel()], dtype=to).reshape(a.shape)


def cast_layouts(a: np.ndarray, to: np.dtype) -> dict:
  """a.astype(to) computed from a contiguous tensor, strided views (transposed, sliced, reversed), a fused
  expression, a 0-d tensor and constants (folded by the compiler)."""
  m = np.stack([a, a[::-1]], 1)                # (n, 2): column 0 is a, read with stride 2
  t = mt.asarray(m)
  out = {"contiguous": (mt.asarray(a).astype(to), a), "strided": (t[:, 0].astype(to), a),
         "transposed": (t.T.astype(to), m.T), "reversed": (t[::-1, 1].astype(to), a),
         "fused": ((mt.asarray(a) * 1).astype(to), a),
         "scalar": (mt.asarray(a[:1].reshape(())).astype(to), a[:1].reshape(()))}
  if a.size: out["constant"] = (mt.full((3,), a.flat[0], a.dtype).astype(to), np.full((3,), a.flat[0], a.dtype))
  return out


@pytest.mark.parametrize("src", FLOATS, ids=str)
def test_float_to_int_cast_table(src):
  """Special values (NaN, inf, out of range, negative to unsigned) of every float dtype to every integer dtype
  and bool, in every layout: NumPy's x86-64 values."""
  with np.errstate(all="ignore"): a = np.array(CAST_SPECIALS, np.float64).astype(src)
  cases = [(f"{src} -> {to} {name}", got, numpy_cast(x, to))
           for to in INTS for name, (got, x) in cast_layouts(a, to).items()]
  mt.realize(*(c[1] for c in cases))
  for what, got, want in cases: assert_same(got, want, what)


@settings(max_examples=max(10, settings.default.max_examples // 3))     # each new dtype pair compiles
@given(src=st.sampled_from(FLOATS), to=st.sampled_from(INTS),
       data=st.lists(st.one_of(st.floats(), st.floats(-3e9, 3e9), st.sampled_from(CAST_SPECIALS)), min_size=1,
                     max_size=12))
def test_float_to_int_casts_random(src, to, data):
  with np.errstate(all="ignore"): a = np.array(data, np.float64).astype(src)
  for name, (got, x) in cast_layouts(a, to).items(): assert_same(got, numpy_cast(x, to), f"{src} -> {to} {name}")


_NP_SCALARS = [np.float16(2.5), np.float32(-1.5), np.float64(3.25), np.int8(-3), np.int16(300), np.int32(7),
               np.int64(-2), np.uint8(200), np.uint32(9), np.uint64(5), np.bool_(True), np.complex64(1 + 2j),
               np.complex128(2 - 1j), np.float64("nan"), np.int64(0)]
_BINARY = [np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.remainder, np.maximum, np.fmin,
           np.greater, np.equal, np.logical_xor, np.arctan2, np.hypot, np.copysign, np.bitwise_and, np.left_shift,
           np.power]


@given(scalar=st.sampled_from(range(len(_NP_SCALARS))), ufunc=st.sampled_from(_BINARY), left=st.booleans(),
       dtype=st.sampled_from(["float16", "float32", "float64", "int8", "int32", "int64", "uint8", "uint64", "bool",
                              "complex64", "complex128"]))
def test_numpy_scalars_are_typed_as_numpy_2_types_them(scalar, ufunc, left, dtype):
  """A NumPy scalar with a Tensor (either side) is a 0-d array of its dtype, as NumPy 2 types it (not weak as a
  Python scalar): NumPy's result dtype and values, or NumPy's exception type."""
  s, a = _NP_SCALARS[scalar], (np.arange(-3, 5) * 1.5).astype(dtype)
  call = (lambda x: ufunc(s, x)) if left else (lambda x: ufunc(x, s))
  with np.errstate(all="ignore"):
    try: want = call(a)
    except Exception as e:                                          # noqa: BLE001  (NumPy's type is the oracle)
      with pytest.raises(type(e)): np.asarray(call(mt.asarray(a)))
      return
    got = np.asarray(call(mt.asarray(a)))
  assert got.dtype == want.dtype
  np.testing.assert_allclose(got, want, rtol=1e-3 if want.dtype == np.float16 else 1e-6, equal_nan=True)
