"""The canonical form of a graph's shapes (canonical.py): the same values in the same row-major order, read by a
reference interpreter of the shape world written here with NumPy, and fewer structures (one program for softmax
over the last axis of any array of its rank's arrangements)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt
from minitensor.backend import keys, realize, tiers
from minitensor.backend.canonical import canonical
from minitensor.backend.runtime import stats
from minitensor.backend.uop import ALU, Ops, UOp

_NP = {Ops.ADD: np.add, Ops.MUL: np.multiply, Ops.FDIV: np.divide, Ops.MAX: np.maximum, Ops.MIN: np.minimum,
       Ops.EXP: np.exp, Ops.CMPLT: np.less, Ops.CMPEQ: np.equal, Ops.CMPNE: np.not_equal, Ops.WHERE: np.where}
_REDUCE = {Ops.ADD: np.sum, Ops.MAX: np.max, Ops.MIN: np.min, Ops.MUL: np.prod}


def evaluate(u: UOp, memo: dict) -> np.ndarray:
  """u's value by NumPy, op by op (the shape world's meaning, independent of the compiler)."""
  if u in memo: return memo[u]
  if u.data is not None: v = np.asarray(u.data).reshape(u.shape)
  elif u.op is Ops.CONST: v = np.array(u.arg, u.dtype.np)
  else:
    s = [evaluate(x, memo) for x in u.src]
    x, op = s[0], u.op
    if op is Ops.RESHAPE: v = x.reshape(u.shape)
    elif op is Ops.EXPAND: v = np.broadcast_to(x, u.shape)
    elif op is Ops.PERMUTE: v = x.transpose(u.arg)
    elif op is Ops.SHRINK: v = x[tuple(slice(b, e) for b, e in u.arg)]
    elif op is Ops.PAD: v = np.pad(x, u.arg[0], constant_values=u.arg[1])
    elif op is Ops.FLIP: v = np.flip(x, u.arg) if u.arg else x
    elif op is Ops.STACK: v = np.stack(s)
    elif op is Ops.REDUCE:
      n = u.arg[1]
      v = _REDUCE[u.arg[0]](x, axis=tuple(range(x.ndim - n, x.ndim))).astype(u.dtype.np)
    elif op is Ops.SCAN:
      assert u.arg[0] is Ops.ADD
      v = np.cumsum(x, axis=u.arg[1], dtype=u.dtype.np)
    elif op is Ops.CAST: v = x.astype(u.dtype.np)
    elif op in ALU: v = _NP[op](*s).astype(u.dtype.np)
    else: raise NotImplementedError(op)
  memo[u] = v
  return v


def _graph(f, *arrays) -> list[UOp]:
  return [f(*[mt.asarray(a) for a in arrays]).uop]


def softmax(x):
  e = mt.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("shape", [(3, 4, 3), (2, 1, 6, 3), (1, 12, 3), (2, 3, 2, 1, 3), (12, 1, 3)])
def test_softmax_over_the_last_axis_is_one_structure_of_any_arrangement(shape):
  """softmax of every shape here is an (M, N) softmax with N = 3, M = 12: one structure key, and the values are
  NumPy's."""
  x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
  g = _graph(softmax, x)
  c = canonical(g, keys.SYMBOLIC_MAX)
  assert c[0].shape == (12, 3)
  ref = _graph(softmax, np.zeros((12, 3), np.float32))
  assert keys.structure(c)[0] == keys.structure(canonical(ref, keys.SYMBOLIC_MAX))[0]
  np.testing.assert_allclose(evaluate(c[0], {}).reshape(shape), evaluate(g[0], {}), rtol=1e-6)
  mtt.assert_matches_numpy(lambda a: softmax(a) if isinstance(a, mt.Tensor) else
                           np.exp(a - a.max(-1, keepdims=True)) / np.exp(a - a.max(-1, keepdims=True)).sum(
                             -1, keepdims=True), x)


def test_rank_and_unit_axes_compile_one_program(monkeypatch):
  """Sums over the last two axes of arrays whose leading axes differ in rank and unit axes: one compile (not in
  checked mode, whose programs are keyed by their sizes)."""
  monkeypatch.delenv("MINITENSOR_CHECK", raising=False)
  rng = np.random.default_rng(1)
  f = lambda t: (t * 2).sum(axis=(-2, -1))
  np.asarray(f(mt.asarray(rng.standard_normal((3, 5, 7)))))
  before = stats.compiles
  for shape in [(2, 2, 5, 7), (4, 1, 5, 7), (6, 1, 35, 1), (1, 2, 3, 1, 5, 7)]:
    a = rng.standard_normal(shape)
    got = np.asarray(f(mt.asarray(a)))
    np.testing.assert_allclose(got, (a * 2).sum(axis=(-2, -1)), rtol=1e-12)
  assert stats.compiles == before


def test_what_the_rules_keep_apart():
  """A broadcast axis next to a whole one, a transpose, a shrunk inner axis and a reduce's boundary stay axes."""
  x = np.arange(24.0).reshape(2, 3, 4)
  cases = {
    "broadcast": (lambda t: t[:, :, None] + t[:, None, :2].sum(axis=-1, keepdims=True), (2, 3, 4)),
    "transpose": (lambda t: t.transpose(0, 2, 1) * 2, (2, 4, 3)),
    "inner slice": (lambda t: t[:, :, 1:3] * 2, (6, 2)),
    "outer slice": (lambda t: t[:, 1:3, :] * 2, (2, 8)),
    "reduce": (lambda t: t.sum(axis=-1), (6,)),
  }
  for name, (f, want) in cases.items():
    g = _graph(f, x)
    c = canonical(g, keys.SYMBOLIC_MAX)
    assert evaluate(c[0], {}).size == evaluate(g[0], {}).size, name
    np.testing.assert_array_equal(evaluate(c[0], {}).reshape(g[0].shape), evaluate(g[0], {}), err_msg=name)
    if name != "broadcast": assert c[0].shape == want, name


@pytest.mark.parametrize("shape", [(5, 7), (2, 1, 3, 7), (1, 7)])
def test_a_canonical_graph_is_its_own_canonical_form(shape):
  """canonical is idempotent: the canonical form of a canonical graph is that graph itself (no node rebuilt)."""
  c = canonical(_graph(softmax, np.ones(shape, np.float32)), keys.SYMBOLIC_MAX)
  assert canonical(c, keys.SYMBOLIC_MAX) is c
  assert c[0].shape == {(5, 7): (5, 7), (2, 1, 3, 7): (6, 7), (1, 7): (7,)}[shape]


def test_large_empty_and_flat_graphs_are_left_alone():
  big = mt.asarray(np.ones((2, keys.SYMBOLIC_MAX)))
  small = mt.asarray(np.ones((2, 0, 3)))
  flat = mt.asarray(np.ones(7))
  for t in (big * 2, small * 2, flat * 2):
    assert canonical([t.uop], keys.SYMBOLIC_MAX)[0] is t.uop


@settings(max_examples=150, deadline=None, derandomize=True)
@given(data=st.data())
def test_canonical_graph_has_the_graphs_values(data):
  """After any movement chain, elementwise ops with a broadcast operand, maybe a cumulative sum along an axis and a
  reduction over the last axes: the canonical graph's values (reference interpreter) reshaped to the output's shape
  are the graph's, its leaves are the graph's in the same order, and the realized values are NumPy's."""
  shape = data.draw(mtt.shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
  x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) - 3.0
  chain = data.draw(mtt.movement_chains(shape))
  how = data.draw(st.sampled_from(["sum", "max"]))
  t = chain.apply(mt.asarray(x))
  if t.size == 0 or t.ndim == 0: return
  n = data.draw(st.integers(0, t.ndim))
  row = t[(0,) * (t.ndim - 1)] if t.ndim > 1 else t
  y = mt.where(t > 1, t * 2 + row, -t)
  if data.draw(st.booleans()): y = mt.cumsum(y, axis=data.draw(st.integers(0, t.ndim - 1)))
  y = getattr(y, how)(axis=tuple(range(t.ndim - n, t.ndim))) if n else y
  g = [y.uop]
  c = canonical(g, keys.SYMBOLIC_MAX)
  want = evaluate(g[0], {})
  np.testing.assert_array_equal(evaluate(c[0], {}).reshape(want.shape), want)
  assert [u for u in keys.structure(c)[1]] == [u for u in keys.structure(g)[1]]     # the same leaves, in order
  np.testing.assert_allclose(np.asarray(y), want, rtol=1e-12, atol=1e-12)


def test_a_specialization_is_of_the_canonical_graph(monkeypatch):
  """A hot symbolic program's specialization compiles the canonical graph it was keyed by (its leaves and sizes
  agree, so it is made at all), and the loop's values stay the symbolic program's bit for bit."""
  monkeypatch.setenv("MINITENSOR_TIER", "auto")
  monkeypatch.delenv("MINITENSOR_CHECK", raising=False)
  monkeypatch.setattr(tiers, "HOT_SECONDS", float("inf"))
  monkeypatch.setattr(tiers, "HOT_RUNS", 2)
  monkeypatch.setattr(tiers, "WARM_SECONDS", 0.0)
  a = np.random.default_rng(2).standard_normal((3, 1, 4, 5))
  f = lambda t: (t * 1.75).sum(axis=-1)
  first = np.asarray(f(mt.asarray(a)))
  for _ in range(3): np.testing.assert_array_equal(np.asarray(f(mt.asarray(a))), first)
  realize.settle(120)
  skey, _, sizes = keys.structure(realize.canonical_graph([f(mt.asarray(a)).uop]))
  prog = realize._cache[realize.ProgramKey(skey, realize.modes())]
  assert prog.specializable and prog.special.get(sizes), prog.special
  np.testing.assert_array_equal(np.asarray(f(mt.asarray(a))), first)
  np.testing.assert_allclose(first, (a * 1.75).sum(axis=-1), rtol=1e-12)


@pytest.mark.parametrize("how", ["sum", "max", "min", "prod", "mean", "any", "all"])
def test_reductions_over_unit_axes_keep_numpys_signs_and_nans(how):
  """A reduce over 1-axes alone: max, min and product are the element itself, a sum adds it to 0 (NumPy: the sum
  of -0.0 over an axis is 0.0)."""
  a = np.array([[[-0.0]], [[np.nan]], [[3.0]], [[-np.inf]]])
  if how in ("any", "all"): a = a > 0
  got = np.asarray(getattr(mt.asarray(a), how)(axis=(1, 2)))
  want = getattr(a, how)(axis=(1, 2))
  np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
