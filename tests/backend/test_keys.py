"""Tree keys (keys.py): a realization of fresh nodes finds its program by the ids its nodes keep, and gets the
values a walk would have given, whatever the leaves' identities, the memos' epochs and the constants."""
import gc
import sys
import weakref
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend import keys
from minitensor.backend.runtime import stats


def _value(f, *arrays):
  return np.asarray(f(*[mt.asarray(a) for a in arrays]))


def test_a_graph_of_fresh_nodes_is_found_without_a_walk(monkeypatch):
  rng = np.random.default_rng(0)
  f = lambda a, b: (a * 2 + b).sum(axis=1)
  for _ in range(2): _value(f, rng.standard_normal((6, 5)), rng.standard_normal((6, 5)))
  walks = []
  real = keys.walk
  monkeypatch.setattr(keys, "walk", lambda *a, **k: walks.append(1) or real(*a, **k))
  for _ in range(3):
    a, b = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    np.testing.assert_allclose(_value(f, a, b), (a * 2 + b).sum(axis=1), rtol=1e-12)
  assert walks == []


@pytest.mark.parametrize("f", [
  lambda a, b: (a * b) * ((a * b) + 0.5),          # one source's leaves a prefix of the other's
  lambda a, b: ((a * b) + 0.5) * (a * b),          # ... of the first's
  lambda a, b: (a * 1.5) * (b + 0.5),              # leaves the other has none of
  lambda a, b: (a * 1.5) * (a + 0.5),              # ... sharing one (the general merge)
], ids=["prefix-second", "prefix-first", "disjoint", "general"])
def test_two_sources_over_different_leaves_find_their_program_without_a_walk(f, monkeypatch):
  """keys._merged's cases of two sources whose leaves differ: the key tells them apart (each compiles its own
  program, with NumPy's values), and a second realization over fresh arrays is found without a walk."""
  rng = np.random.default_rng(2)
  for _ in range(2): _value(f, rng.standard_normal(9), rng.standard_normal(9))
  walks = []
  real = keys.walk
  monkeypatch.setattr(keys, "walk", lambda *a, **k: walks.append(1) or real(*a, **k))
  for _ in range(2):
    a, b = rng.standard_normal(9), rng.standard_normal(9)
    np.testing.assert_allclose(_value(f, a, b), f(a, b), rtol=1e-12)
  assert walks == []


@pytest.mark.parametrize("order", [("ab", "aa"), ("aa", "ab")])
def test_leaves_that_repeat_make_another_key(order):
  """f(a, b) and f(a, a) have one tree; their programs take two inputs and one: each finds its own."""
  rng = np.random.default_rng(1)
  f = lambda x, y: (x * 3 - y) * (x + y)
  for _ in range(2):
    for o in order:
      a = rng.standard_normal(7)
      b = a.copy() if o == "aa" else rng.standard_normal(7)
      ta = mt.asarray(a)
      tb = ta if o == "aa" else mt.asarray(b)
      np.testing.assert_allclose(np.asarray(f(ta, tb)), (a * 3 - b) * (a + b), rtol=1e-12)


def test_a_value_realized_after_its_consumer_was_keyed_is_read_not_recomputed():
  """y is keyed (its memo counts m as computed), then m is realized: y's next key has m as a leaf, so y uses the
  value the user saw."""
  x = mt.asarray(np.linspace(0, 1, 50))
  m = x.sum()
  y = x - m
  mu = m.uop                                  # (the node y reads; m's own node becomes its buffer)
  keys.find([y.uop], None)
  assert not any(r() is mu for r in keys._tree(y.uop)[2])
  epoch = keys._epoch[0]
  seen = float(m)
  assert keys._epoch[0] == epoch + 1
  assert any(r() is mu for r in keys._tree(y.uop)[2])
  np.testing.assert_array_equal(np.asarray(y), np.linspace(0, 1, 50) - seen)


def test_lifted_constants_are_inputs_of_one_program():
  rng = np.random.default_rng(2)
  a = rng.standard_normal(9)
  c0 = stats.compiles
  for c in (0.5, 0.25, 3.5, -2.5, 0.5):
    np.testing.assert_allclose(_value(lambda t, c=c: t * c + c * c, a), a * c + c * c, rtol=1e-12)
  assert stats.compiles - c0 <= 1


def test_memos_hold_no_buffer():
  a = np.arange(12.0)
  t = mt.asarray(a)
  leaf = weakref.ref(t.uop)
  np.asarray((t + 1) * t)
  del t
  gc.disable()
  try: assert leaf() is None                # (no reference cycle either: freed without the collector)
  finally: gc.enable()


def test_graphs_past_the_caps_are_walked():
  rng = np.random.default_rng(3)
  xs = [rng.standard_normal(4) for _ in range(keys.LEAF_CAP + 3)]
  ts = [mt.asarray(x) for x in xs]
  acc = ts[0]
  for t in ts[1:]: acc = acc + t
  assert keys.find([acc.uop], None) == (None, None)
  np.testing.assert_allclose(np.asarray(acc), np.sum(xs, axis=0), rtol=1e-12)
  deep = mt.asarray(xs[0])
  for _ in range(300): deep = deep * 1.0001
  limit = sys.getrecursionlimit()
  sys.setrecursionlimit(250)                # (deeper than the memo's recursion may go)
  try: assert keys.find([deep.uop], None) == (None, None)
  finally: sys.setrecursionlimit(limit)
  np.testing.assert_allclose(np.asarray(deep), xs[0] * 1.0001 ** 300, rtol=1e-9)


_OPS = [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x - 2.5 * y, lambda x, y: mt.maximum(x, y)]
_NP = [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x - 2.5 * y, np.maximum]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=6),
       st.lists(st.integers(0, 2), min_size=3, max_size=3), st.integers(0, 2), st.booleans())
def test_programs_over_repeating_and_realized_leaves_match_numpy(steps, picks, realize_at, reduce):
  """A small DAG over three leaves drawn from a pool of two arrays (so some repeat), one intermediate realized
  before the end, run twice on fresh data: NumPy's values every time."""
  rng = np.random.default_rng(len(steps))
  for _ in range(2):
    pool = [rng.standard_normal((3, 4)) for _ in range(2)]
    arrays = [pool[p % 2] for p in picks]
    tensors = {id(a): mt.asarray(a) for a in pool}
    ts, ns = [tensors[id(a)] for a in arrays], list(arrays)
    for k, (op, i, j) in enumerate(steps):
      ts.append(_OPS[op](ts[i % len(ts)], ts[j % len(ts)]))
      ns.append(_NP[op](ns[i % len(ns)], ns[j % len(ns)]))
      if k == realize_at: np.testing.assert_allclose(np.asarray(ts[-1]), ns[-1], rtol=1e-12, atol=1e-12)
    out, want = (ts[-1].sum(axis=0), ns[-1].sum(axis=0)) if reduce else (ts[-1], ns[-1])
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-12, atol=1e-12)


def test_tree_keys_hold_no_program(monkeypatch):
  """A program realize's memory cache drops (its bound on loaded libraries) is not kept alive by a tree key; the
  graph's next realization finds it again by the walk."""
  from collections import OrderedDict
  from minitensor.backend import realize as realize_mod
  monkeypatch.setattr(keys, "_programs", {})
  monkeypatch.setattr(realize_mod, "_cache", OrderedDict())
  a = np.linspace(-2, 2, 35).reshape(5, 7)
  f = lambda t: mt.tanh(t * 1.5).sum(axis=0)
  np.testing.assert_allclose(_value(f, a), np.tanh(a * 1.5).sum(axis=0), rtol=1e-12, atol=1e-12)
  (entry,) = keys._programs.values()
  assert entry[0]() is not None
  realize_mod.settle(120)                  # (a tier-1 compile on its way holds its program)
  realize_mod._cache.clear()               # (this test's own cache: monkeypatch restores the process's)
  gc.collect()
  assert entry[0]() is None
  np.testing.assert_allclose(_value(f, a + 1), np.tanh((a + 1) * 1.5).sum(axis=0), rtol=1e-12, atol=1e-12)
