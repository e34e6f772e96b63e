"""NumPy's floating-point warnings (fpstatus.py): for a table of expressions minitensor warns iff NumPy warns, with
NumPy's category and words, in both compiler tiers and in checked mode, with NumPy's values; np.errstate's
ignore, raise and call are honoured, `warnings` filters apply, the threads of a parallel kernel report theirs, and
a warning is not repeated by a later clean run.
"""
from __future__ import annotations
import re
import warnings
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend import fpstatus, tiers
from minitensor.backend import realize as realize_mod
from minitensor.backend.realize import scheduled

_X = np.array([1.5, 0.0, -1.0, np.nan, np.inf, -np.inf, 3e38, 1e-30], np.float32)
_I = np.array([7, 0, -3, 5], np.int64)
_J = np.array([0, 2, 0, -2], np.int64)
_HUGE = np.full(32, 1e20, np.float32)
# (name, f(xp, x, i, j)): each f is computed by NumPy and by minitensor on the arrays above
_CASES = [
  ("divide", lambda xp, x, i, j: 1.0 / x),
  ("log", lambda xp, x, i, j: xp.log(x)),
  ("sqrt", lambda xp, x, i, j: xp.sqrt(x)),
  ("inf - inf", lambda xp, x, i, j: x - x),
  ("multiply overflow", lambda xp, x, i, j: x * np.float32(1e10)),
  ("exp", lambda xp, x, i, j: xp.exp(x)),
  ("int floor_divide", lambda xp, x, i, j: i // j),
  ("int remainder", lambda xp, x, i, j: i % j),
  ("int64 min // -1", lambda xp, x, i, j: (i * 0 + np.iinfo(np.int64).min) // (j * 0 - 1)),
  ("sin: libmvec overflows on huge arguments", lambda xp, x, i, j: xp.sin(xp.asarray(_HUGE))),
  ("nan to int", lambda xp, x, i, j: x.astype(np.int32)),
  ("float64 to float32", lambda xp, x, i, j: (x.astype(np.float64) * 1e10).astype(np.float32)),
  ("no warning: compare, max, where", lambda xp, x, i, j: xp.where(x > 0, xp.maximum(x, 1.0), xp.minimum(x, -1.0))),
  ("no warning: reductions with nan", lambda xp, x, i, j: xp.stack([x.max(), x.min(), xp.argmax(x) + x[0]])),
  ("no warning: finite", lambda xp, x, i, j: xp.tanh(x[:2]) * 2 + 1),
  ("no warning: ints", lambda xp, x, i, j: i * j + i // 3),
]


def _numpy(f) -> tuple[np.ndarray, list[str]]:
  """NumPy's value of f and the RuntimeWarnings' messages it gave (in order)."""
  with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn", under="ignore"):
    warnings.simplefilter("always")
    v = f(np, _X, _I, _J)
  return v, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def _mt(f) -> tuple[np.ndarray, list[str]]:
  with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn", under="ignore"):
    warnings.simplefilter("always")
    v = np.asarray(f(mt, mt.asarray(_X), mt.asarray(_I), mt.asarray(_J)))
  return v, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def _kinds(msgs: list[str]) -> set[str]:
  return {m.split(" encountered")[0] for m in msgs}


@pytest.mark.parametrize("tier", ["0", "1"])
def test_warns_iff_numpy_warns_with_its_words(cache, monkeypatch, tier):
  """The same kinds of warning as NumPy's for every expression (NumPy warns once per operation, minitensor once per
  realize and kind); the operation named is one NumPy names where the expression has one such operation."""
  monkeypatch.setenv("MINITENSOR_TIER", tier)
  for name, f in _CASES:
    want, said = _numpy(f)
    got, told = _mt(f)
    np.testing.assert_allclose(got, want, rtol=5e-7, err_msg=name)     # (log, exp: NumPy's SIMD ones differ by 1 ulp)
    assert _kinds(told) == _kinds(said), (name, told, said)
    assert len(told) == len(set(told)), (name, told)
    if len(said) == 1: assert told == said, (name, told, said)


def test_checked_mode_warns_too(cache, monkeypatch):
  monkeypatch.setenv("MINITENSOR_CHECK", "1")
  for name, f in _CASES[:3] + _CASES[-2:]:
    want, said = _numpy(f)
    got, told = _mt(f)
    np.testing.assert_allclose(got, want, rtol=5e-7, err_msg=name)
    assert told == said, (name, told, said)


def test_errstate_ignore_raise_call_and_warning_filters(cache):
  x = mt.asarray(_X)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    with np.errstate(divide="ignore", invalid="ignore"):
      np.testing.assert_array_equal(np.asarray(mt.log(x)), np.log(_X))     # nothing raised, nothing warned
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError, match="divide by zero encountered in log"):
      np.asarray(mt.log(x) + 1.0)
    with pytest.raises(RuntimeWarning, match="overflow encountered in multiply"):     # the filter said "error"
      np.asarray(x * np.float32(1e10) + 2.0)
  calls: list = []
  with np.errstate(all="call"):
    old = np.seterrcall(lambda *a: calls.append(a))
    try: np.asarray(mt.sqrt(x) * 3.0)
    finally: np.seterrcall(old)
  want: list = []
  with np.errstate(all="call"):
    old = np.seterrcall(lambda *a: want.append(a))
    try: np.sqrt(_X) * 3.0
    finally: np.seterrcall(old)
  assert calls == want == [("invalid value", 8)]
  with warnings.catch_warnings(record=True) as caught, np.errstate(under="warn"):
    warnings.simplefilter("always")
    np.asarray(x * np.float32(1e-30))
  assert [str(w.message) for w in caught] == ["underflow encountered in multiply"]


def test_the_warning_points_at_the_callers_line(cache):
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    np.asarray(1.0 / mt.asarray(_X[:2]))
  assert [w.filename for w in caught] == [__file__]


def test_threads_of_a_parallel_kernel_report_theirs_and_no_flag_outlives_its_run(cache, monkeypatch):
  """A threaded tier-1 kernel over 2^20 elements with one zero divisor, put in each eighth of the array in turn
  (the chunks the threads take): every run warns, whichever thread met the zero; a clean run after it does not."""
  monkeypatch.setenv("MINITENSOR_TIER", "1")
  n = 1 << 20
  for k in range(8):
    d = np.ones(n, np.float32)
    d[k * n // 8 + 12345] = 0
    with warnings.catch_warnings(record=True) as caught:
      warnings.simplefilter("always")
      got = np.asarray(mt.asarray(np.full(n, 2.0, np.float32)) / mt.asarray(d) + 1.0)
      clean = np.asarray(mt.asarray(np.full(n, 2.0, np.float32)) / mt.asarray(np.ones(n, np.float32)) + 1.0)
    assert [str(w.message) for w in caught] == ["divide by zero encountered in divide"], k
    assert np.isinf(got).sum() == 1 and (clean == 3).all()
  assert any("#pragma omp parallel" in c.plan.src for c in mt.backend.realize._cache.values())


def test_instrumented_c_collects_flags_once_per_region():
  """The flags are read at the kernel's ends and at each parallel region's (never inside a loop body)."""
  c = ("void k(float* restrict data0) {\n  #pragma omp parallel for schedule(dynamic, mt_chunk(8)) if(!mt_serial)\n"
       "  for (int ridx0 = 0; ridx0 < 8; ridx0++) {\n    data0[ridx0] = 1.0f / data0[ridx0];\n  }\n}\n")
  from minitensor.backend.uop import buf, range_, sink
  r = range_(8, 0)
  out = fpstatus.instrument(c, "k", sink(buf(0, 8).index(r).store(buf(0, 8).index(r).load()).end(r)))
  assert out.count("mt_fp_test()") == 3 and out.count("mt_fp_clear()") == 2 and "reduction(|:mt_fe)" in out
  assert "int32_t* restrict mt_fp)" in out and re.search(r"for \(int ridx0.*\{\n    data0", out)
  assert tiers.tcc_lacks(out) is False


def test_fused_attention_reports_nothing_and_runs_once(cache):
  """Attention's online softmax computes -inf - -inf where NumPy's composition does not: its flags are not reported,
  and no run of it is repeated at tier 0 to confirm them (that doubled its time)."""
  rng = np.random.default_rng(0)
  q, k, v = (mt.asarray(rng.standard_normal((256, 32)).astype(np.float32)) for _ in range(3))
  s = q @ k.T / 8
  p = mt.exp(s - s.max(axis=1, keepdims=True))
  out = (p / p.sum(axis=1, keepdims=True)) @ v
  assert [k.program.kind for k in scheduled([out.uop])[0].kernels] == ["attention"]
  calls = []
  orig = realize_mod.Compiled.flags
  with pytest.MonkeyPatch.context() as m:
    m.setattr(realize_mod.Compiled, "flags", lambda self, *a: calls.append(1) or orig(self, *a))
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      got = out.numpy()
  S = np.asarray(q) @ np.asarray(k).T / 8
  E = np.exp(S - S.max(axis=1, keepdims=True))
  np.testing.assert_allclose(got, (E / E.sum(axis=1, keepdims=True)) @ np.asarray(v), rtol=1e-4, atol=1e-5)
  assert calls == []


def test_errstate_applies_where_the_operation_is_built(cache):
  """As NumPy's, an operation's errstate is the one at its call: built under np.errstate(divide="ignore") and
  realized after it, it is quiet; an operation built outside next to it that can raise the same flag makes the
  flag count (a kernel's flags are the OR of its operations'), one that cannot does not; replayed graphs alike."""
  x = mt.asarray(np.array([0.0, 1.0, 2.0]))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    with np.errstate(divide="ignore", invalid="ignore"):
      quiet = x / 0.0
      both = 0.0 / x
    np.testing.assert_array_equal(np.asarray(quiet), np.array([np.nan, np.inf, np.inf]))
    for _ in range(3): np.asarray(mt.exp(both))             # (exp cannot raise "invalid": replayed too)
  y = mt.asarray(np.array([1.0, 2.0]))                      # (no 0 / 0: only "divide" below)
  loud = y / 0.0 + 0.0
  with pytest.warns(RuntimeWarning, match="divide by zero encountered in divide"):
    np.asarray(loud)
  with np.errstate(divide="ignore"):
    half = y / 0.0
  mixed = half + 1.0 / y[:1] * 0.0                           # (the second division was built outside: it warns)
  with pytest.warns(RuntimeWarning, match="divide by zero"):
    np.asarray(mixed + 1.0 / (y - 1.0))
  with np.errstate(over="ignore"):
    over = y * 2.0 + 3.0                                    # (ignores overflow only: divide still warns)
  with pytest.warns(RuntimeWarning, match="divide by zero"):
    np.asarray(over / 0.0)


_ORDERED = {"less": lambda xp, a, b: a < b, "less_equal": lambda xp, a, b: a <= b,
            "greater": lambda xp, a, b: a > b, "greater_equal": lambda xp, a, b: a >= b,
            "maximum": lambda xp, a, b: xp.maximum(a, b), "minimum": lambda xp, a, b: xp.minimum(a, b),
            "where": lambda xp, a, b: xp.where(a > 0, a, b), "count": lambda xp, a, b: (a < b).sum(),
            "max": lambda xp, a, b: a.max(), "argmin": lambda xp, a, b: xp.argmin(b),
            "row max": lambda xp, a, b: a[:4096].reshape(64, 64).max(axis=1), "any": lambda xp, a, b: (a > 3).any()}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(op=st.sampled_from(sorted(_ORDERED)), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2**32 - 1), nans=st.sampled_from([0.0, 0.01, 0.5, 1.0]))
def test_ordered_compares_of_nan_are_quiet_at_tier_1(cache, monkeypatch, op, dtype, seed, nans):
  """NumPy's ordered compares (and maximum, minimum, where, max, argmin, which compare) of NaN raise nothing.
  Tier 1's elementwise loops compare NaN-free copies (PRELUDE's lt_/le_; gcc's own vector compares signal
  INVALID); a kernel with accumulators keeps gcc's (its reduce loop is the hot one) and, with no operation that
  could raise INVALID, has it dropped (fpstatus.spurious). So no run on data with NaN is repeated at tier 0 to
  confirm a flag (that made such kernels 25-70x slower than their own vector code); NumPy's values, no warning."""
  monkeypatch.setenv("MINITENSOR_TIER", "1")
  realize_mod._cache.clear()                  # (this example's programs only: they come back from the disk)
  rng = np.random.default_rng(seed)
  a, b = (rng.standard_normal(4099).astype(dtype) for _ in range(2))      # (whole vectors and a tail)
  a[rng.random(a.size) < nans] = np.nan
  b[rng.random(b.size) < nans / 2] = np.nan
  with warnings.catch_warnings(), np.errstate(all="warn", under="ignore"):
    warnings.simplefilter("error")
    want = _ORDERED[op](np, a, b)
    got = np.asarray(_ORDERED[op](mt, mt.asarray(a), mt.asarray(b)))
  np.testing.assert_array_equal(got, want)
  assert all(c.tier == 1 and c.scalar is None for c in realize_mod._cache.values())


def test_a_flag_without_vector_math_is_reported_without_a_tier_0_run(cache, monkeypatch):
  """sqrt of a negative number raises INVALID in every tier (vsqrtps as sqrtss): tier 1 reports it as NumPy words
  it, from its own run; only kernels calling vector math (libmvec) confirm their flags at tier 0."""
  monkeypatch.setenv("MINITENSOR_TIER", "1")
  x = np.linspace(-1, 1, 5000, dtype=np.float32)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    got = np.asarray(mt.sqrt(mt.asarray(x)) * 2)
  assert [str(w.message) for w in caught] == ["invalid value encountered in sqrt"]
  with np.errstate(invalid="ignore"): np.testing.assert_array_equal(got, np.sqrt(x) * 2)
  assert [c.scalar for c in realize_mod._cache.values()] == [None]
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    np.asarray(mt.sin(mt.asarray(_HUGE)) * 2)                 # (libmvec's sin overflows where NumPy's does not)
  assert caught == [] and any(c.scalar is not None for c in realize_mod._cache.values())


def test_a_reduction_that_compares_and_computes_confirms_invalid(cache, monkeypatch):
  """A reduction kernel keeps gcc's signaling compares; where it also computes something that can raise INVALID
  (a product, a sqrt), a tier-1 INVALID on data with NaN is confirmed by the tier-0 code: NumPy's warning where
  NumPy gives one (sqrt of a negative number), none where the only NaN is compared (NumPy's compares are quiet)."""
  monkeypatch.setenv("MINITENSOR_TIER", "1")
  x = np.linspace(-1, 1, 5000)
  x[::7] = np.nan
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert int(np.asarray((mt.asarray(x) * 2 > 0.5).sum())) == int((x * 2 > 0.5).sum())
  assert [c.scalar is not None for c in realize_mod._cache.values()] == [True]
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    got = np.asarray(mt.sqrt(mt.asarray(x)).max())
  assert [str(w.message) for w in caught] == ["invalid value encountered in sqrt"]
  with np.errstate(invalid="ignore"): np.testing.assert_array_equal(got, np.sqrt(x).max())
