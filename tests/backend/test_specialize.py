"""Specializations of symbolic programs (realize.specialize): a hot program's sizes get the concrete, optimized
program in the background, whose results are the symbolic program's bit for bit (kernelize.schedule's `exact`)."""
from __future__ import annotations
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend import realize as realize_mod
from minitensor.backend import sizes, tiers


@pytest.fixture
def hot_at_once(monkeypatch):
  """Every program of the test is hot at its second run with the same sizes (the time rule out of reach)."""
  monkeypatch.setenv("MINITENSOR_TIER", "auto")
  monkeypatch.delenv("MINITENSOR_CHECK", raising=False)
  monkeypatch.setattr(tiers, "HOT_SECONDS", float("inf"))
  monkeypatch.setattr(tiers, "HOT_RUNS", 2)
  monkeypatch.setattr(tiers, "WARM_SECONDS", 0.0)


def _program_of(f, *xs) -> realize_mod.Compiled:
  """The program that realizes f(*xs) (one output: one program)."""
  out = f(*map(mt.asarray, xs))
  skey, leaves, sizes = realize_mod.structure(realize_mod.canonical_graph([out.uop]))
  mode = realize_mod.modes()
  concrete = (sizes, tuple(b.shape for b in leaves)) if mode.checked else ()
  return realize_mod._cache[realize_mod.ProgramKey(skey, mode, concrete)], sizes


def _specialized(f, *xs) -> np.ndarray:
  """f(*xs) once its program has specialized to these sizes (its runs so far are the symbolic program's)."""
  for _ in range(3): np.asarray(f(*map(mt.asarray, xs)))
  realize_mod.settle(120)
  prog, sizes = _program_of(f, *xs)
  assert prog.specializable and prog.special.get(sizes), prog.special
  return np.asarray(f(*map(mt.asarray, xs)))


# programs without transcendental functions: their results are bit-identical in every tier and specialization
EXACT = {
  "column sums": lambda x: x.sum(axis=0),
  "row sums": lambda x: x.sum(axis=1),
  "total": lambda x: x.sum(),
  "standardize": lambda x: (x - x.mean(axis=0)) / (x.std(axis=0) + 1),
  "variance of rows": lambda x: x.var(axis=1),
  "gram": lambda x: x.T @ x,
  "transpose": lambda x: x.T * 2,
  "cumsum": lambda x: mt.cumsum(x, axis=0),
  "max of columns": lambda x: x.max(axis=0) - x.min(axis=0),
  "padded": lambda x: mt.concatenate([x, x[:3] * 2], axis=0).sum(axis=0),
  "squares of rows": lambda x: (x * x).sum(axis=1),
  "dot of columns": lambda x: x[:, 0] @ x[:, 1],
  "products of rows": lambda x: (x * 0.5 + 1).prod(axis=1),
  "any of rows": lambda x: (x > 1.5).any(axis=1),
  "integer total": lambda x: (x * 100).astype(mt.int64).sum(),
  "matrix-vector": lambda x: x @ x[0],
}


@pytest.mark.parametrize("name", sorted(EXACT))
@settings(max_examples=6, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(2, 300), cols=st.integers(2, 70), dtype=st.sampled_from([np.float32, np.float64]))
def test_a_specialization_gives_the_symbolic_programs_bits(hot_at_once, monkeypatch, name, rows, cols, dtype):
  """(the fixture holds for every example: it only sets the environment and the tier thresholds)"""
  monkeypatch.setattr(tiers, "MAX_SPECIAL", 1000)            # (the examples share programs)
  f = EXACT[name]
  if name == "gram": rows, cols = min(rows, 40), min(cols, 40)   # (its (cols, rows, cols) product stays symbolic)
  x = np.random.default_rng(rows * cols).standard_normal((rows, cols)).astype(dtype)
  monkeypatch.setenv("MINITENSOR_TIER", "1")                 # the symbolic program alone (no specializations)
  generic = np.asarray(f(mt.asarray(x)))
  monkeypatch.setenv("MINITENSOR_TIER", "auto")
  got = _specialized(f, x)
  np.testing.assert_array_equal(got, generic)
  want = f(x)
  np.testing.assert_allclose(got, want, rtol=2e-5 if dtype is np.float32 else 1e-12, atol=1e-4 if dtype is np.float32
                             else 1e-10)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 15, 16, 17, 23])
def test_reductions_in_lanes_specialize_to_the_symbolic_programs_bits(hot_at_once, monkeypatch, n):
  """Reduced axes shorter than, equal to and past the lanes of the ordered reduces (sizes.order_lanes: the
  concrete program's tails and single blocks), after longer axes and alone; sums of terms of many magnitudes, whose
  rounding shows any change of order."""
  monkeypatch.setattr(tiers, "MAX_SPECIAL", 1000)
  rows = sizes.ORDER_WORK // n + 2
  x = np.random.default_rng(n).standard_normal((rows, n)) * 10.0 ** (np.arange(rows * n).reshape(rows, n) % 9)
  for f in (lambda t: t.sum(), lambda t: t.sum(axis=1), lambda t: t.reshape(-1)[: rows * n - n // 2].sum()):
    monkeypatch.setenv("MINITENSOR_TIER", "1")
    generic = np.asarray(f(mt.asarray(x)))
    monkeypatch.setenv("MINITENSOR_TIER", "auto")
    got = _specialized(f, x)
    assert _program_of(f, x)[0].plan.lanes == sizes.ORDER_LANES
    np.testing.assert_array_equal(got, generic)
    np.testing.assert_allclose(got, f(x), rtol=1e-12)


def test_small_and_large_reductions_get_programs_of_their_own(hot_at_once):
  """A graph whose reductions read fewer than sizes.ORDER_WORK elements adds them in order (less C to compile);
  one of the same structure reading more gets a program of its own, in lanes, whichever was seen first."""
  f = lambda t: (t * t * t - 0.25).min(axis=1)
  for rows in (5, sizes.ORDER_WORK // 7 + 1, 6):
    x = np.random.default_rng(rows).standard_normal((rows, 7))
    np.testing.assert_array_equal(np.asarray(f(mt.asarray(x))), f(x))
    assert _program_of(f, x)[0].plan.lanes == (0 if rows * 7 < sizes.ORDER_WORK else sizes.ORDER_LANES)


def test_softmax_specializes_within_the_tiers_ulps(hot_at_once, monkeypatch):
  """Transcendental functions may come from libm or libmvec (tiers.py: at most 4 ulp apart)."""
  x = np.random.default_rng(1).standard_normal((120, 33)).astype(np.float32)
  e = lambda t: mt.exp(t - t.max(axis=1, keepdims=True))
  f = lambda t: e(t) / e(t).sum(axis=1, keepdims=True)
  monkeypatch.setenv("MINITENSOR_TIER", "1")
  generic = np.asarray(f(mt.asarray(x)))
  monkeypatch.setenv("MINITENSOR_TIER", "auto")
  got = _specialized(f, x)
  np.testing.assert_array_max_ulp(got, generic, maxulp=8)


def test_a_replayed_graph_runs_its_specialization(hot_at_once):
  """np.asarray(t + u) over the same sources is replayed (replay.Bound); once hot, its specialization runs."""
  t, u = mt.asarray(np.arange(600.0).reshape(30, 20)), mt.asarray(np.ones((30, 1)))
  for _ in range(4): np.asarray((t * u).sum(axis=0))
  realize_mod.settle(120)
  prog, sizes = _program_of(lambda a, b: (a * b).sum(axis=0), np.arange(600.0).reshape(30, 20), np.ones((30, 1)))
  assert prog.special.get(sizes)
  special = prog.special[sizes]
  runs = special.runs
  np.testing.assert_array_equal(np.asarray((t * u).sum(axis=0)), np.arange(600.0).reshape(30, 20).sum(axis=0))
  assert special.runs == runs + 1


def test_sizes_that_change_every_run_tier_the_symbolic_program_up(hot_at_once):
  """Rows whose count changes every step (a mask's count, a growing history): no size repeats, so nothing is
  specialized, and the symbolic program itself moves to tier 1."""
  x = np.random.default_rng(2).standard_normal((60, 9))
  f = lambda t: (t * 2).sum(axis=0)
  for n in range(30, 42):
    np.testing.assert_allclose(np.asarray(f(mt.asarray(x[:n]))), (x[:n] * 2).sum(axis=0), rtol=1e-12)
  realize_mod.settle(120)
  prog, _ = _program_of(f, x[:30])
  assert not prog.special and prog.tier == 1


def test_specializations_are_bounded_per_program(hot_at_once):
  x = np.random.default_rng(3).standard_normal((40, 40))
  f = lambda t: t.sum(axis=0) * 2
  for n in range(10, 10 + tiers.MAX_SPECIAL + 3):
    for _ in range(3): np.asarray(f(mt.asarray(x[:n])))
    realize_mod.settle(120)
  prog, _ = _program_of(f, x[:10])
  assert len(prog.special) == tiers.MAX_SPECIAL
  for n in range(10, 10 + tiers.MAX_SPECIAL + 3):
    np.testing.assert_allclose(np.asarray(f(mt.asarray(x[:n]))), x[:n].sum(axis=0) * 2, rtol=1e-12)


@pytest.mark.parametrize("env", [("MINITENSOR_TIER", "0"), ("MINITENSOR_TIER", "1"), ("MINITENSOR_CHECK", "1")])
def test_fixed_tiers_and_checked_mode_do_not_specialize(hot_at_once, monkeypatch, env):
  monkeypatch.setenv(*env)
  x = np.random.default_rng(4).standard_normal((50, 7))
  f = lambda t: t.sum(axis=0) + 3
  for _ in range(5): np.testing.assert_allclose(np.asarray(f(mt.asarray(x))), x.sum(axis=0) + 3)
  realize_mod.settle(120)
  prog, _ = _program_of(f, x)
  assert not prog.specializable and not prog.special


def test_a_wish_for_other_sizes_is_dropped(hot_at_once):
  """The run that makes a program hot asks for its sizes (`want`); when the next graph of that program has other
  sizes, nothing is compiled from it for the first ones."""
  x = np.random.default_rng(6).standard_normal((70, 30))
  f = lambda t: t.sum(axis=0) - 1
  for _ in range(2): np.asarray(f(mt.asarray(x[:40])))           # (HOT_RUNS = 2: the second run wants (40, 30))
  prog, sizes40 = _program_of(f, x[:40])
  assert prog.want == sizes40
  np.testing.assert_allclose(np.asarray(f(mt.asarray(x[:55]))), x[:55].sum(axis=0) - 1, rtol=1e-12)
  realize_mod.settle(120)
  assert prog.want is None and sizes40 not in prog.special
  for n in (40, 55):
    for _ in range(3): np.testing.assert_allclose(np.asarray(f(mt.asarray(x[:n]))), x[:n].sum(axis=0) - 1, rtol=1e-12)
