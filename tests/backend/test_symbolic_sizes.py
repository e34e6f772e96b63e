"""Symbolic sizes: a graph whose values are all small (realize.SYMBOLIC_MAX) is lowered once per structure, with its
sizes as VARs that the kernels take as arguments. The program compiled for one shape must give NumPy's values at
every other shape of the same structure (sizes 2, primes, larger), and the compile counts are what the design
promises (counts, not times)."""
from __future__ import annotations
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend import keys
from minitensor.backend import realize as realize_mod
from minitensor.backend.runtime import stats
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import range_, var


def _layernorm(m, x):
  mu = x.mean(axis=-1, keepdims=True)
  d = x - mu
  return d / m.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)


def _softmax(m, x):
  e = m.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


# (name, function of (module, x, y) for x, y of one shape (r, c)); each is applied to mt and to np
FAMILIES = {
  "softmax": lambda m, x, y: _softmax(m, x),
  "layernorm": lambda m, x, y: _layernorm(m, x),
  "chain": lambda m, x, y: x * 2 + y * 3 - x * y,
  "column sum": lambda m, x, y: x.sum(axis=0),
  "transpose, slice, flip": lambda m, x, y: x.T[1:, ::-1] * 2 - y.T[:-1, :],
  "pad": lambda m, x, y: m.pad(x, ((1, 2), (0, 3))) + 1.5,
  "roll": lambda m, x, y: m.roll(x, 2, axis=1) - y,
  "cumsum": lambda m, x, y: m.cumsum(x * y, axis=1),
  "concatenate": lambda m, x, y: m.concatenate([x, y[:1] * 2], axis=0),
  "stack": lambda m, x, y: m.stack([x, y, x - y]).sum(axis=0),
  "matmul": lambda m, x, y: x @ y.T,
  "gather": lambda m, x, y: x[:, [1, 0, 1]] + x[[0, -1]].sum(axis=0)[:3],
  "reshape": lambda m, x, y: (x.reshape(-1)[: x.shape[0]] * 3).reshape(x.shape[0], 1) + y,
  "argmax": lambda m, x, y: m.argmax(x * y, axis=1),
}


def _check(name: str, shape: tuple[int, int], seed: int = 0) -> None:
  rng = np.random.default_rng(seed)
  x, y = rng.standard_normal(shape), rng.standard_normal(shape)
  fn = FAMILIES[name]
  got, want = np.asarray(fn(mt, mt.asarray(x), mt.asarray(y))), fn(np, x, y)
  assert got.shape == want.shape and got.dtype == want.dtype, (name, shape)
  np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=f"{name} at {shape}")


sizes = st.integers(3, 60)


@pytest.mark.parametrize("name", sorted(FAMILIES))
@settings(max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(first=st.tuples(sizes, sizes), then=st.lists(st.tuples(sizes, sizes), min_size=1, max_size=4))
def test_a_program_compiled_at_one_shape_is_right_at_every_other(name, first, then):
  for shape in [first, *then]: _check(name, shape)


@pytest.fixture
def counted(monkeypatch):
  """Counting compiles: every schedule stays at tier 0 (a tier-1 compile on a background thread would count), and
  kernels are not checked (checked kernels name their buffers' sizes, so they compile per shape)."""
  monkeypatch.setenv("MINITENSOR_TIER", "0")
  monkeypatch.setenv("MINITENSOR_CHECK", "0")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_distinct_sizes_of_one_structure_share_one_compile(name, counted):
  """Shapes whose sizes, and the sizes the functions derive from them (c - 2 of the roll, r + 3 of the pad, ...),
  are pairwise distinct and none 1, 2 or 3 (the functions' own constants): one compile for the first, none after."""
  _check(name, (7, 11))
  c = stats.compiles
  for shape in [(13, 5), (23, 6), (9, 31), (47, 8)]: _check(name, shape)
  assert stats.compiles == c


def test_targets_100_shapes_at_most_3_compiles_each(counted):
  rng = np.random.default_rng(1)
  shapes = [tuple(int(v) for v in rng.integers(1, 200, 2)) for _ in range(100)]
  for name in ("softmax", "layernorm", "chain", "column sum"):
    c = stats.compiles
    for shape in shapes: _check(name, shape)
    assert stats.compiles - c <= 3, name


def test_40_constants_compile_once(counted):
  x = mt.asarray(np.arange(12.0).reshape(3, 4))
  c = stats.compiles
  for i in range(40):
    got = np.asarray(x * (i + 0.5) - (i + 2.5))
    np.testing.assert_array_equal(got, np.arange(12.0).reshape(3, 4) * (i + 0.5) - (i + 2.5))
  assert stats.compiles - c <= 1


def test_30_element_reads_compile_at_most_once(counted):
  a = np.random.default_rng(2).standard_normal((5, 6))
  t = mt.exp(mt.asarray(a)) * 2 + 1
  c = stats.compiles
  got = [[float(t[i, j]) for j in range(6)] for i in range(5)]
  assert stats.compiles - c <= 1
  np.testing.assert_allclose(got, np.exp(a) * 2 + 1, rtol=1e-12)


@pytest.mark.parametrize("read", ["float(t[i, j])", "t[i].item(j)", "bool(t[i, j])", "t[i, j, ...].item()",
                                  "float(t[i][j])", "t[i].tolist()[j]", "int(t[i, j])"])
def test_element_reads_of_a_lazy_result_compute_it_once(read, counted):
  a = np.random.default_rng(3).standard_normal((5, 6))
  t = mt.exp(mt.asarray(a)) * 2 + 1
  t.realize()                                           # the structure compiled; reads below must add nothing
  t = mt.exp(mt.asarray(a + 1)) * 2 + 1                 # a new lazy result of that structure
  c = stats.compiles
  got = [[eval(read, {"t": t, "i": i, "j": j}) for j in range(6)] for i in range(5)]
  assert stats.compiles == c
  want = np.exp(a + 1) * 2 + 1
  want = want.astype(bool) if read.startswith("bool") else want.astype(int) if read.startswith("int") else want
  np.testing.assert_allclose(np.array(got, dtype=float), want, rtol=1e-12)


def test_large_graphs_keep_concrete_sizes():
  """A value over SYMBOLIC_MAX elements: the sizes are part of the key (kernels specialized and tuned)."""
  big = np.ones((keys.SYMBOLIC_MAX // 64 + 1, 64))
  assert realize_mod.structure([mt.asarray(big).uop + 1])[2] == ()
  assert {3, 64} <= set(realize_mod.structure([mt.asarray(big[:3]).sum(axis=0).uop])[2])
  np.testing.assert_array_equal(np.asarray(mt.asarray(big) * 3), big * 3)


def test_elementwise_graphs_over_whole_operands_have_one_size_whatever_their_rank(counted):
  """A flat key: x * 2 + y of (5, 7), (35,), (3, 4, 6) and (2, 1, 9) is one loop over n elements, one compile."""
  c = None
  for shape in [(5, 7), (35,), (3, 4, 6), (2, 1, 9), (70,)]:
    x, y = np.arange(np.prod(shape), dtype=np.float32).reshape(shape), np.ones(shape, np.float32)
    t = mt.asarray(x) * 2 + mt.exp(mt.asarray(y))
    assert realize_mod.structure([t.uop])[2] == (x.size,)
    np.testing.assert_allclose(np.asarray(t), x * 2 + np.exp(y), rtol=1e-6)
    c = stats.compiles if c is None else c
  assert stats.compiles == c


def test_structure_key_says_which_sizes_are_equal():
  k = lambda shape: realize_mod.structure([mt.asarray(np.ones(shape)).sum(axis=0).uop])[0]
  assert k((5, 7)) == k((30, 2)) != k((6, 6))
  assert k((5, 7)) != k((1, 7))                      # 1 decides structure (a broadcast, a loop that is not one)


def test_symbolic_division_by_a_size():
  """The simplifier's rules for sizes: (i*b + j) // b is i and % b is j when j < b (j a loop of b iterations),
  through products of sizes; a remainder it cannot bound stays a division."""
  a, b, c = var(0, 2, 1 << 16), var(1, 2, 1 << 16), var(2, 2, 1 << 16)
  i, j, k = range_(5, 0, var=a), range_(6, 1, var=b), range_(7, 2, var=c)
  flat = (i * b + j) * c + k
  assert simplify(flat // (b * c)) is i and simplify((flat // c) % b) is j and simplify(flat % c) is k
  assert simplify((flat // (c * b)) % a) is i
  assert simplify((i * b + j + 1) // b).op is not i.op            # j + 1 may equal b: not simplified
