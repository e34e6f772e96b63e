"""render_c: the prelude's semantics checked through real kernels against NumPy (floor division and modulo,
NaN-propagating max/min, shifts past the width, small-int wrapping, float to integer casts), literals, casts, the
index type, and every kernel compiled with -Wall -Werror (and under UBSan: no undefined behaviour)."""
import os
import re
import subprocess
import sys
import numpy as np
import pytest
from minitensor.backend.debug import run_c
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.render_c import PRELUDE, index_type, render_c, render_function
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import Ops, UOp, buf, range_, sink
from strict_c import CC, compile_strict


def elementwise(fns, d: DType, n: int):
  """One kernel: out_k[i] = fns[k](a[i], b[i]) for every k (slots 0, 1 inputs; 2.. outputs), one loop."""
  r = range_(n, 0)
  a, b = buf(0, n, d).index(r).load(), buf(1, n, d).index(r).load()
  vals = [f(a, b) for f in fns]
  stores = [buf(2 + k, n, v.dtype).index(r).store(v) for k, v in enumerate(vals)]
  return sink(UOp(Ops.END, (UOp(Ops.SINK, tuple(stores)), r)))


def run_elementwise(fns, d: DType, a: np.ndarray, b: np.ndarray, name: str, simp: bool = True) -> list[np.ndarray]:
  n = a.size
  s = elementwise(fns, d, n)
  if simp: s = simplify(s)
  outs = {u.arg.slot: u for u in s.toposort() if u.op is Ops.BUFFER and u.arg.slot >= 2}
  res = {k: np.zeros(n, u.dtype.np) for k, u in outs.items()}
  compile_strict(render_c(s, name))
  run_c(s, {0: np.ascontiguousarray(a, d.np), 1: np.ascontiguousarray(b, d.np), **res}, name)
  return [res[k] for k in sorted(res)]


def pairs(vals, d: DType):
  a, b = np.meshgrid(np.array(vals, dtype=d.np), np.array(vals, dtype=d.np))
  return a.ravel(), b.ravel()


def assert_same_floats(got, want, msg=""):
  np.testing.assert_array_equal(got, want, err_msg=msg)
  both = ~np.isnan(want)
  np.testing.assert_array_equal(np.signbit(got[both]), np.signbit(want[both]), err_msg=f"sign of zero: {msg}")


def int_vals(d: DType):
  return sorted({v for v in (d.min, d.min + 1, -9, -7, -3, -2, -1, 0, 1, 2, 3, 7, 9, 100, d.max - 1, d.max)
                 if d.min <= v <= d.max})


# ---------------------------------------------------------------- integer floor division and modulo
@pytest.mark.parametrize("d", [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.uint32, dtypes.int64,
                               dtypes.uint64],
                         ids=lambda d: d.name)
def test_int_floordiv_mod_match_numpy(d):
  a, b = pairs(int_vals(d), d)
  q, m = run_elementwise([lambda x, y: x // y, lambda x, y: x % y], d, a, b, f"divmod_{d.name}")
  with np.errstate(all="ignore"):
    np.testing.assert_array_equal(q, np.floor_divide(a, b), err_msg=f"{d.name} //")
    np.testing.assert_array_equal(m, np.remainder(a, b), err_msg=f"{d.name} %")


@pytest.mark.parametrize("d", [dtypes.int8, dtypes.int32, dtypes.int64], ids=lambda d: d.name)
def test_int_floordiv_mod_by_constants(d):
  # a constant divisor of either sign (and the bounds-proven fast path for a non-negative one)
  a = np.array(int_vals(d), dtype=d.np)
  cs = [-7, -1, 1, 3, 8]
  fns = [(lambda c: lambda x, y: x // UOp.const(c, d))(c) for c in cs] + \
    [(lambda c: lambda x, y: x % UOp.const(c, d))(c) for c in cs]
  outs = run_elementwise(fns, d, a, a, f"divmodc_{d.name}")
  with np.errstate(all="ignore"):
    for c, q, m in zip(cs, outs[:len(cs)], outs[len(cs):]):
      np.testing.assert_array_equal(q, a // d.np.type(c), err_msg=f"{d.name} // {c}")
      np.testing.assert_array_equal(m, a % d.np.type(c), err_msg=f"{d.name} % {c}")


FLOATS = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 7.0, -7.0, 0.1, 3.0, 1e30, -1e-30, 5e-39, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("d", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_float_floordiv_mod_match_numpy(d):
  a, b = pairs(FLOATS, d)
  q, m = run_elementwise([lambda x, y: x // y, lambda x, y: x % y], d, a, b, f"fdivmod_{d.name}")
  with np.errstate(all="ignore"):
    assert_same_floats(q, np.floor_divide(a, b), f"{d.name} floor_divide")
    assert_same_floats(m, np.remainder(a, b), f"{d.name} remainder")


# ---------------------------------------------------------------- max / min
@pytest.mark.parametrize("d", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_float_max_min_propagate_nan(d):
  a, b = pairs([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan], d)
  mx, mn = run_elementwise([lambda x, y: x.maximum(y), lambda x, y: x.minimum(y)], d, a, b, f"maxmin_{d.name}")
  assert_same_floats(mx, np.maximum(a, b), "maximum")
  assert_same_floats(mn, np.minimum(a, b), "minimum")


@pytest.mark.parametrize("d", [dtypes.int8, dtypes.uint8, dtypes.int64], ids=lambda d: d.name)
def test_int_max_min(d):
  a, b = pairs(int_vals(d), d)
  mx, mn = run_elementwise([lambda x, y: x.maximum(y), lambda x, y: x.minimum(y)], d, a, b, f"imaxmin_{d.name}")
  np.testing.assert_array_equal(mx, np.maximum(a, b))
  np.testing.assert_array_equal(mn, np.minimum(a, b))


# ---------------------------------------------------------------- shifts
@pytest.mark.parametrize("d", [dtypes.int8, dtypes.uint8, dtypes.int32, dtypes.int64, dtypes.uint64],
                         ids=lambda d: d.name)
def test_shifts_past_width(d):
  xs = [v for v in (d.min, -5, -1, 0, 1, 3, 100, d.max) if d.min <= v <= d.max]
  ss = [v for v in (-1, 0, 1, 3, 7, 8, 9, 15, 16, 31, 32, 33, 63, 64, 65, 100) if d.min <= v <= d.max]
  a, b = (g.ravel() for g in np.meshgrid(np.array(xs, d.np), np.array(ss, d.np)))
  shl, shr = run_elementwise([lambda x, y: x << y, lambda x, y: x >> y], d, a, b, f"shifts_{d.name}")
  np.testing.assert_array_equal(shl, np.left_shift(a, b), err_msg=f"{d.name} <<")
  np.testing.assert_array_equal(shr, np.right_shift(a, b), err_msg=f"{d.name} >>")


# ---------------------------------------------------------------- small integers wrap like NumPy's
@pytest.mark.parametrize("d", [dtypes.int8, dtypes.uint8, dtypes.int32, dtypes.int64], ids=lambda d: d.name)
def test_overflow_wraps_inside_expressions(d):
  a, b = pairs(int_vals(d), d)
  three, seven = UOp.const(3, d), UOp.const(7, d)
  zero = UOp.const(0, d)
  fns = [lambda x, y: (x + y) // three, lambda x, y: (x * y) % seven, lambda x, y: (x * y + x) // (y + three),
         lambda x, y: (x + y).maximum(x * three), lambda x, y: ((x + y) < x).where(x * y, y - x),
         lambda x, y: (x // y).maximum(zero), lambda x, y: (x // y) < x, lambda x, y: (x << three) < zero]
  outs = run_elementwise(fns, d, a, b, f"wrap_{d.name}")
  with np.errstate(all="ignore"):
    t, s, z = d.np.type(3), d.np.type(7), d.np.type(0)
    want = [(a + b) // t, (a * b) % s, (a * b + a) // (b + t), np.maximum(a + b, a * t),
            np.where(a + b < a, a * b, b - a),
            np.maximum(a // b, z), (a // b) < a, np.left_shift(a, t) < z]
  for k, (g, w) in enumerate(zip(outs, want)):
    np.testing.assert_array_equal(g, w, err_msg=f"{d.name} expression {k}")


def test_int8_wrap_without_simplify():
  # the same through the renderer only: no constant folding hides the wrap
  d = dtypes.int8
  a, b = pairs([-128, -100, -1, 0, 1, 100, 127], d)
  (out,) = run_elementwise([lambda x, y: (x + y) // UOp.const(3, d)], d, a, b, "wrap_raw", simp=False)
  np.testing.assert_array_equal(out, (a + b) // np.int8(3))


def test_int_abs_and_neg_wrap():
  for d in (dtypes.int8, dtypes.int32, dtypes.int64):
    a = np.array(int_vals(d), d.np)
    ab, ng = run_elementwise([lambda x, y: UOp(Ops.ABS, (x,)), lambda x, y: -x], d, a, a, f"absneg_{d.name}")
    np.testing.assert_array_equal(ab, np.abs(a), err_msg=d.name)
    np.testing.assert_array_equal(ng, np.negative(a), err_msg=d.name)


# ---------------------------------------------------------------- literals and casts
@pytest.mark.parametrize("d", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_float_literals(d):
  cs = [0.1, -0.0, 1e-45, 5e-324, 3.4028235e38, 1e300, np.inf, -np.inf, np.nan, 1 / 3]
  a = np.array([1.0, -1.0, 0.5, 0.0], d.np)
  fns = [(lambda c: lambda x, y: x * UOp.const(c, d))(c) for c in cs] + \
    [(lambda c: lambda x, y: x + UOp.const(c, d))(c) for c in cs]
  outs = run_elementwise(fns, d, a, a, f"lit_{d.name}")
  with np.errstate(all="ignore"):
    want = [a * d.np.type(c) for c in cs] + [a + d.np.type(c) for c in cs]
  for c, g, w in zip(cs + cs, outs, want): assert_same_floats(g, w, f"constant {c!r}")


@pytest.mark.parametrize("d", [dtypes.int8, dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.uint64],
                         ids=lambda d: d.name)
def test_int_literals(d):
  cs = [v for v in (d.min, d.min + 1, -1, 1, d.max) if d.min <= v <= d.max]
  a = np.array([0, 1, -1 if d.kind == "i" else 2, 5], d.np)
  fns = [(lambda c: lambda x, y: x + UOp.const(c, d))(c) for c in cs] + \
    [(lambda c: lambda x, y: x.maximum(UOp.const(c, d)))(c) for c in cs]
  outs = run_elementwise(fns, d, a, a, f"ilit_{d.name}")
  with np.errstate(all="ignore"):
    want = [a + d.np.type(c) for c in cs] + [np.maximum(a, d.np.type(c)) for c in cs]
  for c, g, w in zip(cs + cs, outs, want): np.testing.assert_array_equal(g, w, err_msg=f"{d.name} constant {c}")


def test_casts_match_numpy():
  r = range_(8, 0)
  f = np.array([0.0, -0.0, 0.5, -1.7, 2.9, 100.6, -128.0, 0.1], np.float32)
  i = np.array([0, 1, -1, 127, 128, 255, 256, -129], np.int32)
  x, y = buf(0, 8, dtypes.float32).index(r).load(), buf(1, 8, dtypes.int32).index(r).load()
  vals = [x.cast(dtypes.int32), x.cast(dtypes.bool), x.cast(dtypes.float64), y.cast(dtypes.int8), y.cast(dtypes.uint8),
          y.cast(dtypes.float32), y.cast(dtypes.bool), (y < 2).cast(dtypes.int32)]
  s = simplify(sink(UOp(Ops.END, (UOp(Ops.SINK, tuple(buf(2 + k, 8, v.dtype).index(r).store(v)
                                                      for k, v in enumerate(vals))), r))))
  outs = [np.zeros(8, v.dtype.np) for v in vals]
  compile_strict(render_c(s, "casts"))
  run_c(s, {0: f, 1: i, **{2 + k: o for k, o in enumerate(outs)}}, "casts")
  want = [f.astype(np.int32), f.astype(bool), f.astype(np.float64), i.astype(np.int8), i.astype(np.uint8),
          i.astype(np.float32), i.astype(bool), (i < 2).astype(np.int32)]
  for k, (g, w) in enumerate(zip(outs, want)): np.testing.assert_array_equal(g, w, err_msg=f"cast {k}")


# ---------------------------------------------------------------- the index type
def test_small_kernel_uses_int_indices():
  r = range_(1000, 0)
  s = sink(buf(1, 1000).index(r).store(buf(0, 1000).index(r).load()).end(r))
  assert index_type(s) == "int"
  src = render_function(s, "small")
  assert "for (int ridx0" in src and "int64_t" not in src


def test_index_past_2_31_uses_int64():
  n = 2**31 + 8
  r = range_(n, 0)
  s = simplify(sink(buf(1, n).index(r).store(buf(0, n).index(r).load() * UOp.const(2.0)).end(r)))
  assert index_type(s) == "int64_t"
  src = render_c(s, "big")
  assert f"for (int64_t ridx0 = 0; ridx0 < {n}" in src and "for (int " not in src
  compile_strict(src)


def test_index_expression_past_2_31_uses_int64():
  # every loop is small, but i*50000 + j reaches 2.5e9: the index arithmetic must not overflow an int
  N = 50000                                                # 2.5e9: past 2^31, below 2^32
  i, j = range_(N, 0), range_(N, 1)
  s = simplify(sink(buf(0, N * N).index(i * N + j).store(UOp.const(1.0)).end(i, j)))
  assert index_type(s) == "int64_t"
  src = render_function(s, "big2")
  assert "for (int64_t ridx0" in src and "for (int64_t ridx1" in src
  assert re.search(r"\bint (alu|ridx)", src) is None
  compile_strict(render_c(s, "big2"))
  # a small buffer, but an intermediate index value past 2^31 (not simplified away): still int64_t
  s3 = sink(buf(0, 7).index((i * N + j) % 7).store(UOp.const(1.0)).end(i, j))
  assert index_type(s3) == "int64_t" and "for (int64_t ridx0" in render_function(s3, "big3")
  compile_strict(render_c(s3, "big3"))
  s2 = simplify(sink(buf(0, 40000 * 50000).index(range_(40000, 0) * 50000 + range_(50000, 1)).store(UOp.const(1.0))
                     .end(range_(40000, 0), range_(50000, 1))))
  assert index_type(s2) == "int"                          # 2e9 - 1 still fits


def test_prelude_compiles_alone():
  compile_strict(PRELUDE)


@pytest.mark.parametrize("d", [dtypes.int8, dtypes.uint8, dtypes.int32, dtypes.int64], ids=lambda d: d.name)
def test_int_pow_wraps_like_numpy(d):
  xs = [v for v in (d.min, -3, -2, -1, 0, 1, 2, 3, 7, 100, d.max) if d.min <= v <= d.max]
  a, b = (g.ravel() for g in np.meshgrid(np.array(xs, d.np), np.array([0, 1, 2, 3, 7, 8, 31, 63, 64, 100], d.np)))
  (p,) = run_elementwise([lambda x, y: UOp(Ops.POW, (x, y))], d, a, b, f"ipow_{d.name}")
  np.testing.assert_array_equal(p, np.power(a, b), err_msg=f"{d.name} **")


def test_float16_arithmetic_rounds_like_numpy():
  d = dtypes.float16
  a, b = pairs([0.0, -0.0, 0.1, 1.0, -1.5, 3.0, 1000.0, 65504.0, 6e-8, np.inf, -np.inf, np.nan], d)
  fns = [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x / y, lambda x, y: x // y, lambda x, y: x % y,
         lambda x, y: x * y + x]
  outs = run_elementwise(fns, d, a, b, "half")
  with np.errstate(all="ignore"):
    want = [a + b, a * b, a / b, np.floor_divide(a, b), np.remainder(a, b), a * b + a]
  for k, (g, w) in enumerate(zip(outs, want)): assert_same_floats(g, w, f"float16 expression {k}")
  mx, mn = run_elementwise([lambda x, y: x.maximum(y), lambda x, y: x.minimum(y)], d, a, b, "half_maxmin")
  np.testing.assert_array_equal(mx, np.maximum(a, b))         # values and NaN propagation (zeros' signs: below)
  np.testing.assert_array_equal(mn, np.minimum(a, b))


def test_float16_max_min_signed_zero_ties():
  d = dtypes.float16
  a, b = np.array([-0.0, 0.0], np.float16), np.array([0.0, -0.0], np.float16)
  mx, mn = run_elementwise([lambda x, y: x.maximum(y), lambda x, y: x.minimum(y)], d, a, b, "half_zero")
  assert_same_floats(mx, np.maximum(a, b), "float16 maximum")
  assert_same_floats(mn, np.minimum(a, b), "float16 minimum")


def test_float_to_bool_cast_nan_and_negative_zero():
  r = range_(6, 0)
  f = np.array([np.nan, -0.0, 0.0, np.inf, 1e-45, -2.0], np.float32)
  x = buf(0, 6, dtypes.float32).index(r).load()
  s = sink(buf(1, 6, dtypes.bool).index(r).store(x.cast(dtypes.bool)).end(r))
  out = np.zeros(6, bool)
  compile_strict(render_c(s, "fbool"))
  run_c(s, {0: f, 1: out}, "fbool")
  np.testing.assert_array_equal(out, f.astype(bool))


CAST_SPECIALS = [np.nan, np.inf, -np.inf, -1e20, 1e20, -5.0, 3e9, -0.5, 0.0, -0.0, 1.5, -2.9, 300.0, -129.0, 65536.0,
                 2.0**31, -2.0**31, -2.0**31 - 1, 2.0**32, 4294967295.5, 2.0**63, -2.0**63, 2.0**64, -2.0**64]
INTS = [dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64,
        dtypes.uint64]


def numpy_scalar_cast(a: np.ndarray, to: np.dtype) -> np.ndarray:
  """NumPy's conversion element by element (its scalar and strided path; the contiguous float -> uint32 loop is
  vectorized differently for NaN, inf and values below -2**31, and differs from NumPy's own scalars)."""
  with np.errstate(all="ignore"): return np.array([np.array(v).astype(to) for v in a], dtype=to)


@pytest.mark.parametrize("src", [dtypes.float16, dtypes.float32, dtypes.float64], ids=str)
def test_float_to_int_casts_match_numpy_x86(src):
  """Every float -> integer cast gives NumPy's x86-64 value (NaN, inf, out of range included) through the prelude's
  f2i helpers, compiled strictly; the same values in C constant folding (symbolic) as in the kernel."""
  with np.errstate(all="ignore"): f = np.array(CAST_SPECIALS, np.float64).astype(src.np)
  n = f.size
  r = range_(n, 0)
  x = buf(0, n, src).index(r).load()
  stores = tuple(buf(1 + k, n, d).index(r).store(x.cast(d)) for k, d in enumerate(INTS))
  s = sink(UOp(Ops.END, (UOp(Ops.SINK, stores), r)))
  src_c = render_c(s, f"f2i_{src.name}")
  assert "f2i" in src_c and "f2u64" in src_c
  compile_strict(src_c)
  outs = [np.zeros(n, d.np) for d in INTS]
  run_c(s, {0: f, **{1 + k: o for k, o in enumerate(outs)}}, f"f2i_{src.name}")
  for d, g in zip(INTS, outs):
    want = numpy_scalar_cast(f, d.np)
    np.testing.assert_array_equal(g, want, err_msg=f"{src.name} -> {d.name}")
    folded = [simplify(UOp.const(float(v), src).cast(d)) for v in f]
    assert all(c.op is Ops.CONST for c in folded)
    assert [c.arg for c in folded] == want.tolist(), f"{src.name} -> {d.name} folded"


_UBSAN_RUN = r"""
import sys
sys.path.insert(0, sys.argv[1])
import test_render_c as T
from minitensor.backend import runtime
from minitensor.backend.dtype import dtypes
flags = runtime.FLAGS + ("-fsanitize=undefined,float-cast-overflow",)
compile_c = runtime.compile_c
runtime.compile_c = lambda src, flags=flags: compile_c(src, flags)
T.compile_strict = lambda src: None
for d in (dtypes.int8, dtypes.int32, dtypes.int64):
  T.test_int_floordiv_mod_match_numpy(d)
  T.test_overflow_wraps_inside_expressions(d)
  T.test_shifts_past_width(d)
  T.test_int_pow_wraps_like_numpy(d)
T.test_int_abs_and_neg_wrap()
for d in (dtypes.float16, dtypes.float32, dtypes.float64): T.test_float_to_int_casts_match_numpy_x86(d)
print("ran")
"""


def test_integer_kernels_have_no_undefined_behaviour(tmp_path):
  # the kernels are compiled without -fwrapv: data-integer wrapping must come from the rendered C itself.
  # UBSan watches the same kernels as above on the extreme values (MIN // -1, MIN * -1, shifts by >= width...)
  lib = subprocess.run([CC, "-print-file-name=libubsan.so"], capture_output=True, text=True).stdout.strip()
  if not os.path.isabs(lib) or not os.path.exists(lib): pytest.skip("no libubsan for this compiler")
  env = {**os.environ, "LD_PRELOAD": lib, "UBSAN_OPTIONS": "print_stacktrace=0", "MINITENSOR_CACHE_DIR": str(tmp_path)}
  env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                       env.get("PYTHONPATH", "")])
  p = subprocess.run([sys.executable, "-c", _UBSAN_RUN, os.path.dirname(os.path.abspath(__file__))],
                     capture_output=True,
                     text=True, env=env, timeout=300)
  assert p.returncode == 0 and "ran" in p.stdout, p.stderr[-3000:]
  errors = sorted({ln for ln in p.stderr.splitlines() if "runtime error" in ln})
  assert not errors, "\n".join(errors[:20])


# ---------------------------------------------------------------- complex
@pytest.mark.parametrize("d", [dtypes.complex64, dtypes.complex128], ids=lambda d: d.name)
def test_complex_kernels_strict_and_match_numpy(d):
  """Every complex op of the IR in one kernel: compiles with -Wall -Werror, the helpers come once, values as
  NumPy's (the special values are tests/test_complex.py's)."""
  v = [1 + 2j, -0.5 + 0j, 0 - 3j, 2.5 - 1.5j, -1 - 1j]
  a, b = pairs(v, d)
  fns = [lambda x, y: x * y, lambda x, y: x / y, lambda x, y: UOp(Ops.POW, (x, y)), lambda x, y: x + y,
         lambda x, y: x.eq(y), lambda x, y: x.maximum(y), lambda x, y: UOp(Ops.ABS, (x,)),
         lambda x, y: UOp(Ops.CMPLX, (UOp(Ops.IMAG, (x,)), UOp(Ops.REAL, (y,)))), lambda x, y: UOp(Ops.EXPM1, (x,)),
         lambda x, y: x.cast(dtypes.int32), lambda x, y: x.cast(dtypes.bool), lambda x, y: y.cast(dtypes.complex128)]
  src = render_c(simplify(elementwise(fns, d, a.size)), "cplx")
  assert src.count("#define MT_COMPLEX_HELPERS") == 1
  outs = run_elementwise(fns, d, a, b, f"cplx_{d.name}")
  with np.errstate(all="ignore"):
    want = [a * b, a / b, a ** b, a + b, a == b, np.maximum(a, b), np.abs(a), a.imag + 1j * b.real, np.expm1(a),
            a.real.astype(np.int32), a.astype(bool), b.astype(np.complex128)]
  tol = 1e-6 if d is dtypes.complex64 else 1e-14
  for k, (g, w) in enumerate(zip(outs, want)):
    np.testing.assert_allclose(g, w.astype(g.dtype), rtol=tol, err_msg=f"function {k}")


def test_loop_extent_with_minimum_and_maximum():
  # an inner loop of max(0, min(8, 20 - 4 r)) iterations (a block of a reduce axis whose last blocks are short or
  # empty): the extent renderer spells MIN and MAX as selects, and refuses an op it cannot spell
  r = range_(8, 0)
  ext = (r.const_like(20) - r * 4).minimum(8).maximum(0)
  j = range_(8, 1, var=ext)
  s = sink(buf(0, 64, dtypes.int32).index(r * 8 + j).store(UOp.const(1, dtypes.int32)).end(j, r))
  out = np.zeros(64, np.int32)
  compile_strict(render_c(s, "extent"))
  run_c(s, {0: out}, "extent")
  want = (np.arange(8)[None, :] < np.clip(20 - 4 * np.arange(8), 0, 8)[:, None]).astype(np.int32).ravel()
  np.testing.assert_array_equal(out, want)
  bad = range_(8, 1, var=(r.const_like(20) - r * 4) // 3)
  with pytest.raises(NotImplementedError, match="FLOORDIV in a loop's extent"):
    render_c(sink(buf(0, 64, dtypes.int32).index(r * 8 + bad).store(UOp.const(1, dtypes.int32)).end(bad, r)), "bad")


@pytest.mark.parametrize("tier", ["0", "1"])
def test_page_sized_accumulators_start_on_a_page(tier, monkeypatch):
  # a column sum keeps one accumulator per column of its block: 1 KiB or more of them is declared page-aligned
  # (gcc honours it, tcc ignores it), and the sums stay NumPy's at every tier
  import minitensor as mt
  monkeypatch.setenv("MINITENSOR_TIER", tier)
  x = np.random.default_rng(5).standard_normal((300, 700))      # (float64: not test_search's float32 program)
  c = str(mt.explain(mt.asarray(x).sum(0)))
  decls = re.findall(r"(double|float) acc\d+\[(\d+)\]( __attribute__\(\(aligned\(4096\)\)\))?;", c)
  size = {"double": 8, "float": 4}
  assert decls and all(bool(page) == (int(n) * size[t] >= 1024) for t, n, page in decls)
  assert any(page for _, _, page in decls)
  np.testing.assert_allclose(np.asarray(mt.asarray(x).sum(0)), x.sum(0), rtol=1e-12, atol=1e-12)
