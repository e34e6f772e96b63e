"""scan: the SCAN type rule, its kernel (one per scan, sequential, O(n) work) and its values against NumPy's
sequential accumulate, bit for bit."""
import numpy as np
import pytest
from minitensor.backend.debug import run_c
from minitensor.backend.dtype import dtypes
from minitensor.backend.kernelize import schedule
from minitensor.backend.linearize import iterations
from minitensor.backend.rangeify import Ctx
from minitensor.backend.render_c import render_function
from minitensor.backend.scan import lower_scan
from minitensor.backend.uir import parse, print_uir
from minitensor.backend.uop import Ops, UOpError, buf, prod

NP_ACC = {Ops.ADD: np.add, Ops.MUL: np.multiply, Ops.MAX: np.maximum, Ops.MIN: np.minimum}


def run_scan(a: np.ndarray, op: Ops, axis: int) -> np.ndarray:
  d = dtypes.from_numpy(a.dtype)
  x = buf(0, a.size, d).reshape(a.shape)
  out = np.zeros(a.size, a.dtype)
  run_c(lower_scan(x.scan(op, axis), buf(1, a.size, d), Ctx()), {0: np.ascontiguousarray(a).reshape(-1), 1: out})
  return out.reshape(a.shape)


def test_type_rule():
  x = buf(0, 6, dtypes.float32).reshape((2, 3))
  assert (x.scan(Ops.ADD, 1).shape, x.scan(Ops.ADD, 1).dtype) == ((2, 3), dtypes.float32)
  for bad in ((Ops.ADD, 2), (Ops.ADD, -1), (Ops.FDIV, 0), (Ops.ADD, True + 5)):
    with pytest.raises(UOpError, match="SCAN"): x.scan(*bad)
  b = buf(0, 6, dtypes.bool)
  with pytest.raises(UOpError, match="bool"): b.scan(Ops.ADD, 0)
  assert b.scan(Ops.MAX, 0).dtype is dtypes.bool
  u = (x * 2.0).scan(Ops.MUL, 1)
  assert "scan %4 : op=mul axis=1" in print_uir(u) and parse(print_uir(u)) is u


@pytest.mark.parametrize("op", [Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN])
@pytest.mark.parametrize("shape, axis", [((7,), 0), ((4, 5), 0), ((4, 5), 1), ((3, 1, 4), 0), ((3, 4, 1), 1),
                                         ((1, 6), 0)])
def test_values_bit_for_bit(op, shape, axis):
  rng = np.random.default_rng(prod(shape) + axis)
  a = rng.choice(np.array([0.5, -2.0, 3e38, -3e38, -0.0, np.inf, np.nan, 1.25], np.float32), shape)
  with np.errstate(all="ignore"): want = NP_ACC[op].accumulate(a, axis=axis)
  got = run_scan(a, op, axis)
  np.testing.assert_array_equal(got, want)
  assert np.array_equal(np.signbit(got)[~np.isnan(want)], np.signbit(want)[~np.isnan(want)])


def test_integers_wrap():
  a = np.array([[100, 100, -128], [7, -9, 127]], np.int8)
  for op in (Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN):
    for axis in (0, 1):
      np.testing.assert_array_equal(run_scan(a, op, axis), NP_ACC[op].accumulate(a, axis=axis, dtype=a.dtype))


def test_loop_structure():
  """Last axis: the running value is an accumulator (no reload); an earlier axis: the previous row is read back
  inside the innermost loop, which runs over the later axes (independent chains, vectorizable)."""
  x = buf(0, 64 * 32, dtypes.float32).reshape((64, 32))
  last = render_function(lower_scan(x.scan(Ops.ADD, 1), buf(1, 64 * 32, dtypes.float32), Ctx()))
  assert "acc0 = -0.0f;" in last and "data1[" not in last.split("=", 1)[1].split("data1[", 1)[1].split(";")[0]
  first = render_function(lower_scan(x.scan(Ops.ADD, 0), buf(1, 64 * 32, dtypes.float32), Ctx()))
  inner = first[first.index("ridx1 < 32"):]
  assert "acc" not in first and "= data1[" in inner


def test_one_kernel_linear_work():
  """A scan is a kernel of its own with n iterations (the work of NumPy's sequential accumulate), its source fused."""
  x = buf(0, 4096, dtypes.float32).reshape((64, 64))
  s = schedule([(x * 2.0).scan(Ops.ADD, 0) + 1.0], 1)
  assert len(s.kernels) == 2 and s.kernels[0].ast.op is Ops.SCAN
  assert iterations(s.kernels[0].sink) <= 4096 + 64
