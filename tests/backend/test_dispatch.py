"""The realize plan of a repeated graph (replay.Bound): a graph rebuilt over the same sources (W9's
`np.asarray(t + u)` in a loop) runs its kernels without the structure key, the program lookup or any lowering,
and gives what the full path gives whatever changed in between (the mutation rules, checked mode, tiers, threads)."""
import gc
import os
import threading
import numpy as np
import pytest
import minitensor as mt
from minitensor.backend import realize as R
from minitensor.backend import replay
from minitensor.backend.runtime import stats


@pytest.fixture(autouse=True)
def unchecked(monkeypatch):
  """Bound plans are the unchecked modes' (checked mode never replays one: test_modes_are_part_of_the_plan), so
  these tests run unchecked when the suite runs with MINITENSOR_CHECK=1."""
  monkeypatch.setenv("MINITENSOR_CHECK", "0")


@pytest.fixture
def counted(monkeypatch):
  """Counts of the structure walks and of the programs made (lowered or loaded) from here on."""
  n = {"structure": 0, "program": 0}
  structure, program = R.structure, R.program
  def count_structure(*a, **k):
    n["structure"] += 1
    return structure(*a, **k)
  def count_program(*a, **k):
    n["program"] += 1
    return program(*a, **k)
  monkeypatch.setattr(R, "structure", count_structure)
  monkeypatch.setattr(R, "program", count_program)
  return n


def _pair(n=16, seed=0):
  rng = np.random.default_rng(seed)
  return rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)


def test_a_repeated_graph_runs_its_bound_plan_without_key_or_lowering(counted):
  a, b = _pair()
  t, u = mt.asarray(a), mt.asarray(b)
  for _ in range(3): np.testing.assert_array_equal(np.asarray(t + u), a + b)    # compiled (or found), seen, bound
  walks, compiles, replays, hits = counted["structure"], stats.compiles, stats.replays, stats.graph_hits
  for _ in range(20):
    got = np.asarray(t + u)
    np.testing.assert_array_equal(got, a + b)
    assert got.dtype == np.float32 and got.shape == (16,) and not got.flags.writeable
  assert counted["structure"] == walks and stats.compiles == compiles
  assert stats.replays - replays == 20 and stats.graph_hits - hits == 20


def test_bound_plans_of_other_shapes_dtypes_and_ops():
  rng = np.random.default_rng(1)
  # (a, b, f, bound plan runs in 5 calls): the 4th and 5th calls run the plan bound at the 3rd, unless a source is
  # rebuilt each call (a broadcast ndarray operand: a new RESHAPE/EXPAND over its leaf)
  cases = [(rng.standard_normal((3, 5)), rng.standard_normal((3, 5)), lambda x, y: x * y, 2),
           (rng.integers(-9, 9, (4, 1, 6)).astype(np.int32), rng.integers(1, 9, (4, 1, 6)).astype(np.int32),
            lambda x, y: x // y, 2),
           (rng.standard_normal((7, 3)).astype(np.float32), 2.5, lambda x, y: x * y, 2),
           (rng.standard_normal((6, 4)), None, lambda x, _: np.exp(x), 2),
           (rng.standard_normal((6, 4)).astype(np.float32), None, lambda x, _: x.astype(np.float64), 2),
           (rng.standard_normal((6, 4)), rng.standard_normal(4), lambda x, y: x + y, 0)]
  for a, b, f, n in cases:
    want = f(a, b)
    ta = mt.asarray(a)
    tb = mt.asarray(b) if isinstance(b, np.ndarray) else b
    replays = stats.replays
    for _ in range(5):
      got = np.asarray(f(ta, tb))
      assert got.dtype == want.dtype and got.shape == want.shape
      np.testing.assert_allclose(got, want, rtol=1e-6)
    assert stats.replays - replays == n


def test_a_number_that_changes_every_call_is_an_argument_of_the_plan(counted):
  """`p * i` over a loop's i: the broadcast constant is a new node each call, counted by its structure, its number
  passed to the bound plan; a number the simplifier folds (0, 1, -1) is another program, and the values are
  NumPy's throughout."""
  x = np.random.default_rng(3).standard_normal((4, 3))
  t = mt.asarray(x)
  for i in range(2, 5): np.testing.assert_array_equal(np.asarray(t * i), x * i)
  walks, replays = counted["structure"], stats.replays
  for i in [5, 6, 2.5, -7, 1e300, 9, 1, 11, 0, 12]:
    got = np.asarray(t * i)
    np.testing.assert_array_equal(got, x * i)
    assert not got.flags.writeable
  assert stats.replays - replays == 8                  # (1 and 0 are programs of their own: walked)
  assert counted["structure"] - walks == 2
  big = (x * 1e30).astype(np.float32)
  f = mt.asarray(big)
  for v in (2.0, 4.0, 8.0): np.asarray(f * v)          # (bound at the third)
  replays = stats.replays
  with pytest.warns(RuntimeWarning, match="overflow"):  # the flags of a run with a number given to the plan
    got = np.asarray(f * 1e10)
  assert stats.replays - replays == 1
  with np.errstate(over="ignore"): np.testing.assert_array_equal(got, big * np.float32(1e10))


def test_subtracting_a_changing_number_is_an_argument_of_the_plan_too(counted):
  """`x - c` adds the negated number (one broadcast constant, not a product built anew each call), so a loop over
  c replays one plan; the values are NumPy's bit for bit, signed zeros and integer wrap-around included."""
  x = np.random.default_rng(5).standard_normal((5, 4))
  t = mt.asarray(x)
  for c in (2.0, 3.0, 4.0): np.asarray(t - c)
  walks, replays = counted["structure"], stats.replays
  for c in (5.0, 6.5, -7.0, 1e300, 8.25):
    np.testing.assert_array_equal(np.asarray(t - c), x - c)
  assert stats.replays - replays == 5 and counted["structure"] == walks
  zeros = np.array([-0.0, 0.0, 1.5, -np.inf])
  for c in (0.0, -0.0, 0, 2, np.inf, np.nan):
    got, want = np.asarray(mt.asarray(zeros) - c), zeros - c
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
  for dt in (np.int8, np.uint8, np.int32, np.uint64, np.float32, np.float16):
    a = np.array([0, 1, 7, 100, 127], dt)
    for c in (0, 1, -1, 3, 100, 127):
      if c < 0 and dt in (np.uint8, np.uint64): continue       # (NumPy 2 raises OverflowError, as below)
      got, want = np.asarray(mt.asarray(a) - c), a - c
      assert got.dtype == want.dtype
      np.testing.assert_array_equal(got, want)
  with pytest.raises(OverflowError):
    mt.asarray(np.array([1, 2], np.uint8)) - 300


def test_one_number_in_two_places_and_a_number_read_elsewhere_keep_their_values():
  """Two sources of one constant are one program input, two constants two: `t * i + i` and `t * i + j` are
  other plans; a constant that an unrealized source also reads (`q = t * 5`, then `q + 5`) is no argument."""
  x = np.random.default_rng(4).standard_normal(6)
  t = mt.asarray(x)
  for i in range(2, 12):
    np.testing.assert_array_equal(np.asarray(t * i + i), x * i + i)
    np.testing.assert_array_equal(np.asarray(t * i + (i + 1)), x * i + (i + 1))
  q = t * 5.0
  for c in (5.0, 5.0, 5.0, 6.0, 2.0, 3.0, 4.0, 5.0, 6.0, 5.0, 7.0):     # (a plan made at 5.0 would read one 5.0)
    np.testing.assert_array_equal(np.asarray(q + c), x * 5.0 + c)
    np.testing.assert_array_equal(np.asarray(q * c), x * 5.0 * c)


def test_graphs_rebuilt_below_the_root_take_the_full_path():
  x = np.random.default_rng(8).standard_normal((6, 4))
  t = mt.asarray(x)
  replays = stats.replays
  for _ in range(4):
    np.testing.assert_allclose(np.asarray(t.sum(axis=0)), x.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(t.T * 2.0 + 1.0), x.T * 2 + 1, rtol=1e-12)
  assert stats.replays == replays


def test_a_root_over_a_source_built_with_it_keeps_no_plan_and_a_held_lazy_source_does():
  """`a - b` (its source `-b` is built with it and dies with it) leaves nothing in replay's memory, while a lazy
  source the user holds (`q + a`, q = a * 2 + b unrealized) is a source of a plan; values NumPy's throughout."""
  a, b = _pair(seed=11)
  t, u = mt.asarray(a), mt.asarray(b)
  seen = len(replay._seen)
  for _ in range(5): np.testing.assert_array_equal(np.asarray(t - u), a - b)
  assert len(replay._seen) == seen
  q = t * 2.0 + u
  for _ in range(3): np.testing.assert_array_equal(np.asarray(q + t), a * np.float32(2) + b + a)
  replays = stats.replays
  for _ in range(3): np.testing.assert_array_equal(np.asarray(q + t), a * np.float32(2) + b + a)
  assert stats.replays - replays == 3 and q._data is None


def test_a_borrowed_array_changed_between_calls_is_read_as_it_is_now():
  a, b = _pair(seed=2)
  t, u = mt.asarray(a, copy=False), mt.asarray(b)
  for _ in range(3): np.testing.assert_array_equal(np.asarray(t + u), a + b)
  replays = stats.replays
  for k in range(5):
    a[k] = 100.0 + k                             # the user's memory, wrapped without a copy
    np.testing.assert_array_equal(np.asarray(t + u), a + b)
  assert stats.replays - replays == 5


def test_values_captured_at_the_call_and_in_place_writes_between_calls():
  a, b = _pair(seed=3)
  t, u = mt.asarray(a), mt.asarray(b)
  for _ in range(3): np.asarray(t + u)
  a0 = a.copy()
  a[:] = 7                                       # copied at mt.asarray: changes nothing
  np.testing.assert_array_equal(np.asarray(t + u), a0 + b)
  earlier = t + u
  t += 1                                         # t is a new value: the plan of the old sources does not apply
  np.testing.assert_array_equal(np.asarray(t + u), a0 + 1 + b)
  np.testing.assert_array_equal(np.asarray(earlier), a0 + b)
  t[2] = -5                                      # a write through indexing
  want = a0 + 1
  want[2] = -5
  for _ in range(3): np.testing.assert_array_equal(np.asarray(t + u), want + b)
  row = t[4:8]
  row[:] = 0                                     # a write through a view of t
  want[4:8] = 0
  for _ in range(3): np.testing.assert_array_equal(np.asarray(t + u), want + b)


def test_a_source_realized_since_is_read_not_recomputed():
  a, b = _pair(seed=4)
  t, u = mt.asarray(a), mt.asarray(b)
  y1, y2 = t * u, t * u                          # one node (hash-consed), computed by neither yet
  for _ in range(3): np.testing.assert_allclose(np.asarray(y1 + u), a * b + b, rtol=1e-6)
  np.asarray(y2)                                 # the node is computed now: the next walk reads it
  replays = stats.replays
  np.testing.assert_allclose(np.asarray(y1 + u), a * b + b, rtol=1e-6)
  assert stats.replays == replays


def test_modes_are_part_of_the_plan(monkeypatch):
  a, b = _pair(seed=5)
  t, u = mt.asarray(a), mt.asarray(b)
  for _ in range(3): np.asarray(t * u)
  replays = stats.replays
  monkeypatch.setenv("MINITENSOR_CHECK", "1")    # checked mode never runs a bound plan
  for _ in range(3): np.testing.assert_array_equal(np.asarray(t * u), a * b)
  assert stats.replays == replays
  monkeypatch.setenv("MINITENSOR_CHECK", "0")
  monkeypatch.setenv("MINITENSOR_TIER", "1")     # another tier mode: another program, its own plan
  for _ in range(4): np.testing.assert_array_equal(np.asarray(t * u), a * b)
  assert stats.replays == replays + 1
  monkeypatch.setenv("MINITENSOR_TIER", "7")
  with pytest.raises(ValueError, match="MINITENSOR_TIER"): np.asarray(t * u)


def test_threads_share_a_bound_plan():
  a, b = _pair(64, seed=6)
  t, u = mt.asarray(a), mt.asarray(b)
  bad = []
  def work():
    for _ in range(200):
      if not np.array_equal(np.asarray(t * u), a * b): bad.append(1)
  ts = [threading.Thread(target=work) for _ in range(4)]
  for x in ts: x.start()
  for x in ts: x.join()
  assert not bad


def test_threads_with_their_own_numbers_never_see_each_others():
  """`t * i` from four threads at once, each with numbers of its own: a plan's one-element arrays for the numbers
  belong to the thread that made it (another thread takes the full path), so no thread reads another's number."""
  x = np.random.default_rng(8).standard_normal(257)
  t = mt.asarray(x)
  bad, start = [], threading.Barrier(4)
  def work(k: int):
    start.wait()
    for i in range(300):
      v = k * 1000 + i + 2.5
      if not np.array_equal(np.asarray(t * v), x * v): bad.append((k, i))
  ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
  for th in ts: th.start()
  for th in ts: th.join()
  assert not bad, bad[:5]
  replays = stats.replays
  for i in range(20): np.testing.assert_array_equal(np.asarray(t * (i + 0.5)), x * (i + 0.5))
  assert stats.replays - replays >= 17                 # (this thread's plan, once it has one)


def test_a_plan_dies_with_its_sources():
  a, b = _pair(seed=7)
  t, u = mt.asarray(a), mt.asarray(b)
  for _ in range(3): np.asarray(t + u)
  ids = {id(t.uop), id(u.uop)}
  assert any(ids <= set(k[4:]) for k in replay.bound)
  del t, u
  gc.collect()
  assert not any(ids <= set(k[4:]) for k in replay.bound)


def test_a_source_dying_at_interpreter_exit_drops_its_plan_quietly(monkeypatch):
  """At exit a module's globals are cleared before the last nodes die: the callback that drops a dead source's
  plan holds the table itself (once it read the global and printed 'Exception ignored ... NoneType')."""
  a, b = _pair(seed=8)
  t, u = mt.asarray(a), mt.asarray(b)
  for _ in range(3): np.asarray(t + u)
  table = replay.bound
  ids = {id(t.uop), id(u.uop)}
  assert any(ids <= set(k[4:]) for k in table)
  raised = []
  monkeypatch.setattr("sys.unraisablehook", raised.append)
  monkeypatch.setattr(replay, "bound", None)
  del t, u
  gc.collect()
  assert not raised and not any(ids <= set(k[4:]) for k in table)


def test_a_forked_child_runs_the_parents_bound_plan():
  a, b = _pair(seed=9)
  t, u = mt.asarray(a), mt.asarray(b)
  for _ in range(3): np.asarray(t + u)
  pid = os.fork()
  if pid == 0:                                   # the child: exit status 0 when the plan ran and gave a + b
    replays = stats.replays
    ok = np.array_equal(np.asarray(t + u), a + b) and stats.replays == replays + 1
    os._exit(0 if ok else 1)
  assert os.waitpid(pid, 0)[1] == 0


def test_an_invalid_tier_mode_fails_where_a_program_is_needed_only(monkeypatch):
  t = mt.asarray(np.arange(6.0).reshape(2, 3))
  monkeypatch.setenv("MINITENSOR_TIER", "fast")
  view = R.realize([t.uop.permute((1, 0))])[0]       # a graph NumPy answers with a view: no program
  np.testing.assert_array_equal(view, np.arange(6.0).reshape(2, 3).T)
  with pytest.raises(ValueError, match="MINITENSOR_TIER"): np.asarray(t * t)


def test_a_root_met_again_only_much_later_makes_no_plan():
  """A plan is made when a root over the same sources comes back within replay.RECENT realizations; one that comes
  back only after many others (a loop over i run twice: each i's root twice in all) is not worth a plan."""
  x = mt.asarray(np.arange(8.0))
  ks = [mt.asarray(np.full(8, float(k))) for k in range(replay.RECENT + 8)]
  for _ in range(2):
    for k in ks: np.asarray(x + k)
  assert not any(b.srcs[1]() is k.uop for b in replay.bound.values() for k in ks if len(b.srcs) > 1)
  before = stats.replays
  for _ in range(4): np.asarray(x + ks[0])        # (back to back: a plan, then its replays)
  assert stats.replays - before >= 1
