"""Composite ops (concat, PAD, FLIP built from primitives) and the primitive PAD and FLIP, lowered, run and
compared with NumPy; the loads they generate stay inside their buffers (Pitfall 6)."""
import re
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from minitensor.backend import composite
from minitensor.backend.composite import anti_eye, concat, concat2, flip_axis, flip_stack, move_axis, pad, pad_axis
from minitensor.backend.debug import run_shaped
from minitensor.backend.dtype import dtypes
from minitensor.backend.rangeify import Ctx, lower
from minitensor.backend.render_c import render_function
from minitensor.backend.uop import Ops, UOp, UOpError, buf, prod


def lowered(root: UOp, n_inputs: int) -> UOp:
  return lower(root, buf(n_inputs, max(1, prod(root.shape)), root.dtype), Ctx())


def c_source(root: UOp, n_inputs: int) -> str: return render_function(lowered(root, n_inputs))


def assert_loads_in_bounds(prog: UOp) -> None:
  for u in prog.toposort():
    if u.op is not Ops.INDEX: continue
    b = u.src[0]
    while b.op is Ops.AFTER: b = b.src[0]
    if b.op is Ops.BUFFER:
      i = u.src[1]
      assert 0 <= i.vmin and i.vmax < b.arg.shape[0], f"slot {b.arg.slot}: [{i.vmin}, {i.vmax}] of {b.arg.shape[0]}"


def tensor(shape, dtype=dtypes.float32, slot: int = 0) -> UOp:
  n = prod(shape)
  return buf(slot, max(n, 1), dtype).shrink(((0, n),)).reshape(shape)


def data(shape, dtype=dtypes.float32, seed: int = 0) -> np.ndarray:
  rng = np.random.default_rng(seed)
  if dtype is dtypes.bool: return rng.integers(0, 2, shape).astype(bool)
  return rng.integers(0 if dtype.is_unsigned else -9, 10, shape).astype(dtype.np)


def run(root: UOp, *xs: np.ndarray) -> np.ndarray:
  return run_shaped(root, [np.resize(x.ravel(), max(1, x.size)) for x in xs])


def same_bits(a: np.ndarray, b: np.ndarray) -> None:
  """Equal including NaN payload positions and the sign of zero."""
  assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
  np.testing.assert_array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


SPECIAL = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -2.0, 3.0, np.nan, 7.0, -0.0, 5.5], np.float32)


# ---------------------------------------------------------------- the seed's tests
def test_pad_flip_composites():
  x = data((3, 4), seed=1)
  u = tensor((3, 4))
  np.testing.assert_array_equal(run(pad(u, ((1, 5), (2, 0))), x), np.pad(x, ((1, 5), (2, 0))))
  np.testing.assert_array_equal(run(flip_axis(u, 1), x), x[:, ::-1])
  np.testing.assert_array_equal(run(flip_axis(u, 0), x), x[::-1])
  np.testing.assert_array_equal(run(anti_eye(3, u.dtype)), np.eye(3, dtype=np.float32)[::-1])


@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.int32], ids=lambda d: d.name)
def test_anti_eye(n, dtype):
  m = anti_eye(n, dtype)
  assert m.shape == (n, n) and {u.op for u in m.toposort()} <= {Ops.CONST, Ops.RESHAPE, Ops.EXPAND, Ops.SHRINK,
                                                                  Ops.STACK, Ops.PERMUTE}
  np.testing.assert_array_equal(run(m), np.eye(n, dtype=dtype.np)[::-1])


def test_pad1d_single_unconditional_load_in_bounds():
  # the composite PAD evaluates the STACK branch speculatively: one load, made safe by its own `% 3`
  v = buf(0, 3)
  g = pad_axis(v, 0, 1, 2)
  x = np.array([1.5, -2.0, 3.0], np.float32)
  np.testing.assert_array_equal(run(g, x), np.pad(x, (1, 2)))
  src = c_source(g, 1)
  assert len(re.findall(r"data0\[", src)) == 1, src
  assert_loads_in_bounds(lowered(g, 1))


def test_flip3_and_exercise5_flip_stack():
  v = buf(0, 3)
  x = np.array([1.0, 2.0, 3.0], np.float32)
  for g in (flip_axis(v, 0), flip_stack(v, 0), v.flip((0,))):
    np.testing.assert_array_equal(run(g, x), x[::-1])
  # flip_axis is a reduction against the anti-identity; flip_stack selects among n loads; the primitive is one load
  assert len(re.findall(r"acc\d+ = 0\.0f;", c_source(flip_axis(v, 0), 1))) == 1
  assert len(re.findall(r"data0\[", c_source(flip_stack(v, 0), 1))) == 3
  src = c_source(v.flip((0,)), 1)
  assert len(re.findall(r"data0\[", src)) == 1 and "acc" not in src, src


def test_primitive_pad_is_one_guarded_load_exercise9():
  x = data((3, 4), seed=2)
  u = tensor((3, 4))
  arg = ((1, 1), (0, 2))
  prim, comp = u.pad(arg), pad(u, arg)
  np.testing.assert_array_equal(run(prim, x), np.pad(x, arg))
  np.testing.assert_array_equal(run(comp, x), np.pad(x, arg))
  ps, cs = c_source(prim, 1), c_source(comp, 1)
  assert len(re.findall(r"data0\[", ps)) == 1 and "/" not in ps and "%" not in ps, ps
  assert "%" in cs, cs                       # the composite keeps the // and % of its doubled shapes
  assert_loads_in_bounds(lowered(prim, 1))
  assert_loads_in_bounds(lowered(comp, 1))


def test_the_library_uses_the_primitives():
  u = tensor((3, 4))
  assert composite.pad_guarded(u, ((1, 0), (0, 1))).op is Ops.PAD
  assert composite.flip(u, (1,)).op is Ops.FLIP


# ---------------------------------------------------------------- concat and move_axis
@pytest.mark.parametrize("shape,axis,k", [((3,), 0, 2), ((2, 3), 0, 3), ((2, 3), 1, 2), ((2, 3, 4), 2, 3),
                                          ((2, 1, 4), 1, 4)])
def test_concat(shape, axis, k):
  xs = [data(shape, seed=s) for s in range(k)]
  us = [tensor(shape, slot=s) for s in range(k)]
  np.testing.assert_array_equal(run_shaped(concat(us, axis), [x.ravel() for x in xs]), np.concatenate(xs, axis))
  if k == 2:
    np.testing.assert_array_equal(run_shaped(concat2(*us, axis), [x.ravel() for x in xs]), np.concatenate(xs, axis))


@pytest.mark.parametrize("src,dst", [(0, 2), (2, 0), (1, 3), (3, 1), (0, 3), (2, 2)])
def test_move_axis(src, dst):
  x = data((2, 3, 4, 5), seed=3)
  np.testing.assert_array_equal(run(move_axis(tensor((2, 3, 4, 5)), src, dst), x), np.moveaxis(x, src, dst))


# ---------------------------------------------------------------- PAD
@pytest.mark.parametrize("shape,arg", [
  ((3,), ((0, 0),)), ((3,), ((7, 0),)), ((3,), ((0, 13),)), ((1,), ((5, 9),)), ((2, 3), ((4, 1), (0, 8))),
  ((3, 4), ((1, 5), (2, 0))), ((2, 2, 2), ((3, 3), (0, 0), (5, 1))),
])
def test_pad_wider_than_axis(shape, arg):
  # wider than the axis: the composite pads in doubling rounds; the primitive clamps
  x = data(shape, seed=4)
  u = tensor(shape)
  for g in (pad(u, arg), u.pad(arg)):
    np.testing.assert_array_equal(run(g, x), np.pad(x, arg))
    assert_loads_in_bounds(lowered(g, 1))


@pytest.mark.parametrize("value", [0, -3.5, float("-inf"), float("nan")])
def test_primitive_pad_value(value):
  x = data((3, 4), seed=5)
  arg = ((2, 1), (1, 3))
  same_bits(run(tensor((3, 4)).pad(arg, value), x), np.pad(x, arg, constant_values=value))


def test_pad_keeps_special_values():
  x = SPECIAL.reshape(3, 4)
  arg = ((1, 4), (2, 1))
  same_bits(run(pad(tensor((3, 4)), arg), x), np.pad(x, arg))
  same_bits(run(tensor((3, 4)).pad(arg), x), np.pad(x, arg))


@pytest.mark.parametrize("dtype", [dtypes.int32, dtypes.uint8, dtypes.bool, dtypes.float64, dtypes.int64],
                         ids=lambda d: d.name)
def test_pad_dtypes(dtype):
  x = data((2, 3), dtype, 6)
  arg = ((1, 2), (3, 0))
  u = tensor((2, 3), dtype)
  np.testing.assert_array_equal(run(pad(u, arg), x), np.pad(x, arg))
  np.testing.assert_array_equal(run(u.pad(arg, 1), x), np.pad(x, arg, constant_values=1))


@pytest.mark.parametrize("shape,arg", [((0,), ((2, 3),)), ((2, 0), ((1, 1), (2, 0))), ((0, 3), ((1, 0), (0, 2)))])
def test_pad_empty_axis(shape, arg):
  x = np.zeros(shape, np.float32)
  u = tensor(shape)
  np.testing.assert_array_equal(run(pad(u, arg), x), np.pad(x, arg))
  np.testing.assert_array_equal(run(u.pad(arg, 2.5), x), np.pad(x, arg, constant_values=2.5))


def test_pad_of_max_pool_border():
  # the padding value reaches a reduction: a -inf border never wins a max (a 3x3 max filter with "same" size)
  x = data((5, 6), seed=7)
  p = tensor((5, 6)).pad(((1, 1), (1, 1)), float("-inf"))                       # (7, 8)
  win = UOp(Ops.STACK, tuple(p.shrink(((i, i + 5), (j, j + 6))) for i in range(3) for j in range(3)))
  out = run(win.permute((1, 2, 0)).reduce(Ops.MAX, 1), x)
  xp = np.pad(x, 1, constant_values=-np.inf)
  ref = np.max([xp[i:i + 5, j:j + 6] for i in range(3) for j in range(3)], axis=0)
  np.testing.assert_array_equal(out, ref)


@st.composite
def pad_cases(draw):
  shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
  arg = tuple((draw(st.integers(0, 7)), draw(st.integers(0, 7))) for _ in shape)
  return shape, arg


@settings(max_examples=40)
@given(pad_cases(), st.sampled_from([dtypes.float32, dtypes.int32]))
def test_random_pads(case, dtype):
  shape, arg = case
  x = data(shape, dtype, len(shape))
  u = tensor(shape, dtype)
  for g in (pad(u, arg), u.pad(arg, 3)):
    assert_loads_in_bounds(lowered(g, 1))
  out = run_shaped(UOp(Ops.STACK, (pad(u, arg), u.pad(arg, 3))), [x.ravel()])    # one kernel for both
  np.testing.assert_array_equal(out[0], np.pad(x, arg))
  np.testing.assert_array_equal(out[1], np.pad(x, arg, constant_values=3))


# ---------------------------------------------------------------- FLIP
@st.composite
def flip_cases(draw):
  shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
  axis = draw(st.integers(0, len(shape) - 1))
  axes = tuple(sorted(draw(st.sets(st.integers(0, len(shape) - 1)))))
  return shape, axis, axes


@settings(max_examples=40)
@given(flip_cases(), st.sampled_from([dtypes.float32, dtypes.int32]))
def test_random_flips(case, dtype):
  shape, axis, axes = case
  x = data(shape, dtype, len(shape) + axis)
  u = tensor(shape, dtype)
  gs = (flip_axis(u, axis), flip_stack(u, axis), u.flip((axis,)), u.flip(axes))
  for g in gs: assert_loads_in_bounds(lowered(g, 1))
  out = run_shaped(UOp(Ops.STACK, gs), [x.ravel()])                               # one kernel for all four
  for k in range(3): np.testing.assert_array_equal(out[k], np.flip(x, axis))
  np.testing.assert_array_equal(out[3], np.flip(x, axes))


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1)])
def test_flip_exact_for_special_values(axes):
  # flip_stack and the primitive select values; flip_axis multiplies by 0/1 and sums, so only finite values
  # survive it (inf * 0 is nan): it is tested on finite data above
  x = SPECIAL.reshape(3, 4)
  u = tensor((3, 4))
  same_bits(run(u.flip(axes), x), np.flip(x, axes))
  g = u
  for a in axes: g = flip_stack(g, a)
  same_bits(run(g, x), np.flip(x, axes))


def test_flip_of_size1_and_empty_axes():
  u = tensor((1, 4))
  assert flip_axis(u, 0) is u and flip_stack(u, 0) is u and u.flip((0,)) is u
  x = data((1, 4), seed=8)
  np.testing.assert_array_equal(run(u.flip((0, 1)), x), np.flip(x, (0, 1)))
  e = tensor((0, 3))
  assert run(e.flip((1,)), np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_flip_composites_in_a_chain():
  # flips feed movement ops and reductions like any other value: a reversed cumulative window sum
  x = data((4, 6), seed=9)
  u = tensor((4, 6))
  y = flip_axis(u, 1).permute((1, 0))                                            # (6, 4)
  z = flip_stack(y, 0).reshape((3, 2, 4)).reduce(Ops.ADD, 2)                     # (3,)
  ref = np.flip(np.flip(x, 1).T, 0).reshape(3, 2, 4).sum((1, 2))
  np.testing.assert_array_equal(run(z, x), ref)


def test_flip_type_errors():
  u = tensor((3, 4))
  with pytest.raises(UOpError, match=r"^FLIP \(0, 0\) of \(3, 4\)$"): u.flip((0, 0))
  with pytest.raises(UOpError, match=r"^FLIP \(-1,\) of \(3, 4\)$"): u.flip((-1,))
