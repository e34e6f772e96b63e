"""Reductions against NumPy: sum, prod, max, min, mean, var, std, argmax, argmin, any, all, count_nonzero.

Both spellings are checked (`mt.sum(t, ...)` and `t.sum(...)`), with axis None / int / negative / tuple, keepdims,
ddof, size-0 axes, NaN propagation, NumPy's accumulation dtypes and its exceptions (AxisError for a bad axis,
ValueError for a duplicate axis or an empty max/argmax). Float data are drawn from values whose sums and products
are exact in any order (so NumPy's pairwise summation and minitensor's loops must agree to the last bit, zero
signs included); integer data span the whole range (sums and products wrap identically in any order).
"""
import math
import warnings
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.exceptions import AxisError
import minitensor as mt
import minitensor.testing as mtt

DTYPES = [np.dtype(d) for d in ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")]
NAMES = ["sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "any", "all", "count_nonzero"]
ERRORS = (AxisError, TypeError, ValueError, OverflowError)
# float16 values never shrink a product (no intermediate overflow whatever the order); wider floats have room
FLOAT16_VALUES = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, np.nan, np.inf, -np.inf]
FLOAT_VALUES = FLOAT16_VALUES + [0.5, -2.5, 3.0]
RTOL = {2: 1e-2, 4: 1e-5, 8: 1e-10}


def values(d: np.dtype) -> st.SearchStrategy:
  if d.kind == "f": return st.sampled_from(FLOAT16_VALUES if d.itemsize == 2 else FLOAT_VALUES)
  return mtt.elements(d)


def numpy_or_error(f, *args, **kwargs):
  """NumPy's result as an ndarray, or the public exception type it raises (its warnings silenced)."""
  with np.errstate(all="ignore"), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    try: return np.asarray(f(*args, **kwargs))
    except ERRORS as e: return next(t for t in ERRORS if isinstance(e, t))


def reduce_mt(name: str, t: mt.Tensor, method: bool, **kw):
  """minitensor's reduction, as a method (count_nonzero has none) or as the module function."""
  return getattr(t, name)(**kw) if method and name != "count_nonzero" else getattr(mt, name)(t, **kw)


def _scale(name: str, a: np.ndarray, kw: dict) -> np.ndarray | float:
  """The size of the terms of a float reduction: rounding in a different order may differ by tol * scale."""
  if name not in ("sum", "mean", "var", "std"): return 0.0
  m = np.abs(a.astype(np.float64))
  m = np.where(np.isfinite(m), m, 0)
  axes = {k: v for k, v in kw.items() if k in ("axis", "keepdims")}
  with np.errstate(all="ignore"), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    s = np.sum(m, **axes) if name == "sum" else np.mean(m ** (1 if name == "mean" else 2), **axes)
  return np.nan_to_num(np.sqrt(s) if name == "std" else s)


def assert_same(got, want: np.ndarray, what: str, scale=0.0) -> None:
  got = np.asarray(got)
  assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy {want.dtype}"
  assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy {want.shape}"
  if want.dtype.kind == "f":
    g, w = got.astype(np.float64), want.astype(np.float64)
    tol = RTOL[want.dtype.itemsize]
    with np.errstate(invalid="ignore"):
      bad = ~np.isclose(g, w, rtol=tol, atol=0, equal_nan=True) & ~(np.abs(g - w) <= tol * np.asarray(scale))
    bad |= (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))
  else: bad = got != want
  if np.any(bad):
    i = tuple(np.argwhere(bad)[0]) if bad.ndim else ()
    raise AssertionError(f"{what}: {int(np.sum(bad))} of {bad.size} differ, first at {i}: got {got[i]!r}, "
                         f"NumPy {want[i]!r}")


def check(t: mt.Tensor, a: np.ndarray, calls: list[tuple[str, dict, bool]]) -> None:
  """Each (name, kwargs, as-method) on t against NumPy on a; realized together; exceptions as NumPy's."""
  cases = []
  for name, kw, method in calls:
    want = numpy_or_error(getattr(np, name), a, **kw)
    what = f"{'t.' if method else 'mt.'}{name}({a.dtype}{a.shape}, {kw})"
    if isinstance(want, type):
      with pytest.raises(want): reduce_mt(name, t, method, **kw)
    else: cases.append((what, reduce_mt(name, t, method, **kw), want, _scale(name, a, kw)))
  mt.realize(*(c[1] for c in cases))
  for what, got, want, scale in cases: assert_same(got, want, what, scale)


@st.composite
def _reductions(draw):
  d = draw(st.sampled_from(DTYPES))
  a = draw(mtt.arrays(d, mtt.shapes(max_dims=3, max_side=4), elements=values(d)))
  calls = []
  for name in draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True)):
    kw = {"axis": draw(mtt.axes(a.ndim, max_size=1 if name.startswith("arg") else None)),
          "keepdims": draw(st.booleans())}
    if name in ("var", "std"): kw["ddof"] = draw(st.sampled_from([0, 1, 2]))
    calls.append((name, kw, draw(st.booleans())))
  return a, calls


@given(case=_reductions())
def test_reductions_match_numpy(case):
  a, calls = case
  check(mt.asarray(a), a, calls)


@pytest.mark.parametrize("d", DTYPES, ids=str)
def test_accumulation_dtypes(d):
  """int8 sum -> int64, uint8 -> uint64, bool -> int64, mean of ints -> float64, float32 stays float32; dtype=."""
  a = np.arange(-3, 9).reshape(3, 4).astype(d) if d.kind != "b" else np.arange(12).reshape(3, 4) % 3 == 0
  calls = [(n, {}, True) for n in NAMES] + [(n, {"axis": 0}, False) for n in ("sum", "prod", "mean", "var")]
  calls += [(n, {"dtype": dt}, True) for n in ("sum", "prod", "mean") for dt in (np.float32, np.int64, np.float64)]
  check(mt.asarray(a), a, calls)


def test_empty():
  """Sum of nothing is 0, prod 1, mean NaN; max/min/argmax/argmin of nothing raise ValueError (not over other axes)."""
  for shape in ((0,), (0, 3), (2, 0, 3)):
    a = np.zeros(shape, np.float32)
    calls = [(n, {"axis": ax}, True) for n in NAMES for ax in (None, 0, -1)]
    check(mt.asarray(a), a, calls)


def test_nan_propagation():
  """max/min propagate NaN; argmax/argmin return the first NaN; any NaN is true."""
  a = np.array([[1.0, np.nan, 3.0, np.nan], [np.inf, -np.inf, 2.0, 0.0], [-0.0, 0.0, np.nan, 5.0]], np.float32)
  calls = [(n, {"axis": ax}, m) for n in ("max", "min", "argmax", "argmin", "any", "all", "sum", "mean")
           for ax in (None, 0, 1) for m in (True, False)]
  check(mt.asarray(a), a, calls)


@pytest.mark.parametrize("name", NAMES)
def test_bad_axes(name):
  """Axis out of range: AxisError; duplicate axis: ValueError; a float axis: TypeError; argmax of a tuple: TypeError."""
  a = np.ones((2, 3), np.float32)
  t = mt.asarray(a)
  for axis in (2, -3, (0, 2), (0, 0), (1, -1), 1.5, (0, 1)):
    want = numpy_or_error(getattr(np, name), a, axis=axis)
    if not isinstance(want, type): continue
    for method in (True, False):
      with pytest.raises(want): reduce_mt(name, t, method, axis=axis)


ALL_DTYPES = DTYPES + [np.dtype(d) for d in ("uint16", "uint32", "uint64")]


@st.composite
def _with_dtype(draw):
  d = draw(st.sampled_from(ALL_DTYPES))
  a = draw(mtt.arrays(d, mtt.shapes(max_dims=2, max_side=3), elements=values(d)))
  calls = []
  names = st.lists(st.sampled_from(["sum", "prod", "mean", "var", "std"]), min_size=1, max_size=3, unique=True)
  for name in draw(names):
    kw = {"axis": draw(mtt.axes(a.ndim)), "keepdims": draw(st.booleans()), "dtype": draw(st.sampled_from(ALL_DTYPES))}
    calls.append((name, kw, draw(st.booleans())))
  return a, calls


@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(case=_with_dtype())
def test_every_dtype_keyword(case):
  """sum/prod/mean/var/std with every dtype= on every input dtype: NumPy's values and dtypes, or its exception type
  (a bool dtype adds with OR and multiplies with AND; std casts a 0-d integer result back, an array's it cannot)."""
  a, calls = case
  check(mt.asarray(a), a, calls)


def test_float32_accumulates_in_float64():
  """By design (README, Limitations): float32 sums and products are accumulated in float64 and rounded once, so a
  partial result that overflows float32 does not make the result inf, where NumPy's float32 accumulation does. A
  long sum in a large graph may add blocks of 16 terms in float32 first (the exception README states): within
  F32_SUM_BOUND of the exact sum, with or without the blocks (which program runs it depends on the sizes this
  process saw its structure at first)."""
  a = np.array([3e38, 3e38, -3e38], np.float32)
  p = np.array([1e20, 1e20, 1e-20], np.float32)
  with np.errstate(over="ignore"): assert np.isinf(np.sum(a)) and np.isinf(np.prod(p))
  assert float(mt.sum(a)) == np.float32(np.sum(a.astype(np.float64))) == np.float32(3e38)
  assert float(mt.prod(p)) == np.float32(np.prod(p.astype(np.float64)))
  from minitensor.backend.reduce_rule import F32_SUM_BOUND
  x = np.random.default_rng(0).standard_normal(10**5).astype(np.float32)
  for n in (10**5, 10**5 - 3):
    exact = math.fsum(x[:n].astype(np.float64))
    assert abs(float(np.asarray(mt.sum(mt.asarray(x[:n])))) - exact) <= F32_SUM_BOUND * np.abs(x[:n]).sum(), n


# ---------------------------------------------------------------------- reductions of broadcast values fold
FOLDS = [  # (dtype, constant, n, op): the closed form is exact, so the result equals NumPy's bit for bit
  (np.float64, 1.0, 10**7, "sum"), (np.int64, 3, 10**6, "sum"), (np.uint8, 200, 10**5, "sum"),
  (np.int64, 3, 50, "prod"), (np.int32, -1, 10**5 + 1, "prod"), (bool, True, 10**5, "sum"),
  (bool, False, 10**5, "prod"),
  (np.float64, 2.5, 10**6, "max"), (np.float32, -7.25, 10**6, "min"), (np.float64, np.nan, 10**5, "max"),
  (np.float64, 0.5, 100, "prod"), (np.float32, -2.0, 101, "prod"), (np.float64, np.inf, 10**5, "sum"),
  (np.float64, -0.0, 10**5, "sum"), (np.float32, 0.5, 300, "prod"),
]
ARGUMENTS = [  # a float constant other than 0, +-1, nan, inf is a kernel argument: its value is not known when the
  # kernel is compiled, so the loop runs; every partial sum is exact here, so the result is still NumPy's exactly
  (np.float32, 0.5, 2**20, "sum"), (np.float64, -7.25, 3000, "sum"), (np.float32, 3.0, 5 * 10**6, "sum"),
]
LOOPS = [  # not exact in closed form: the loop runs, and the result is NumPy's up to its summation order
  (np.float64, 0.1, 1000, "sum"), (np.float64, 0.1, 10**6, "sum"), (np.float64, 1.1, 100, "prod"),
  (np.float64, 1.0 + 2.0**-52, 2**20, "sum"), (np.float64, 2.0, 2000, "prod"),
]


def _iterations(t) -> int: return mt.explain(t).total_iterations


@pytest.mark.parametrize("dtype,c,n,op", FOLDS)
def test_reduce_of_a_broadcast_constant_folds_when_exact(dtype, c, n, op):
  t = getattr(mt, op)(mt.full((n,), c, dtype=dtype))
  assert _iterations(t) < 1000          # no loop over the n elements
  want = getattr(np, op)(np.full(n, c, dtype=dtype))
  got = t.numpy()
  assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True) and np.signbit(got) == np.signbit(want)


@pytest.mark.parametrize("dtype,c,n,op", ARGUMENTS)
def test_reduce_of_a_broadcast_kernel_argument_loops_and_is_exact(dtype, c, n, op):
  t = getattr(mt, op)(mt.full((n,), c, dtype=dtype))
  assert _iterations(t) >= n
  want = getattr(np, op)(np.full(n, c, dtype=dtype))
  got = t.numpy()
  assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("dtype,c,n,op", LOOPS)
def test_reduce_of_a_broadcast_constant_keeps_its_loop_when_not_exact(dtype, c, n, op):
  t = getattr(mt, op)(mt.full((n,), c, dtype=dtype))
  assert _iterations(t) >= n
  with np.errstate(over="ignore"): want = getattr(np, op)(np.full(n, c, dtype=dtype))
  got = t.numpy()
  assert got.dtype == want.dtype
  np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == np.float64 else 1e-6)


def test_float32_sum_of_a_constant_is_numpys_value():
  # float32 sums accumulate in float64 (by design): c * n there is exact, rounded once to float32
  for c, n in [(0.1, 1000), (0.1, 10**6), (1 / 3, 12345), (1.0, 2**25 + 1)]:
    want = np.full(n, c, np.float32).sum()
    np.testing.assert_allclose(mt.full((n,), c, dtype=np.float32).sum().numpy(), want, rtol=1e-6)


def test_reduce_over_an_expand_along_the_reduced_axis():
  a = np.arange(-2, 3).reshape(5, 1)
  for x, op in [(a, "sum"), (a * 1.5, "max"), (a > 0, "min"), (a, "prod"), (a * 0.1, "sum")]:
    want = getattr(np, op)(np.broadcast_to(x, (5, 70001)), axis=1)
    got = getattr(mt, op)(mt.broadcast_to(mt.asarray(x), (5, 70001)), axis=1).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-10)      # a float sum: NumPy sums pairwise


def test_sum_of_a_huge_broadcast_constant_has_no_loop():
  t = mt.ones((10**6, 10**6)).sum()
  assert _iterations(t) < 1000
  assert t.numpy() == np.ones(10**6).sum() * 10**6
  assert mt.full((10**5, 10**5), 3, dtype=np.int8).sum().numpy() == np.full(10**5, 3, np.int8).sum() * 10**5


# ---------------------------------------------------------------------- argmax and argmin: long axes, memory, out=
def _long(d: np.dtype, n: int, rng) -> np.ndarray:
  """n values of d whose extremes tie (first and late), with -0.0/0.0 ties and, for floats, NaNs late: longer
  than reductions.IOTA_BUFFER, so the index is the two-buffer expression."""
  if d.kind == "b": a = rng.random(n) < 0.5
  elif d.kind in "iu": a = rng.integers(np.iinfo(d).min, np.iinfo(d).max, n, dtype=d, endpoint=True)
  else: a = rng.standard_normal(n).astype(d)
  if d.kind != "b":
    lo, hi = a.min(), a.max()
    a[[7, n - 3]], a[[11, n - 2]] = hi, lo
  if d.kind in "fc":
    a[[5, n - 5]] = 0.0
    a[[6, n - 6]] = -0.0
  return a


@pytest.mark.parametrize("d", [np.dtype(x) for x in ("bool", "uint8", "int64", "uint64", "float16", "float64",
                                                     "complex128")])
def test_argmax_argmin_long_axes_match_numpy(d):
  """First index of the extreme over axes longer than one index buffer: ties, signed zeros, a late NaN (the first
  NaN wins), complex in lexicographic order, every axis/keepdims form and out= (a Tensor or an ndarray)."""
  rng = np.random.default_rng(int(d.num))
  a = _long(d, 2 * 5003, rng)
  if d.kind in "fc": a[[4000, 9000]] = np.nan
  if d.kind == "c": a = a + 1j * _long(np.dtype(np.float64), a.size, rng)
  m = a.reshape(2, 5003)
  calls = [(f, kw) for f in ("argmax", "argmin") for kw in ({}, {"axis": 1}, {"axis": -1, "keepdims": True},
                                                               {"axis": 0}, {"axis": None, "keepdims": True})]
  x, xm = mt.asarray(a), mt.asarray(m)
  got = mt.realize(*(getattr(t, f)(**kw) for f, kw in calls for t in (x, xm) if not (t is x and kw.get("axis") == 1)))
  want = [getattr(v, f)(**kw) for f, kw in calls for v in (a, m) if not (v is a and kw.get("axis") == 1)]
  for g, w in zip(got, want):
    assert g.dtype == w.dtype == np.int64 and g.shape == w.shape
    np.testing.assert_array_equal(g, w)
  o_np, o_mt = np.zeros(2, np.int32), mt.zeros(2, np.int16)
  assert mt.argmax(xm, axis=1, out=o_np) is o_np and xm.argmin(1, o_mt) is o_mt
  np.testing.assert_array_equal(o_np, m.argmax(axis=1))
  assert o_mt.dtype == np.int16 and (o_mt.numpy() == m.argmin(axis=1)).all()


@pytest.mark.parametrize("out, exc", [(np.zeros(3, np.int64), ValueError), (np.zeros((2, 1), np.int64), ValueError),
                                      (np.zeros(2, np.float64), TypeError), (np.zeros(2, np.uint64), TypeError)])
def test_argmax_out_is_checked_as_numpys(out, exc):
  a = np.array([[1.0, 5, 2], [7, 0, 7]])
  with pytest.raises(exc): a.argmax(axis=1, out=out.copy())
  with pytest.raises(exc): mt.asarray(a).argmax(axis=1, out=out)


@pytest.mark.parametrize("d, axis", [(np.uint8, None), (np.float32, None), (np.float64, 1)])
def test_argmax_needs_no_index_array(d, axis):
  """argmax/argmin reduce over an index expression: the schedule reads the input and two index buffers of about
  sqrt(n) elements, and makes no buffer near n elements (it copied an int64 index array, 16 bytes an element)."""
  n = 1 << 20
  a = np.random.default_rng(0).integers(0, 200, n).astype(d).reshape(4, n // 4)
  x = mt.asarray(a)
  for r, want in ((x.argmax(axis=axis), a.argmax(axis=axis)), (x.argmin(axis=axis), a.argmin(axis=axis))):
    e = mt.explain(r)
    (big, *small) = sorted(e.inputs, key=lambda s: -int(np.prod(s[0])))
    assert big == (a.shape, np.dtype(d).name)
    assert all(np.prod(s) <= 2 * np.sqrt(n) for s, _ in small), e.inputs
    assert all(k < n // 64 for k, _ in e.buffers), e.buffers
    np.testing.assert_array_equal(r.numpy(), want)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([np.float64, np.float32, np.float16, np.complex128, np.int8, np.int64, np.uint16, np.bool_]),
       st.lists(st.integers(1, 23), min_size=1, max_size=3), st.data())
def test_any_all_of_comparisons_match_numpy(dtype, shape, d):
  """any/all of values computed from wider data reduce in integer lanes as wide as that data (reductions._bool_lanes):
  the same truth values as NumPy's, for comparisons, NaN/inf tests and bool data, over every axis choice."""
  rng = np.random.default_rng(d.draw(st.integers(0, 2 ** 16)))
  x = rng.integers(-3, 4, shape).astype(dtype)
  if x.dtype.kind in "fc":
    for v in (np.nan, np.inf):
      if d.draw(st.booleans()): x.flat[d.draw(st.integers(0, x.size - 1))] = v
  axis = d.draw(st.sampled_from([None, *range(-len(shape), len(shape)), tuple(range(len(shape)))]))
  keep = d.draw(st.booleans())
  t = mt.asarray(x)
  for f in (lambda m: m.isnan(x if m is np else t), lambda m: m.isfinite(x if m is np else t),
            lambda m: (x if m is np else t) > 0, lambda m: (x if m is np else t) != 1):
    for name in ("any", "all"):
      with np.errstate(invalid="ignore"): want = getattr(f(np), name)(axis=axis, keepdims=keep)
      got = getattr(f(mt), name)(axis=axis, keepdims=keep)
      assert got.dtype == np.bool_
      np.testing.assert_array_equal(got.numpy(), want)


def test_bool_lanes_follow_the_compared_data():
  from minitensor.backend.dtype import dtypes
  from minitensor.reductions import _bool_lanes
  for d, lanes in ((np.float64, dtypes.int64), (np.float32, dtypes.int32), (np.float16, dtypes.int16),
                   (np.complex128, dtypes.int64), (np.int8, None)):
    t = mt.asarray(np.zeros((4, 5), d))
    assert _bool_lanes((t != 0).uop) is lanes
    assert _bool_lanes(mt.isfinite(t).uop) is (lanes if d != np.int8 else None)
  assert _bool_lanes(mt.asarray(np.zeros(3, bool)).uop) is None
  assert _bool_lanes((mt.asarray(np.zeros(3, bool)) & (mt.asarray(np.zeros(3)) > 0)).uop) is dtypes.int64


def _f32_rows(rows: int, n: int, kind: str, seed: int) -> np.ndarray:
  rng = np.random.default_rng(seed)
  x = rng.standard_normal((rows, n))
  if kind == "mixed": x *= 10.0 ** rng.uniform(-4, 4, (rows, n))             # magnitudes over eight decades
  elif kind == "cancel":                                                   # pairs that cancel, and a little noise
    h = rng.standard_normal((rows, (n + 1) // 2)) * 1e4
    x = rng.permuted(np.concatenate([h, -h], axis=1)[:, :n], axis=1) + rng.standard_normal((rows, n)) * 1e-3
  elif kind == "offset": x += 1e4                                         # a large common part
  return x.astype(np.float32)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.floats(0, np.log2(1e6)), st.sampled_from(["normal", "mixed", "cancel", "offset"]),
       st.integers(0, 2 ** 16))
def test_float32_sums_stay_within_the_documented_bound(rows, log2n, kind, seed):
  """float32 sum and mean along the rows (float32 partial sums over blocks, combined in float64: README,
  Limitations) against exact sums of the same float32 values: |error| <= F32_SUM_BOUND * sum(|x|), up to 10^6
  elements, with cancellation and mixed magnitudes; NumPy's own float32 error is reported in the message."""
  from minitensor.backend.reduce_rule import F32_SUM_BOUND
  x = _f32_rows(rows, int(2 ** log2n), kind, seed)
  n = x.shape[1]
  exact = np.array([math.fsum(r) for r in x.astype(np.float64)])
  mags = np.array([math.fsum(r) for r in np.abs(x.astype(np.float64))])
  got = mt.asarray(x).sum(axis=1).numpy().astype(np.float64)
  err = np.abs(got - exact)
  assert np.all(err <= F32_SUM_BOUND * mags), (err / mags, np.abs(x.sum(axis=1) - exact) / mags)
  cols = mt.asarray(np.ascontiguousarray(x.T)).sum(axis=0).numpy().astype(np.float64)      # down the columns
  assert np.all(np.abs(cols - exact) <= F32_SUM_BOUND * mags), np.abs(cols - exact) / mags
  mean = mt.asarray(x).mean(axis=1).numpy().astype(np.float64)
  assert np.all(np.abs(mean - exact / n) <= F32_SUM_BOUND * mags / n + np.spacing(np.float32(np.abs(exact / n))))


def test_long_float32_rows_are_summed_in_float32_blocks_and_the_same_in_both_tiers(monkeypatch):
  """float32 sums along rows of 4096 and down columns of 4096 x 20 in a graph above 65,536 elements (a small
  graph's program keeps float64 lanes only): the kernels keep float32 partial sums beside their float64 lanes; a
  program's tier-0 and tier-1 functions (the C compiler at -O1 or tcc, and at -O3) give the same bits."""
  from minitensor.backend import realize as R
  x = _f32_rows(20, 4096, "mixed", 7)
  for a, axis in ((x, 1), (np.ascontiguousarray(x.T), 0)):
    src = "\n".join(k.source for k in mt.explain(mt.asarray(a).sum(axis=axis)).kernels)
    assert "float acc" in src and "double acc" in src, src
    calls = []
    monkeypatch.setattr(R.Compiled, "__call__", lambda p, inputs, sizes=(), f=R.Compiled.__call__:
                        calls.append((p, inputs, sizes)) or f(p, inputs, sizes))
    want = mt.asarray(a).sum(axis=axis).numpy()
    monkeypatch.undo()
    monkeypatch.setenv("MINITENSOR_TIER", "1")          # (no tier-1 compile started by the runs below)
    (p, inputs, sizes), = calls
    for tier in (0, 1):
      q = R.Compiled(p.plan, p.n_inputs, R._functions(p.plan, tier, p.checked), checked=p.checked, tier=tier)
      np.testing.assert_array_equal(q(inputs, sizes)[0].reshape(want.shape), want)
