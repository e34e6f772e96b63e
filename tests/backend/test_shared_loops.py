"""Reductions that share a loop (reduce_rule._shared): independent reduces over the same reduced shape at the same
output index run in one loop with an accumulator each, adding their terms in the same order as loops of their own
(the same bits); a reduce that reads another's value never joins its loop; what is materialized does not change."""
from __future__ import annotations
import re
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend import lowerings
from minitensor.backend.ranges import Ctx


@pytest.fixture
def unshared(cache, monkeypatch):
  """value(build): np.asarray(build()) from programs lowered without shared loops (checked mode, whose programs are
  their own, in a fresh cache: the same arithmetic as unchecked mode's): the bits that sharing must keep."""
  def value(build):
    with monkeypatch.context() as m:
      m.setenv("MINITENSOR_CHECK", "1")
      m.setattr(lowerings, "Ctx", lambda **kw: Ctx(**{**kw, "share": False}))
      return np.asarray(build())
  return value


def _reduce_loops(t: mt.Tensor) -> list[int]:
  """Per kernel of t's schedule, the loops that update a scalar accumulator (a `for` whose body starts by reading
  accN)."""
  return [len(re.findall(r"for \([^\n]*\) \{\n\s*\w+ \w+ = acc\d+;", k.source)) for k in mt.explain(t).kernels]


def _forces(xp, pos, mass):
  x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
  dx, dy, dz = x.T - x, y.T - y, z.T - z
  r = xp.where(dx ** 2 + dy ** 2 + dz ** 2 + 0.01 > 0, dx ** 2 + dy ** 2 + dz ** 2 + 0.01, 1.0) ** -1.5
  return xp.hstack(((dx * r) @ mass, (dy * r) @ mass, (dz * r) @ mass)), (dx * r) @ mass


@pytest.mark.parametrize("n", [40, 200])          # (symbolic sizes: concrete ones run these reduces in lanes)
def test_three_matrix_vector_products_run_in_one_loop_with_the_same_bits(n, unshared):
  """hstack of three (n, n) @ (n, 1) products over one staged value: one reduce loop, three accumulators, the bits
  of the lowering without shared loops, and the staged power is still staged (2 kernels)."""
  rng = np.random.default_rng(n)
  pos, mass = rng.standard_normal((n, 3)), np.abs(rng.standard_normal((n, 1))) + 0.5
  t, _ = _forces(mt, mt.asarray(pos), mt.asarray(mass))
  assert _reduce_loops(t) == [0, 1], str(mt.explain(t))
  got = np.asarray(t)
  np.testing.assert_array_equal(got, unshared(lambda: _forces(mt, mt.asarray(pos.copy()), mt.asarray(mass))[0]))
  np.testing.assert_allclose(got, _forces(np, pos, mass)[0], rtol=1e-11)


def test_reduces_in_lanes_share_their_lane_loops_at_concrete_sizes():
  """At concrete sizes (above SYMBOLIC_MAX) the products run in lanes that divide the axis: the three share one lane
  loop (one `omp simd` loop updating three lane arrays), NumPy's values."""
  rng = np.random.default_rng(3)
  pos, mass = rng.standard_normal((300, 3)), np.abs(rng.standard_normal((300, 1))) + 0.5
  t, _ = _forces(mt, mt.asarray(pos), mt.asarray(mass))
  src = mt.explain(t).kernels[-1].source
  assert len(re.findall(r"for \([^\n]*\) \{\n\s*\w+ \w+ = acc\d+\[", src)) == 1, src
  assert len(re.findall(r"acc\d+\[\w+\] = fma", src)) == 3, src
  np.testing.assert_allclose(np.asarray(t), _forces(np, pos, mass)[0], rtol=1e-11)


def test_products_in_lanes_that_read_each_other_at_a_concrete_size():
  """p1 reads p0, p2 reads neither, at (264, 264) (lanes, no tail): two lane loops for the three (p0, read twice,
  may be a kernel of its own: then p1 and p2 share one), NumPy's values. (Realized alone, a product at a concrete
  size may be a GEMM kernel, whose sums are in another order: no bitwise comparison here.)"""
  rng = np.random.default_rng(6)
  x, w = rng.standard_normal((264, 264)), rng.standard_normal((264, 1))
  def products(xp, x, w):
    p0 = x @ w
    return [p0, (x * p0.T) @ w, (x * x) @ w]
  t = mt.hstack(products(mt, mt.asarray(x), mt.asarray(w)))
  srcs = [k.source for k in mt.explain(t).kernels]
  assert sum(len(re.findall(r"for \([^\n]*\) \{\n\s*\w+ \w+ = acc\d+\[", s)) for s in srcs) == 2, srcs
  np.testing.assert_allclose(np.asarray(t), np.hstack(products(np, x, w)), rtol=1e-10, atol=1e-10)


def test_a_float32_sum_and_a_lane_tail_keep_loops_of_their_own():
  """Row sums of float32 (float32 blocks, loops of their own) and of a length no lane count divides (a tail per
  reduce), which _share_key leaves unshared: the values against NumPy in float64."""
  rng = np.random.default_rng(4)
  for x, rtol in ((rng.standard_normal((300, 400)).astype(np.float32), 1e-5), (rng.standard_normal((300, 301)), 1e-12)):
    t = mt.asarray(x)
    out = mt.hstack((t.sum(axis=1, keepdims=True), (t * t).sum(axis=1, keepdims=True)))
    w = np.hstack((x.astype(np.float64).sum(1, keepdims=True), (x.astype(np.float64) ** 2).sum(1, keepdims=True)))
    np.testing.assert_allclose(np.asarray(out), w, rtol=rtol)


def test_a_reduce_that_reads_another_reduce_keeps_its_own_loop():
  """m2 = (a * m1) @ w reads m1 = a @ v: its loop stays apart, while m3 = (a * a) @ w, which reads neither, joins
  m1's (2 accumulator loops where each reduce had its own: 3). Values against NumPy."""
  rng = np.random.default_rng(1)
  a, v, w = rng.standard_normal((37, 37)), rng.standard_normal((37, 1)), rng.standard_normal((37, 1))
  def f(xp, a, v, w):
    m1 = a @ v
    return xp.hstack((m1, (a * m1.T) @ w, (a * a) @ w))
  out = f(mt, *map(mt.asarray, (a, v, w)))
  assert sum(_reduce_loops(out)) == 2, str(mt.explain(out))
  np.testing.assert_allclose(np.asarray(out), f(np, a, v, w), rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(2, 60), reads=st.lists(st.integers(-1, 3), min_size=2, max_size=5), seed=st.integers(0, 2 ** 16))
def test_matrix_vector_products_that_read_each_other_or_not(unshared, n, reads, seed):
  """Products p_i = (x_i * p_j.T) @ w_i, where p_j is an earlier product (reads[i] = j) or none (-1), all in one
  output at symbolic sizes: NumPy's values, the bits of the lowering without shared loops, and fewer accumulator
  loops than products exactly when two products read neither each other."""
  rng = np.random.default_rng(seed)
  xs = [rng.standard_normal((n, n)) for _ in reads]
  ws = [rng.standard_normal((n, 1)) for _ in reads]
  deps = [j if 0 <= j < i else -1 for i, j in enumerate(reads)]
  def products(xp, xs, ws):
    ps = []
    for x, w, j in zip(xs, ws, deps): ps.append(((x * ps[j].T) if j >= 0 else x) @ w)
    return xp.hstack(ps)
  out = products(mt, [mt.asarray(x) for x in xs], [mt.asarray(w) for w in ws])
  loops = sum(_reduce_loops(out))
  got = np.asarray(out)
  np.testing.assert_allclose(got, products(np, xs, ws), rtol=1e-10, atol=1e-10)
  np.testing.assert_array_equal(got, unshared(lambda: products(mt, [mt.asarray(x.copy()) for x in xs],
                                                                [mt.asarray(w) for w in ws])))
  below = [{i} for i in range(len(deps))]
  for i, j in enumerate(deps):
    if j >= 0: below[i] |= below[j]
  independent = any(i not in below[k] and k not in below[i] for i in range(len(deps)) for k in range(i))
  assert (loops < len(deps)) == independent


def test_shared_loops_are_counted_and_can_be_turned_off():
  """Ctx.shares says whether a lowering shares a loop; share=False lowers each reduce in loops of its own."""
  assert Ctx().share and not Ctx().shares() and not Ctx(share=False).share
