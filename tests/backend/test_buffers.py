"""The pool of intermediate buffers (backend/buffers.py): what it keeps and drops, and that plans whose
intermediates come from it compute the values NumPy does, run after run, on other data and from several threads."""
import contextlib
import threading
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend import buffers
from minitensor.backend.runtime import stats

F32 = np.dtype(np.float32)


@pytest.fixture(autouse=True)
def _empty_pool():
  buffers.clear()
  yield
  buffers.clear()


def test_take_returns_a_given_array():
  a = buffers.take(1 << 16, F32)
  assert a.shape == (1 << 16,) and a.dtype == F32
  buffers.give([a])
  assert buffers.held() == a.nbytes
  assert buffers.take(1 << 16, F32) is a
  assert buffers.held() == 0
  assert buffers.take(1 << 16, F32) is not a          # (taken: never handed out twice)


def test_pool_is_keyed_by_count_and_dtype():
  a = buffers.take(1 << 16, F32)
  buffers.give([a])
  assert buffers.take(1 << 15, np.dtype(np.float64)) is not a
  assert buffers.take((1 << 16) + 1, F32) is not a
  assert buffers.take(1 << 16, F32) is a


def test_small_arrays_are_not_kept():
  n = buffers.MIN_BYTES // 4 - 1
  a = buffers.take(n, F32)
  buffers.give([a])
  assert buffers.held() == 0 and buffers.take(n, F32) is not a


def test_pool_drops_the_oldest_past_its_bound(monkeypatch):
  monkeypatch.setattr(buffers, "POOL_BYTES", 3 * buffers.MIN_BYTES)
  n = buffers.MIN_BYTES // 4
  arrays = [np.empty(n, F32) for _ in range(5)]
  buffers.give(arrays)
  assert buffers.held() == 3 * buffers.MIN_BYTES
  kept = [buffers.take(n, F32) for _ in range(3)]
  assert {id(a) for a in kept} == {id(a) for a in arrays[2:]}
  big = np.empty(4 * n, F32)
  buffers.give([big])                                    # (larger than the whole pool: not kept)
  assert buffers.held() == 0


def _epilogue(tx, tw, tb):
  """relu(x @ w + b): the product is materialized (an intermediate of 256 KiB), the epilogue reads it."""
  return mt.maximum(tx @ tw + tb, 0)


def _reference(x, w, b): return np.maximum(x @ w + b, 0)


def test_a_plan_reuses_its_intermediate_and_stays_correct():
  rng = np.random.default_rng(0)
  w, b = rng.standard_normal((64, 1024), np.float32), rng.standard_normal(1024, np.float32)
  tw, tb = mt.asarray(w), mt.asarray(b)
  held, results = [], []
  for _ in range(4):                    # other data each run: nothing of an earlier run's intermediate shows
    x = rng.standard_normal((64, 64), np.float32)
    results.append((np.asarray(_epilogue(mt.asarray(x), tw, tb)), _reference(x, w, b)))
    np.testing.assert_allclose(*results[-1], rtol=1e-4, atol=1e-4)
    held.append(buffers.held())
  assert held[0] >= 64 * 1024 * 4 and len(set(held)) == 1     # kept after the first run, and not more after
  for got, want in results: np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)   # (outputs never reused)


def test_a_replayed_plan_reuses_its_intermediate(monkeypatch):
  monkeypatch.setenv("MINITENSOR_CHECK", "0")           # (checked mode never replays: test_dispatch)
  rng = np.random.default_rng(1)
  x, w, b = (rng.standard_normal(s, np.float32) for s in ((64, 64), (64, 1024), (64, 1024)))
  m, tb = mt.asarray(x) @ mt.asarray(w), mt.asarray(b)       # the root's sources live across the calls
  before, results = stats.replays, []
  held = []
  for _ in range(6):
    results.append(np.asarray(m + tb))
    held.append(buffers.held())
  for r in results: np.testing.assert_allclose(r, x @ w + b, rtol=1e-4, atol=1e-4)    # (no result reused)
  assert stats.replays - before >= 3 and held[0] >= 64 * 1024 * 4 and len(set(held)) == 1


def test_threads_running_one_plan_get_their_own_intermediates():
  rng = np.random.default_rng(2)
  w, b = rng.standard_normal((64, 1024), np.float32), rng.standard_normal(1024, np.float32)
  tw, tb = mt.asarray(w), mt.asarray(b)
  np.asarray(_epilogue(mt.asarray(np.zeros((64, 64), np.float32)), tw, tb))        # (compiled once, first)
  xs = [rng.standard_normal((64, 64), np.float32) for _ in range(4)]
  errors = []
  def work(x):
    try:
      for _ in range(15):
        np.testing.assert_allclose(np.asarray(_epilogue(mt.asarray(x), tw, tb)), _reference(x, w, b),
                                   rtol=1e-4, atol=1e-4)
    except AssertionError as e: errors.append(e)
  threads = [threading.Thread(target=work, args=(x,)) for x in xs]
  for t in threads: t.start()
  for t in threads: t.join()
  assert not errors


# ---------------------------------------------------------------------- results lent from the pool
def test_a_result_returns_to_the_pool_when_its_last_view_dies():
  r = buffers.result(1 << 18, F32)
  assert isinstance(r.base, buffers.Lease) and r.shape == (1 << 18,)
  raw = r.base.raw
  view = r[10:].reshape(-1, 2)
  del r
  assert buffers.held() == 0                      # (a view still reads it)
  assert buffers.take(1 << 18, F32) is not raw
  del view
  assert buffers.held() == raw.nbytes
  assert buffers.take(1 << 18, F32) is raw
  small = buffers.result(10, F32)
  assert small.base is None                       # (small results are NumPy's own arrays)


def test_results_from_the_pools_threshold_on_are_lent():
  # (a W1 N=256 product, 256 KiB, is lent: glibc may give a freed result's pages back at each free below 1 MiB)
  n = buffers.RESULT_MIN_BYTES // F32.itemsize
  assert buffers.RESULT_MIN_BYTES <= 1 << 17
  assert isinstance(buffers.result(n, F32).base, buffers.Lease)
  assert buffers.result(n - 1, F32).base is None
  t = mt.asarray(np.ones((256, 256), np.float32))
  r = np.asarray(t @ t)
  assert isinstance(r.base.base, buffers.Lease)          # (np.asarray gives a read-only view of the result)
  np.testing.assert_array_equal(r, np.full((256, 256), 256, np.float32))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["new", "view", "drop"]), st.integers(0, 7), st.sampled_from([1, 2])),
                min_size=1, max_size=40))
def test_the_pool_never_lends_memory_a_live_array_uses(steps):
  """Any order of results made, viewed and dropped: every live array keeps the values written into it when it was
  made, and no two live results share memory (with the pool's thresholds lowered to 4 KiB, so it is fast)."""
  with small_pool():
    live: list[tuple[np.ndarray, float]] = []
    stamp = 0.0
    for what, k, size in steps:
      if what == "new":
        stamp += 1
        r = buffers.result(size << 11, F32)
        assert isinstance(r.base, buffers.Lease)
        r[:] = stamp
        live.append((r, stamp))
      elif what == "view" and live:
        a, s = live[k % len(live)]
        live.append((a[::3], s))
      elif what == "drop" and live:
        live.pop(k % len(live))
      for a, s in live: assert (a == s).all()
    for i, (a, s) in enumerate(live):
      for b, u in live[i + 1:]:
        if s != u: assert not np.shares_memory(a, b)


def test_lent_arrays_interfaces_go_with_the_pools_arrays(monkeypatch):
  # (Lease keeps each pool array's __array_interface__; an array the pool drops takes its entry with it)
  buffers.clear()
  monkeypatch.setattr(buffers, "POOL_BYTES", 4 << 20)
  for n in range(1, 40):
    r = buffers.result(n << 16, F32)                  # n * 256 KiB: 39 sizes, ten times the pool's 4 MiB
    r[:] = n
    assert (np.asarray(r) == n).all() and r.ctypes.data == r.base.raw.ctypes.data
    del r
    assert buffers.held() <= buffers.POOL_BYTES
    assert len(buffers._faces) <= sum(len(v) for v in buffers._spare.values())
  buffers.clear()
  assert not buffers._faces


@contextlib.contextmanager
def small_pool():
  old = buffers.MIN_BYTES, buffers.RESULT_MIN_BYTES
  buffers.MIN_BYTES = buffers.RESULT_MIN_BYTES = 1 << 12
  try: yield
  finally: buffers.MIN_BYTES, buffers.RESULT_MIN_BYTES = old


def test_realized_results_come_back_and_keep_their_values():
  a = np.random.default_rng(0).standard_normal(1 << 18).astype(np.float32)
  t = mt.asarray(a)
  kept = []
  for k in range(6):
    r = np.asarray(t * float(k) + 1)
    if k % 2: kept.append((k, r))              # the odd results live on while the even ones are dropped
  assert buffers.held() > 0                     # (the dropped results are back in the pool)
  for k, r in kept: np.testing.assert_array_equal(r, a * np.float32(k) + 1)
