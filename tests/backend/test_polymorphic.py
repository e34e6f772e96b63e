"""Large graphs whose shapes change from call to call (realize.polymorphic): from a structure's second shape on, a
graph without float reductions runs one symbolic program for every shape, so a loop over a mask's count or a
write's position stops compiling; a graph with float reductions keeps a program per shape (its results never
change between calls)."""
from __future__ import annotations
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend import keys, tiers
from minitensor.backend import realize as realize_mod
from minitensor.backend.runtime import stats

N = keys.SYMBOLIC_MAX * 2 + 17          # over the small graphs' symbolic sizes


@pytest.fixture(autouse=True)
def auto_tiers(monkeypatch):
  monkeypatch.setenv("MINITENSOR_TIER", "auto")
  monkeypatch.delenv("MINITENSOR_CHECK", raising=False)


def test_a_masked_update_loop_compiles_twice():
  """Z[m] = Z[m] * 2 + 1 with a new mask every step: the count of m changes, the programs do not."""
  rng = np.random.default_rng(0)
  z = rng.standard_normal(N)
  t = mt.asarray(z.copy())
  counts = []
  for step in range(10):
    m = rng.random(N) < 0.5
    z[m] = z[m] * 2 + 1
    t[m] = t[m] * 2 + 1
    counts.append(stats.graph_misses)          # programs made (tier-1 compiles in the background are not)
    np.testing.assert_array_equal(np.asarray(t), z)
  assert counts[-1] == counts[2], counts


def test_a_new_mask_count_reads_no_plan_from_disk_and_schedules_nothing(monkeypatch):
  """After its first shape a structure's new shapes go to its symbolic program without a look at the disk (only a
  first shape is compiled for its sizes, so only its plan can be stored) and without the kernelizer's look for a
  GEMM or attention (an elementwise graph has no reduction); the values stay NumPy's."""
  from minitensor.backend import kernelize, plans
  rng = np.random.default_rng(1)
  z = rng.standard_normal(N)
  t = mt.asarray(z.copy())
  loads, stages = [], []
  load, stage = plans.load, kernelize.stage_operands
  monkeypatch.setattr(plans, "load", lambda *a, **k: loads.append(a) or load(*a, **k))
  monkeypatch.setattr(kernelize, "stage_operands", lambda *a, **k: stages.append(a) or stage(*a, **k))
  for step in range(8):
    m = rng.random(N) < 0.3 + 0.05 * step
    z[m] = z[m] * 3 - 1
    t[m] = t[m] * 3 - 1
    if step == 1: loads.clear(), stages.clear()
  np.testing.assert_array_equal(np.asarray(t), z)
  assert not loads and not stages, (len(loads), len(stages))


def test_a_sliding_window_loop_compiles_no_program_per_position():
  """The sum of a window (integers: a reduction whose order does not matter) and a write at a moving offset. (A
  symbolic key says which sizes are equal: positions where an offset equals another size, i = 7 or 50 here, are
  other structures.)"""
  a = np.arange(N, dtype=np.int64) % 1000
  h = mt.zeros(N + 100, dtype=mt.int64)
  hn = np.zeros(N + 100, np.int64)
  before = None
  for i in range(10, 24):
    got = np.asarray(mt.asarray(a)[i:N - 7 + i].sum())
    assert got == a[i:N - 7 + i].sum()
    h[i:i + N] = mt.asarray(a) * i
    hn[i:i + N] = a * i
    np.testing.assert_array_equal(np.asarray(h), hn)
    if i == 12: before = stats.graph_misses    # (the write over a realized h first shows at i = 11)
  assert stats.graph_misses == before


def test_float_reductions_keep_a_program_per_shape_and_their_bits():
  """Row sums of a changing row count: each shape gets its own (optimized) program, and a shape's values are the
  same at its first call and after its program has gone to tier 1."""
  x = np.random.default_rng(1).standard_normal((N // 64 + 40, 64)).astype(np.float32)
  f = lambda t: (t * 3).sum(axis=1)
  first = {n: np.asarray(f(mt.asarray(x[:n]))) for n in range(N // 64, N // 64 + 3)}
  for _ in range(tiers.HOT_RUNS + 2):
    for n, want in first.items(): np.testing.assert_array_equal(np.asarray(f(mt.asarray(x[:n]))), want)
  realize_mod.settle(120)
  for n, want in first.items():
    np.testing.assert_array_equal(np.asarray(f(mt.asarray(x[:n]))), want)
    np.testing.assert_allclose(want, (x[:n] * 3).sum(axis=1), rtol=2e-5, atol=1e-4)


MOVES = {       # (xp: minitensor or NumPy)
  "slices": lambda xp, t, k: t[k:][::3] * 2 - t[: t.shape[0] - k][::3],
  "pad and flip": lambda xp, t, k: xp.pad(t[k:], (k, 3)).reshape(-1)[::-1] + 1,
  "concatenate": lambda xp, t, k: xp.concatenate([t[:k], t[k:] * 3, t[: k + 1]]),
  "mask": lambda xp, t, k: t[t > (k % 7) / 7 - 0.5] * 4,
  "int max": lambda xp, t, k: (t[k:] * 1000).astype(xp.int32).reshape(-1, 1).max(axis=1) % 97,
}


@pytest.mark.parametrize("name", sorted(MOVES))
@settings(max_examples=5, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(1, 400), extra=st.integers(0, 3000))
def test_symbolic_large_programs_match_numpy(name, k, extra):
  """Every example after the first shape of a structure runs its symbolic program: NumPy's values exactly."""
  x = np.random.default_rng(k + extra).standard_normal(N + extra)
  np.testing.assert_array_equal(np.asarray(MOVES[name](mt, mt.asarray(x), k)), MOVES[name](np, x, k))


def test_the_second_shape_runs_the_symbolic_program_and_explain_shows_it():
  x = np.random.default_rng(9).standard_normal(N + 50)
  f = lambda t, k: (t[k:] * 5)[::2] - 1
  np.testing.assert_array_equal(np.asarray(f(mt.asarray(x[:N + 3]), 3)), f(x[:N + 3], 3))
  before = {k for k in realize_mod._cache if k.large}
  got = f(mt.asarray(x), 4)
  text = str(mt.explain(got))
  np.testing.assert_array_equal(np.asarray(got), f(x, 4))
  assert {k for k in realize_mod._cache if k.large} - before
  assert "int64_t s" in text, text          # its sizes are arguments


_SCALARS = {"sum": lambda xp, t: t.sum(), "max": lambda xp, t: t.max(), "mean": lambda xp, t: xp.mean(t * 2),
            "any": lambda xp, t: (t > 3).any(), "argmax": lambda xp, t: xp.argmax(t)}


@pytest.mark.parametrize("name", sorted(_SCALARS))
def test_reductions_to_one_value_at_a_new_size_run_in_lanes(name):
  """A reduction to one value at a second size runs its structure's symbolic program, which has no split (its
  sizes choose it) but reduces in vector lanes with a tail (opt.heuristic for a scalar: a 1M float64 sum 841 ->
  107 us, 12 us slower than the split program of the first size instead of 8x), except argmax, whose index would
  be divided by a size in every lane. NumPy's values (sums within their rounding)."""
  f = _SCALARS[name]
  x = np.random.default_rng(3).standard_normal(3 * N + 7)
  for n in (3 * N, 2 * N + 5, 3 * N + 7):           # (the first size is compiled for itself; the others are not)
    got = np.asarray(f(mt, mt.asarray(x[:n])))
    np.testing.assert_allclose(got, f(np, x[:n]), rtol=1e-12)
  text = str(mt.explain(f(mt, mt.asarray(x[:2 * N + 5]))))
  assert "int64_t s" in text and ("Opt(UNROLL" in text) == (name != "argmax"), text
