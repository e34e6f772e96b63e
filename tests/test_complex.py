"""complex64 and complex128 end to end, against NumPy: special values (every pair of parts from a grid of zeros,
ones, tiny, huge, infinities and NaN), random values (hypothesis), promotion, casts, printing, reductions, matmul.

Each test realizes many functions together: one compile per translation unit, and a fixed length so hypothesis
examples reuse the kernels."""
import itertools
import math
import warnings
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend import tiers
from minitensor.backend.dtype import dtypes
from minitensor.backend.realize import scheduled
from minitensor.backend.render_c import COMPLEX_PRELUDE, PRELUDE
from minitensor.backend.uop import Ops, UOp

CDTYPES = (np.complex64, np.complex128)
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-30, 3e38, math.inf, -math.inf, math.nan]
UNARY = ("sqrt exp expm1 exp2 log log1p log2 log10 sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh "
         "arctanh square reciprocal sign negative positive conjugate absolute isnan isinf isfinite rint").split()
BINARY = ("add subtract multiply divide power equal not_equal less less_equal greater greater_equal maximum minimum "
          "fmax fmin").split()
# relative to |NumPy's value|: both call the same glibc functions, so only the tier-1 vector math inside the
# helpers (expm1, log1p, exp2, log2, log10) and NumPy's own SIMD loops can differ, by a few ulp
RTOL = {np.dtype(np.float16): 0.0, np.dtype(np.complex64): 2e-6, np.dtype(np.float32): 2e-6,
        np.dtype(np.complex128): 1e-14, np.dtype(np.float64): 1e-14}


def _grid(dt) -> np.ndarray:
  return np.array([complex(r, i) for r, i in itertools.product(SPECIAL, SPECIAL)], dt)


def _overflows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  """Where a * b has finite parts whose partial products overflow: there a fused multiply-add and the plain
  formula give different infinities or NaN, and NumPy's complex multiply is fused or not by its SIMD dispatch."""
  big = np.finfo(a.real.dtype).max
  parts = [(a.real, b.real), (a.imag, b.imag), (a.real, b.imag), (a.imag, b.real)]
  with np.errstate(all="ignore"):
    return np.any([np.isfinite(x) & np.isfinite(y) & (np.abs(x.astype(np.float64) * y) > big) for x, y in parts],
                  axis=0)


def assert_same(got, want, mask=None, rtol=None) -> None:
  """got equals NumPy's want: the dtype, NaN and infinite parts exactly (signed zeros too), finite parts within
  rtol of |want| (the complex modulus: a part that cancels is judged against the whole value)."""
  g, w = np.asarray(got), np.asarray(want)
  assert g.dtype == w.dtype, (g.dtype, w.dtype)
  assert g.shape == w.shape
  keep = np.ones(w.shape, bool) if mask is None else ~mask
  if w.dtype.kind in "biu":
    bad = (g != w) & keep
  else:
    with np.errstate(all="ignore"): tol = (RTOL[w.dtype] if rtol is None else rtol) * np.abs(w)
    bad = np.zeros(w.shape, bool)
    for gp, wp in ((g.real, w.real), (g.imag, w.imag)) if w.dtype.kind == "c" else ((g, w),):
      with np.errstate(all="ignore"):
        exact = (gp == wp) & (np.signbit(gp) == np.signbit(wp)) | (np.isnan(gp) & np.isnan(wp))
        near = np.isfinite(wp) & np.isfinite(gp) & (np.abs(gp - wp) <= tol)
      bad |= ~(exact | near) & keep
  if bad.any():
    i = np.flatnonzero(bad.ravel())[:5]
    raise AssertionError(f"{int(bad.sum())} mismatches, e.g. got {g.ravel()[i]} want {w.ravel()[i]}")


def _check_all(pairs: list, rtol=None) -> None:
  """Realize every minitensor result together (one compile), then compare each with NumPy's."""
  mt.realize(*[g for g, _ in pairs])
  for k, (g, w) in enumerate(pairs):
    try: assert_same(g, w, rtol=rtol)
    except AssertionError as e: raise AssertionError(f"case {k}: {e}") from None


def _unary_all(a: np.ndarray) -> None:
  x = mt.asarray(a)
  outs = {n: getattr(mt, n)(x) for n in UNARY}
  mt.realize(*outs.values())
  for n, r in outs.items():
    with np.errstate(all="ignore"): w = getattr(np, n)(a)
    try: assert_same(r, w, _overflows(a, a) if n == "square" else None)
    except AssertionError as e: raise AssertionError(f"{n}({a.dtype}): {e}") from None


def _binary_all(a: np.ndarray, b: np.ndarray) -> None:
  x, y = mt.asarray(a), mt.asarray(b)
  outs = {n: getattr(mt, n)(x, y) for n in BINARY}
  mt.realize(*outs.values())
  for n, r in outs.items():
    with np.errstate(all="ignore"): w = getattr(np, n)(a, b)
    try: assert_same(r, w, _overflows(a, b) if n == "multiply" else None)
    except AssertionError as e: raise AssertionError(f"{n}({a.dtype}): {e}") from None


@pytest.mark.parametrize("dt", CDTYPES)
def test_unary_special_values(dt):
  _unary_all(_grid(dt))


@pytest.mark.parametrize("dt", CDTYPES)
def test_binary_special_values(dt):
  v = _grid(dt)
  _binary_all(np.repeat(v, len(v)), np.tile(v, len(v)))


N = 12
_part = st.one_of(st.sampled_from(SPECIAL), st.floats(-1e4, 1e4), st.floats(-3, 3))
_values = st.lists(st.builds(complex, _part, _part), min_size=N, max_size=N)


@given(_values, st.sampled_from(CDTYPES))
def test_unary_random(vals, dt):
  _unary_all(np.array(vals, dt))


@given(_values, _values, st.sampled_from(CDTYPES))
def test_binary_random(a, b, dt):
  _binary_all(np.array(a, dt), np.array(b, dt))


def test_branch_cuts_signed_zeros():
  """The Array API's branch cuts: on the cut the sign of the zero part picks the side, as in NumPy."""
  vals = (-2.0, -1.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5, 2.0)        # the cuts lie on the axes, past +-1
  a = np.array([complex(r, i) for r, i in itertools.product(vals, vals) if r == 0 or i == 0])
  x, pairs = mt.asarray(a), []
  for n in ("sqrt", "log", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "log1p", "power"):
    with np.errstate(all="ignore"):
      args = (0.5,) if n == "power" else ()
      pairs.append((getattr(mt, n)(x, *args), getattr(np, n)(a, *args)))
  _check_all(pairs)


# ---------------------------------------------------------------------- dtypes and promotion
_REAL = ("bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16", "float32", "float64")


@pytest.mark.parametrize("d1", _REAL + ("complex64", "complex128"))
def test_promotion_table(d1):
  for d2 in ("complex64", "complex128"):
    for x, y in ((d1, d2), (d2, d1)):
      t = mt.ones(2, x) + mt.ones(2, y)
      assert t.dtype == np.result_type(x, y), (x, y)
  for s in (1j, 2.5, 3, True):
    a = np.ones(2, d1)
    with np.errstate(all="ignore"):
      assert (mt.asarray(a) * s).dtype == (a * s).dtype, (d1, s)
      assert (s + mt.asarray(a)).dtype == (s + a).dtype, (d1, s)


def test_power_operator_shortcuts():
  """NumPy's `**` computes square, reciprocal and sqrt for the exact Python exponents 2, -1 and 0.5 (float and
  complex arrays), whose special values differ from np.power's; other exponents go to np.power."""
  a = np.array([complex(np.inf, 0), complex(0, np.inf), complex(-4, 0), complex(-np.inf, 0), 3 + 4j], np.complex128)
  b = np.array([complex(3e38, 3e38), 1 - 2j], np.complex64)
  f = np.array([-np.inf, -0.0, 4.0, np.nan], np.float32)
  x, y, g = mt.asarray(a), mt.asarray(b), mt.asarray(f)
  pairs = []
  with np.errstate(all="ignore"):
    for e in (2, -1, 0.5, 2.0, -1.0, 3, 0.5 + 0j):
      pairs += [(x ** e, a ** e), (y ** e, b ** e)]
    pairs += [(g ** 0.5, f ** 0.5), (g ** -1, f ** -1), (g ** 2, f ** 2)]
    z, c = mt.asarray(a.copy()), a.copy()
    z **= 0.5
    c **= 0.5
  _check_all(pairs + [(z, c)])


def test_weak_complex_scalar():
  x = mt.asarray(np.array([1.5, -2.0], np.float32))
  assert_same(x * 1j, np.array([1.5, -2.0], np.float32) * 1j)
  assert (x * 1j).dtype == np.complex64
  assert_same(mt.asarray(np.array([1, 2], np.int8)) + (1 + 2j), np.array([1, 2], np.int8) + (1 + 2j))
  assert mt.multiply(2j, 3).dtype == np.complex128 and complex(mt.multiply(2j, 3)) == 6j


def test_namespace_dtypes():
  assert mt.complex64 == np.complex64 and mt.complex128 == np.complex128
  assert mt.isdtype(mt.complex64, "complex floating") and not mt.isdtype(mt.float64, "complex floating")
  assert mt.result_type(mt.float32, 1j) == np.complex64
  assert mt.can_cast(mt.complex64, mt.complex128) and not mt.can_cast(mt.complex128, mt.float64)
  assert mt.finfo(mt.complex64).eps == np.finfo(np.float32).eps
  assert mt.__array_namespace_info__().default_dtypes()["complex floating"] == np.complex128
  assert set(mt.__array_namespace_info__().dtypes(kind="complex floating")) == {"complex64", "complex128"}


# ---------------------------------------------------------------------- creation, casts, scalars, printing
def test_creation():
  a = np.array([[1 + 2j, -0.0 - 1j], [np.inf + 0j, complex(0, np.nan)]], np.complex64)
  assert_same(mt.asarray(a), a)
  assert_same(mt.asarray([1j, 2]), np.asarray([1j, 2]))
  assert_same(mt.zeros((2, 3), np.complex64), np.zeros((2, 3), np.complex64))
  assert_same(mt.ones(3, complex), np.ones(3, complex))
  assert_same(mt.full((2,), 1 - 2j), np.full((2,), 1 - 2j))
  assert_same(mt.full((2,), 3, np.complex64), np.full((2,), 3, np.complex64))
  assert_same(mt.arange(4, dtype=np.complex128), np.arange(4, dtype=np.complex128))
  assert_same(mt.eye(3, dtype=np.complex64), np.eye(3, dtype=np.complex64))
  assert_same(mt.linspace(0, 1 + 1j, 5), np.linspace(0, 1 + 1j, 5))
  assert_same(mt.where(mt.asarray([True, False]), 1j, 2.0), np.where([True, False], 1j, 2.0))
  assert_same(mt.full(2, 1j, dtype=bool), np.full(2, 1j, dtype=bool))
  with pytest.warns(np.exceptions.ComplexWarning): t = mt.full(2, 1.5 + 1j, dtype=np.int32)
  with pytest.warns(np.exceptions.ComplexWarning): assert_same(t, np.full(2, 1.5 + 1j, dtype=np.int32))


def test_complex_to_real_casts():
  a = np.array([1.7 + 2j, -3.2 - 1j, 0j, 300.5 + 1j, 1e10 - 1j], np.complex128)
  pairs = []
  for to in _REAL:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      with np.errstate(all="ignore"): want = a.astype(to)
    with pytest.warns(np.exceptions.ComplexWarning) if to != "bool" else warnings.catch_warnings():
      pairs.append((mt.asarray(a).astype(to), want))
  _check_all(pairs)


def test_real_to_complex_casts():
  pairs = []
  for src in _REAL + ("complex64", "complex128"):
    a = np.array([0, 1, 2, 100], src) if src != "bool" else np.array([True, False])
    pairs += [(mt.asarray(a).astype(to), a.astype(to)) for to in CDTYPES]
  _check_all(pairs)


def test_complex_nan_inf_casts():
  a = np.array([complex(np.nan, 1), complex(np.inf, -np.inf), complex(-0.0, 0.0), complex(3e38, 1e300)])
  with np.errstate(over="ignore"): a64 = a.astype(np.complex64)
  assert_same(mt.asarray(a).astype(np.complex64), a64)
  assert_same(mt.asarray(a64).astype(np.complex128), a64.astype(np.complex128))
  assert_same(mt.asarray(a).astype(bool), a.astype(bool))


def test_scalars_and_printing():
  t = mt.asarray(np.array([1 + 2j, -0.5j], np.complex64))
  assert complex(t[0]) == 1 + 2j and t[1].item() == -0.5j and t.tolist() == [1 + 2j, -0.5j]
  with pytest.raises(TypeError): float(t[0])
  for a in (np.array([1 + 2j, np.nan - np.inf * 1j], np.complex64), np.array(3 - 4j), np.zeros((0, 2), complex)):
    x = -(-mt.asarray(a))       # computed, not the input buffer
    want = "Tensor(" + repr(a)[len("array("):].replace("\n      ", "\n       ")
    assert repr(x) == (want if "dtype=" in want else want[:-1] + f", dtype={a.dtype})")      # the dtype always shown
    assert str(x) == str(a)
  assert f"{complex(mt.asarray(np.array(1.25 + 1j)) * 2):.1f}" == "2.5+2.0j"


def test_parts():
  a = np.array([1 + 2j, -3 - 0.0j, complex(np.nan, np.inf), -0.0 + 0j], np.complex64)
  x, r = mt.asarray(a), np.array([1.5, -2.0, 0.0], np.float32)
  pairs = [(x.real, a.real), (x.imag, a.imag), (mt.angle(x, deg=True), np.angle(a, deg=True)),
           (mt.angle(mt.asarray([1, -1])), np.angle([1, -1])), (np.conjugate(x), np.conjugate(a))]  # __array_ufunc__
  pairs += [(getattr(mt, f)(x), getattr(np, f)(a)) for f in ("real", "imag", "conj", "conjugate", "angle", "abs")]
  pairs += [(getattr(mt, f)(mt.asarray(r)), getattr(np, f)(r)) for f in ("real", "imag", "conj", "angle")]
  _check_all(pairs)


def test_parts_are_writable_views():
  """As NumPy's: writes into .real/.imag (and views of them) change the complex array; a real array's .imag is
  read-only zeros."""
  a = np.array([[1 + 2j, 3 - 1j], [0j, 1j]], np.complex64)
  x = mt.asarray(a.copy())
  for arr in (a, x):
    arr.real[0, 1] = 7
    arr.imag[:, 0] = -5
    arr.real.T[1, 1] = 9
    arr.imag = arr.imag * 2
  assert_same(x, a)
  y = mt.asarray(np.ones(2))
  assert_same(y.imag, np.ones(2).imag)
  with pytest.raises(TypeError): np.ones(2)[0] = 1j
  with pytest.raises(TypeError): y[0] = 1j
  with pytest.warns(np.exceptions.ComplexWarning): y[:] = np.array([3 + 1j, 4j])
  assert_same(y, np.array([3.0, 0.0]))
  with pytest.raises(ValueError, match="read-only"): y.imag[0] = 1


def test_lexicographic_order():
  a = np.array([1 + 2j, 1 + 3j, complex(1, np.nan), 0 + 5j, complex(np.nan, 0), 2 - 1j])
  b = np.array([1 + 3j, 1 + 2j, 1 + 0j, complex(0, np.nan), 0j, 2 - 1j])
  x, y = mt.asarray(a), mt.asarray(b)
  with np.errstate(invalid="ignore"):
    pairs = [(getattr(mt, n)(x, y), getattr(np, n)(a, b))
             for n in ("less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "fmax", "fmin")]
  ok = np.array([[1 + 2j, 1 - 2j, 0 + 9j], [-1 + 0j, 3 - 3j, 3 + 3j]])
  _check_all(pairs + [(x.max(), a.max()), (x.min(), a.min()), (mt.asarray(ok).max(axis=0), ok.max(axis=0)),
                      (mt.asarray(ok).min(axis=1), ok.min(axis=1)), (mt.argmax(x), np.argmax(a)),
                      (mt.argmin(x[3:]), np.argmin(a[3:])), (mt.argmax(mt.asarray(ok), axis=1), np.argmax(ok, axis=1)),
                      (mt.sort(x), np.sort(a)), (mt.clip(x, 1 + 2.5j, 2 + 0j), np.clip(a, 1 + 2.5j, 2 + 0j))])


# ---------------------------------------------------------------------- reductions, scans, products
def _rand(shape, dt, seed=0) -> np.ndarray:
  r = np.random.default_rng(seed)
  return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dt)


@pytest.mark.parametrize("dt", CDTYPES)
def test_reductions(dt):
  a = _rand((5, 7, 3), dt)
  x = mt.asarray(a)
  pairs = [(getattr(x, f)(axis=axis), getattr(a, f)(axis=axis))
           for axis in (None, 0, (0, 2), -1) for f in ("sum", "prod", "mean", "var", "std")]
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
    pairs += [(x.var(axis=0, dtype=d), a.var(axis=0, dtype=d)) for d in (np.complex128, np.float64)]
  pairs += [(x.sum(axis=1, keepdims=True), a.sum(axis=1, keepdims=True)), (mt.cumsum(x, axis=1), np.cumsum(a, axis=1)),
            (mt.cumprod(x[:, :3], axis=1), np.cumprod(a[:, :3], axis=1))]
  _check_all(pairs, rtol=1e-5 if dt == np.complex64 else 1e-12)
  s = np.array([complex(np.inf, 0), complex(1, np.nan), 2j, complex(-np.inf, 1)], dt)
  with np.errstate(all="ignore"):
    pairs = [(getattr(mt.asarray(s[sl]), f)(), getattr(s[sl], f)())
             for f in ("sum", "prod", "mean") for sl in (slice(0, 1), slice(0, 3), slice(2, 4), slice(0, 4))]
  z = np.array([complex(-0.0, -0.0), complex(-0.0, 1)], dt)
  pairs += [(mt.cumsum(mt.asarray(z)), np.cumsum(z)), (mt.asarray(z).sum(), z.sum())]     # signed zeros as NumPy's
  w = np.array([[complex(1, np.inf), 2 + 0j, 1j], [complex(np.inf, 0), 1 - 1j, 2j]], dt)    # the first element as is
  with np.errstate(all="ignore"):
    pairs += [(mt.cumprod(mt.asarray(w), axis=ax), np.cumprod(w, axis=ax)) for ax in (0, 1)]
    pairs += [(mt.cumprod(mt.asarray(w[:, :1]), axis=1), np.cumprod(w[:, :1], axis=1))]
  pairs += [(mt.zeros((0, 3), dt).sum(axis=0), np.zeros((0, 3), dt).sum(axis=0)),
            (mt.ones((4,), dt).sum(), np.ones((4,), dt).sum())]      # a constant: no closed form, still exact
  _check_all(pairs)


@pytest.mark.parametrize("dt", CDTYPES)
def test_matmul_einsum(dt):
  a, b, v = _rand((2, 4, 5), dt, 1), _rand((5, 3), dt, 2), _rand((5,), dt, 3)
  x, y, u = mt.asarray(a), mt.asarray(b), mt.asarray(v)
  f = np.ones((5, 2), np.float32)
  _check_all([(x @ y, a @ b), (x @ u, a @ v), (mt.matmul(x, mt.asarray(f)), a @ f),
              (mt.einsum("bij,jk->bki", x, y), np.einsum("bij,jk->bki", a, b)),
              (mt.einsum("i,i->", u, u.conj()), np.einsum("i,i->", v, v.conj())), (mt.dot(u, u), np.dot(v, v)),
              (mt.vecdot(x, u), np.vecdot(a, v)), (mt.tensordot(x, y, 1), np.tensordot(a, b, 1))],
             rtol=1e-5 if dt == np.complex64 else 1e-12)


# ---------------------------------------------------------------------- the compiler side
def test_rendering_and_tier0_compiler():
  """Complex kernels are C99 _Complex compiled by the C compiler (tcc has no _Complex); the helpers come once
  per translation unit and real kernels do not carry them (the fixed PRELUDE still compiles with tcc)."""
  x = mt.asarray(np.ones(3, np.complex64))
  src = mt.explain(x * x + x).kernels[0].source
  assert "float _Complex" in src and "cmul_c64" in src and src.count("#define MT_COMPLEX_HELPERS") == 1
  (k,) = scheduled([(x * x + x).uop])[0].kernels
  assert k.program.needs == {"complex"} and tiers.tcc_lacks(k.program.needs) and not tiers.tcc_lacks(())
  assert "_Complex" not in PRELUDE and "MT_COMPLEX_HELPERS" in COMPLEX_PRELUDE
  assert tiers.toolchain(0, True)[0] == tiers.compiler()
  assert "_Complex" not in mt.explain(mt.asarray(np.ones(3, np.float32)) * 2).kernels[0].source


def test_no_folding_that_changes_values():
  """z * (1+0j) is not z when a part is infinite (NumPy's product gives NaN), so it is not simplified away;
  the exact constant ops (parts, CMPLX, ==) fold."""
  from minitensor.backend.symbolic import simplify
  c = UOp.const(complex(1, 2), dtypes.complex64)
  assert simplify(UOp(Ops.REAL, (c,))).arg == 1.0 and simplify(UOp(Ops.IMAG, (c,))).arg == 2.0
  parts = (UOp.const(-0.0, dtypes.float64), UOp.const(math.inf, dtypes.float64))
  assert repr(simplify(UOp(Ops.CMPLX, parts)).arg) == repr(complex(-0.0, math.inf))
  assert simplify(c.eq(UOp.const(complex(1, 2), dtypes.complex64))).arg is True
  z = mt.asarray(np.array([complex(np.inf, np.inf), 1 + 1j], np.complex64))
  with np.errstate(all="ignore"):
    assert_same(z * 1, np.array([complex(np.inf, np.inf), 1 + 1j], np.complex64) * 1)
    assert_same(z / (1 + 0j), np.array([complex(np.inf, np.inf), 1 + 1j], np.complex64) / (1 + 0j))


def test_type_rules():
  from minitensor.backend.uop import UOpError
  c = UOp.const(1j, dtypes.complex128)
  assert UOp(Ops.ABS, (c,)).dtype is dtypes.float64 and UOp(Ops.REAL, (c,)).dtype is dtypes.float64
  assert UOp(Ops.CMPLX, (UOp.const(1.0, dtypes.float32),) * 2).dtype is dtypes.complex64
  for bad in (lambda: UOp(Ops.FLOOR, (c,)), lambda: c < c, lambda: UOp(Ops.REAL, (UOp.const(1.0, dtypes.float32),)),
              lambda: UOp(Ops.CMPLX, (UOp.const(1, dtypes.int32),) * 2)):
    with pytest.raises(UOpError): bad()
  with pytest.raises(TypeError, match="floor"): mt.floor(mt.asarray([1j]))
  with pytest.raises(TypeError, match="remainder"): mt.asarray([1j]) % 2


@settings(max_examples=15)
@given(mt.testing.arrays(np.complex64, (6,)))
def test_testing_strategies_draw_complex(a):
  assert a.dtype == np.complex64 and a.shape == (6,)
  with np.errstate(all="ignore"): mt.testing.assert_matches_numpy(lambda x: x * 2 - x, a)


def test_testing_helpers_compare_both_parts():
  a = np.array([1 + 2j, -0.5j, complex(np.nan, 1)], np.complex64)
  mt.testing.assert_matches_numpy(lambda x: x * x - x, a)
  with pytest.raises(AssertionError, match="differ"):
    mt.testing.assert_matches_numpy(lambda x: x.conj() if isinstance(x, mt.Tensor) else x, a)


def test_tier1_same_values(monkeypatch):
  """-O3 -march=native code (vector math inside the helpers) stays within the tolerances of tier 0."""
  monkeypatch.setenv("MINITENSOR_TIER", "1")
  _unary_all(_grid(np.complex64)[::3])


def _spectrum_energy(x):
  """Array-agnostic code: only x.__array_namespace__() names (the Array API), complex in and out."""
  xp = x.__array_namespace__()
  z = x * xp.exp(1j * xp.asarray(0.25, dtype=xp.float32)) + xp.conj(x) / 2
  mag = xp.abs(z)
  unit = xp.where(mag > 0, z / xp.astype(mag, z.dtype), xp.zeros_like(z))
  return xp.sum(xp.real(z) ** 2 + xp.imag(z) ** 2, axis=-1), xp.mean(unit, axis=0), xp.isfinite(z), xp.sqrt(z)


def test_array_agnostic_code():
  a = np.array([[1 + 2j, -0.5j, 0j], [3 - 1j, complex(np.inf, 0), 2 + 2j]], np.complex64)
  with np.errstate(all="ignore"):
    want = _spectrum_energy(a)
    got = _spectrum_energy(mt.asarray(a))
  _check_all(list(zip(got, want)), rtol=1e-5)
