"""lowerings: every registry entry takes the kernels it is for and gives NumPy's values; a Program says what the
compiler must support, the actions applied and how it renders; realize, explain and plans read only the Program."""
import numpy as np
import pytest
import minitensor as mt
from minitensor import nn
from minitensor.backend import lowerings, tiers
from minitensor.backend.realize import Plan, scheduled
from minitensor.backend.uop import Ops, buf


def kinds(*ts) -> list[str]:
  return [k.program.kind for k in scheduled([t.uop for t in ts])[0].kernels]


def rand(*shape, dtype=np.float32, seed=0):
  return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_registry_order_is_the_documented_one():
  assert [e.name for e in lowerings.LOWERINGS] == ["attention", "flat", "scan", "gemm", "loops"]
  assert all(f"    {e.name}" in lowerings.__doc__ for e in lowerings.LOWERINGS)


def test_attention_entry():
  q, k, v = rand(2, 64, 16), rand(2, 48, 16, seed=1), rand(2, 48, 8, seed=2)
  out = nn.scaled_dot_product_attention(mt.asarray(q), mt.asarray(k), mt.asarray(v))
  assert "attention" in kinds(out)
  (p,) = [k.program for k in scheduled([out.uop])[0].kernels if k.program.kind == "attention"]
  assert "vector" in p.needs and p.work == p.plan.work > 0 and "void k0(" in p.render("k0")
  s = q @ k.transpose(0, 2, 1) / np.sqrt(16)
  e = np.exp(s - s.max(-1, keepdims=True))
  np.testing.assert_allclose(out.numpy(), (e / e.sum(-1, keepdims=True)) @ v, rtol=1e-4, atol=1e-5)


def test_flat_entry_large_and_symbolic():
  a, b = rand(300, 300), rand(300, 300, seed=1)
  t = mt.asarray(a) * 2 + mt.asarray(b)
  (k,) = scheduled([t.uop])[0].kernels
  assert k.program.kind == "flat" and k.program.sizes == (a.size,) and k.program.needs == frozenset()
  np.testing.assert_allclose(t.numpy(), a * 2 + b, rtol=1e-6)
  small = mt.asarray(a[:10, :10]) * 2 + mt.asarray(b[:10, :10])       # a flat key: n is a VAR of the kernel
  assert kinds(small) == ["flat"]
  np.testing.assert_allclose(small.numpy(), a[:10, :10] * 2 + b[:10, :10], rtol=1e-6)


def test_scan_entry():
  a = rand(40, 50)
  t = mt.cumsum(mt.asarray(a) * 2, axis=1)
  assert kinds(t) == ["scan"]
  np.testing.assert_allclose(t.numpy(), np.cumsum(a * 2, axis=1), rtol=1e-5, atol=1e-5)


def test_gemm_entry_and_its_epilogue():
  a, b = rand(256, 200), rand(200, 192, seed=1)
  t = mt.maximum(mt.asarray(a) @ mt.asarray(b) + 1, 0)
  assert kinds(t) == ["gemm", "flat"]                     # the epilogue is cut off the contraction
  (g, _) = scheduled([t.uop])[0].kernels
  assert g.program.needs == {"vector"} and g.program.plan.sizes == (1, 256, 192, 200)
  np.testing.assert_allclose(t.numpy(), np.maximum(a @ b + 1, 0), rtol=1e-4, atol=1e-4)


def test_loops_entry_records_its_actions():
  a = rand(512, 1024)
  t = mt.asarray(a).sum(axis=1)
  (k,) = scheduled([t.uop])[0].kernels
  assert k.program.kind == "loops" and k.program.opts               # the heuristic's actions, as applied
  assert all(repr(o) in str(mt.explain(t)) for o in k.program.opts)   # and explain prints them
  np.testing.assert_allclose(t.numpy(), a.sum(axis=1), rtol=1e-4)


@pytest.mark.parametrize("dtype, needs", [(np.complex64, {"complex"}), (np.float16, {"float16"}),
                                          (np.float64, set())])
def test_needs_come_from_the_program(dtype, needs):
  x = mt.asarray(np.ones((5, 7), dtype))
  (k,) = scheduled([(x * x + x).sum(axis=1).uop])[0].kernels
  assert k.program.needs == needs and tiers.tcc_lacks(k.program.needs) == bool(needs)


def test_plans_keep_what_the_kernels_need():
  p = Plan("src", 0, (), (), (), ("complex",))
  assert Plan.from_json(p.to_json()) == p
  with pytest.raises(ValueError): Plan.from_json({**p.to_json(), "needs": ["quantum"]})
  with pytest.raises(ValueError): Plan.from_json({k: v for k, v in p.to_json().items() if k != "needs"})


def test_lower_kernel_takes_every_kernel():
  x = buf(0, 12).reshape((3, 4))
  low = lowerings.lower_kernel(lowerings.KernelBody(x.reduce(Ops.ADD, 1), buf(1, 3), optimize=False))
  assert low.program.kind == "loops" and low.slots == (0, 1) and low.cut is None and low.summary is not None
