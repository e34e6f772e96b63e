"""mt.grad / value_and_grad / vjp / stop_gradient: every primitive's rule against central finite differences in
float64 (minitensor.testing.check_grads: relative error <= 1e-6), over hypothesis shapes with size-0/1 axes and
broadcasting; grad of grad; pytrees; zero gradients of non-differentiable ops; errors."""
import math
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt
from minitensor.backend.uop import Ops, UOp

FEW = settings(max_examples=4)
DOMAIN = {"any": (-1.0, 1.0), "pos": (0.5, 2.0), "unit": (-0.8, 0.8), "nonzero": (0.2, 1.0)}


def rand(seed: int, shape, domain: str = "any") -> np.ndarray:
  rng = np.random.default_rng(seed)
  lo, hi = DOMAIN[domain]
  x = rng.uniform(lo, hi, shape)
  return x * rng.choice([-1.0, 1.0], shape) if domain == "nonzero" else x


def weighted(y, seed: int = 7):
  """A scalar from y: a sum with fixed random weights (so every element's gradient differs)."""
  w = np.random.default_rng(seed).uniform(0.5, 1.5, y.shape)
  return (y * mt.asarray(w)).sum()


def erf(x): return mt.Tensor(UOp(Ops.ERF, (x.uop,)))


UNARY = [(mt.exp, "any"), (mt.exp2, "any"), (mt.expm1, "any"), (mt.log, "pos"), (mt.log2, "pos"), (mt.log10, "pos"),
         (mt.log1p, "pos"), (mt.sqrt, "pos"), (mt.sin, "any"), (mt.cos, "any"), (mt.tan, "unit"), (mt.arcsin, "unit"),
         (mt.arccos, "unit"), (mt.arctan, "any"), (mt.sinh, "any"), (mt.cosh, "any"), (mt.tanh, "any"), (erf, "any"),
         (mt.abs, "nonzero"), (mt.square, "any"), (mt.reciprocal, "pos"), (mt.negative, "any"), (mt.positive, "any")]


@pytest.mark.parametrize("fn,domain", UNARY, ids=[f.__name__ for f, _ in UNARY])
@FEW
@given(shape=mtt.shapes(max_dims=3, max_side=3), seed=st.integers(0, 2 ** 16))
def test_unary_rules(fn, domain, shape, seed):
  mtt.check_grads(lambda x: weighted(fn(x)), rand(seed, shape, domain))


BINARY = [(mt.add, "any", "any"), (mt.subtract, "any", "any"), (mt.multiply, "any", "any"), (mt.divide, "any", "pos"),
          (mt.power, "pos", "any"), (mt.arctan2, "any", "pos"), (mt.maximum, "any", "any"), (mt.minimum, "any", "any"),
          (mt.remainder, "pos", "pos")]


@pytest.mark.parametrize("fn,da,db", BINARY, ids=[f.__name__ for f, _, _ in BINARY])
@FEW
@given(data=st.data(), seed=st.integers(0, 2 ** 16))
def test_binary_rules_broadcasting(fn, da, db, data, seed):
  sa = data.draw(mtt.shapes(max_dims=3, max_side=3))
  sb = data.draw(mtt.broadcastable_shapes(sa, max_dims=3, max_side=3))
  a, b = rand(seed, sa, da), rand(seed + 1, sb, db)
  if fn is mt.remainder: a, b = a * 0.5, b + 1.5        # a / b in (0, 1): away from the jumps
  mtt.check_grads(lambda x, y: weighted(fn(x, y)), a, b)


@FEW
@given(data=st.data(), seed=st.integers(0, 2 ** 16))
def test_where_rule(data, seed):
  sa = data.draw(mtt.shapes(max_dims=3, max_side=3))
  sb = data.draw(mtt.broadcastable_shapes(sa, max_dims=3, max_side=3))
  c = np.random.default_rng(seed).random(sb) > 0.5
  mtt.check_grads(lambda x, y: weighted(mt.where(c, x, y * 2)), rand(seed, sa), rand(seed + 1, sb))


def test_cast_rule_returns_the_input_dtype():
  x = np.array([0.5, -1.25, 2.0], np.float32)
  g = mt.grad(lambda t: (t.astype(np.float64) ** 2).sum())(mt.asarray(x))
  assert g.dtype == np.float32
  np.testing.assert_allclose(np.asarray(g), 2 * x, rtol=1e-6)
  mtt.check_grads(lambda t: weighted(t.astype(np.float32).astype(np.float64) * 0 + mt.sin(t)), rand(3, (4,)))


REDUCTIONS = [("sum", "any", 0), ("mean", "any", 0), ("max", "any", 1), ("min", "any", 1), ("prod", "pos", 0),
              ("var", "any", 0), ("std", "any", 1)]


@pytest.mark.parametrize("name,domain,min_side", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@FEW
@given(data=st.data(), seed=st.integers(0, 2 ** 16), keepdims=st.booleans())
def test_reduce_rules(name, domain, min_side, data, seed, keepdims):
  shape = data.draw(mtt.shapes(max_dims=3, max_side=3, min_side=min_side))
  axis = data.draw(mtt.axes(len(shape)))
  axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
  if name == "std" and math.prod(shape[a] for a in axes) < 2: return     # sqrt(0): std of one element has a kink
  mtt.check_grads(lambda x: weighted(getattr(x, name)(axis=axis, keepdims=keepdims)), rand(seed, shape, domain))


def test_reduce_max_ties_split_evenly_and_prod_with_zeros():
  g = mt.grad(lambda x: x.max(axis=1).sum())(mt.asarray(np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]])))
  np.testing.assert_array_equal(np.asarray(g), [[0, 0.5, 0.5], [1, 0, 0]])
  # broadcast copies tie with each other: their shares add up to the source's full gradient
  mtt.check_grads(lambda x: mt.broadcast_to(x, (3, 2)).max(axis=0).sum() * 1.5, rand(1, (2,)))
  one = mt.grad(lambda x: x.prod())(mt.asarray(np.array([2.0, 0.0, 3.0])))
  np.testing.assert_array_equal(np.asarray(one), [0, 6, 0])
  two = mt.grad(lambda x: x.prod(axis=1).sum())(mt.asarray(np.array([[0.0, 0.0, 3.0], [1.0, 2.0, 4.0]])))
  np.testing.assert_array_equal(np.asarray(two), [[0, 0, 0], [8, 4, 2]])


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@FEW
@given(data=st.data(), seed=st.integers(0, 2 ** 16))
def test_scan_rules(name, data, seed):
  shape = data.draw(mtt.shapes(min_dims=1, max_dims=3, max_side=3))
  axis = data.draw(st.integers(-len(shape), len(shape) - 1))
  mtt.check_grads(lambda x: weighted(getattr(mt, name)(x, axis=axis)), rand(seed, shape, "pos"))


def test_cumprod_with_zeros():
  mtt.check_grads(lambda x: weighted(mt.cumprod(x)), np.array([1.5, 0.0, 2.0, 0.0, 0.5]))


@settings(max_examples=12)
@given(data=st.data(), seed=st.integers(0, 2 ** 16))
def test_python_loop_over_a_movement_chain(data, seed):
  """Every movement op (reshape, permute, expand, shrink, pad, flip, strided slices, concatenate, stack) through a
  loop that scales each intermediate."""
  shape = data.draw(mtt.shapes(max_dims=3, max_side=3))
  chain = data.draw(mtt.movement_chains(shape, max_steps=4))

  def f(x):
    y = x
    for k, step in enumerate(chain.steps): y = step.apply(y) * (1.0 + 0.25 * k)
    return weighted(mt.sin(y))
  mtt.check_grads(f, rand(seed, shape))


def test_stack_concatenate_pad_flip_roll():
  x = rand(2, (2, 3))
  mtt.check_grads(lambda a: weighted(mt.stack([a, a * 2, mt.flip(a, 1)])), x)
  mtt.check_grads(lambda a: weighted(mt.concatenate([a, a[:, :1] ** 2], axis=1)), x)
  mtt.check_grads(lambda a: weighted(mt.pad(a, ((1, 0), (2, 1)))), x)
  mtt.check_grads(lambda a: weighted(mt.roll(a, 1, axis=1)), x)


@pytest.mark.parametrize("case", ["repeats", "two_arrays", "middle", "mask", "take", "take_along", "repeat"])
def test_gather_rules(case):
  x = rand(4, (4, 3))
  i = np.array([[0, 3, 0], [2, 0, 0]])
  f = {"repeats": lambda a: a[i], "two_arrays": lambda a: a[i, np.array([2, 1, 2])],
       "middle": lambda a: a[:, [2, 0, 2, 2]],
       "mask": lambda a: a[np.array([[True, False, True]] * 4)], "take": lambda a: mt.take(a, [5, 5, 0, 11]),
       "take_along": lambda a: mt.take_along_axis(a, np.array([[0], [2], [2], [1]]), axis=1),
       "repeat": lambda a: mt.repeat(a, [1, 0, 3], axis=1)}[case]
  mtt.check_grads(lambda a: weighted(f(a) ** 2), x)


def test_setitem_rules():
  def basic(a):
    y = a * 1.0
    y[1:, ::2] = a[:-1, ::2] ** 2
    return weighted(y)

  def advanced(a):
    y = a * 2.0
    y[np.array([0, 2])] = mt.sin(a[:2])
    return weighted(y)

  def through_views(a):
    y = a * 1.0
    v = y.T[1:]                       # a view: writes into it go back to y
    v *= a[:, :3].T                   # the in-place product reads a twice
    v[0] = mt.exp(a[0, :3])
    return weighted(y)

  mtt.check_grads(basic, rand(5, (3, 4)))
  mtt.check_grads(advanced, rand(6, (3, 4)))
  mtt.check_grads(through_views, rand(7, (3, 4)))


ZERO = {"floor": lambda x: mt.floor(x), "sign": lambda x: mt.sign(x), "rint": lambda x: mt.rint(x),
        "round": lambda x: mt.round(x, 1), "compare": lambda x: (x > 0).astype(np.float64),
        "argmax": lambda x: x.argmax(axis=0).astype(np.float64), "floor_divide": lambda x: x // 0.3,
        "isnan": lambda x: mt.isnan(x).astype(np.float64)}


@pytest.mark.parametrize("name", list(ZERO))
def test_non_differentiable_ops_give_zeros(name):
  g = mt.grad(lambda x: weighted(ZERO[name](x)))(mt.asarray(rand(1, (3, 2))))
  np.testing.assert_array_equal(np.asarray(g), np.zeros((3, 2)))
  assert g.dtype == np.float64


def test_a_function_not_reading_its_input_has_a_zero_gradient():
  g = mt.grad(lambda x, y: (y * 2).sum(), argnums=0)(mt.asarray(np.ones(3)), mt.asarray(np.ones(2)))
  np.testing.assert_array_equal(np.asarray(g), np.zeros(3))


SECOND = {"elementwise": lambda x: (mt.tanh(x) * x + mt.exp(x * 0.5)).sum(), "prod": lambda x: x.prod(),
          "var": lambda x: x.var(axis=1).sum(), "logsumexp": lambda x: mt.nn.logsumexp(x),
          "max": lambda x: (x.max(axis=0) ** 3).sum(),
          "sqrt_mean": lambda x: mt.sqrt((x * x).mean(axis=0)).sum()}


@pytest.mark.parametrize("name", list(SECOND))
def test_grad_of_grad(name):
  f = SECOND[name]
  mtt.check_grads(lambda x: weighted(mt.grad(f)(x)), rand(8, (2, 3), "pos"))


def test_third_derivative_of_an_elementwise_function():
  d3 = mt.grad(mt.grad(mt.grad(lambda x: mt.sin(x) * x)))
  x = 0.7
  assert abs(float(d3(mt.asarray(x))) - (-3 * math.sin(x) - x * math.cos(x))) < 1e-12


def test_pytrees_argnums_and_aux():
  params = {"w": [mt.asarray(rand(1, (2, 3))), mt.asarray(rand(2, (3,)))], "b": (mt.asarray(0.5),), "unused": None}
  x = mt.asarray(rand(3, (4, 2)))

  def loss(p, x):
    y = mt.tanh(x @ p["w"][0]) * p["w"][1] + p["b"][0]
    return (y ** 2).mean(), y.shape
  (v, aux), (gp, gx) = mt.value_and_grad(loss, argnums=(0, 1), has_aux=True)(params, x)
  assert aux == (4, 3) and isinstance(gp, dict) and isinstance(gp["w"], list) and isinstance(gp["b"], tuple)
  assert gp["unused"] is None
  assert gp["w"][0].shape == (2, 3) and gp["b"][0].shape == () and gx.shape == (4, 2)
  flat = lambda w0, w1, b, x: loss({"w": [w0, w1], "b": (b,)}, x)[0]
  want = mtt.check_grads(flat, params["w"][0].numpy(), params["w"][1].numpy(), params["b"][0].numpy(), x.numpy())
  for got, w in zip((gp["w"][0], gp["w"][1], gp["b"][0], gx), want):
    np.testing.assert_allclose(np.asarray(got), w, rtol=1e-12)
  assert abs(float(v) - float(flat(*params["w"], params["b"][0], x))) < 1e-15


def test_the_same_tensor_twice_and_a_tensor_equal_to_a_constant():
  x = mt.zeros(3)
  ga, gb = mt.grad(lambda a, b: (a * b + a + mt.zeros(3)).sum(), argnums=(0, 1))(x, x)
  np.testing.assert_array_equal(np.asarray(ga), np.ones(3))
  np.testing.assert_array_equal(np.asarray(gb), np.zeros(3))


def test_vjp_with_a_pytree_output():
  x = rand(1, (2, 3))
  (y, s), fn = mt.vjp(lambda a: (mt.sin(a), a.sum(axis=0)), mt.asarray(x))
  np.testing.assert_allclose(np.asarray(y), np.sin(x))
  ct = rand(2, (2, 3))
  (g,) = fn((ct, np.ones(3)))
  np.testing.assert_allclose(np.asarray(g), ct * np.cos(x) + 1, rtol=1e-13)
  with pytest.raises(ValueError, match="cotangent"): fn((ct, np.ones(2)))


def test_stop_gradient():
  x = mt.asarray(rand(1, (3,)))
  g = mt.grad(lambda a: (mt.stop_gradient(a) * a).sum())(x)
  np.testing.assert_array_equal(np.asarray(g), x.numpy())
  np.testing.assert_array_equal(np.asarray(mt.stop_gradient(x)), x.numpy())


def test_results_are_lazy_and_lazy_inputs_work():
  a = mt.asarray(rand(1, (3, 4)))
  lazy = a * 2.0
  v, g = mt.value_and_grad(lambda t: (mt.exp(t) * t).sum())(lazy)
  assert v._realized() is None and g._realized() is None and lazy._realized() is None
  x = 2 * rand(1, (3, 4))
  np.testing.assert_allclose(np.asarray(g), np.exp(x) * (1 + x), rtol=1e-13)
  np.testing.assert_allclose(float(v), (np.exp(x) * x).sum(), rtol=1e-13)


def test_float32_inputs_give_float32_gradients():
  x = mt.asarray(np.array([[0.5, -1.0], [2.0, 0.25]], np.float32))
  g = mt.grad(lambda t: mt.nn.softmax(t).max(axis=1).sum() + (t * t).sum())(x)
  assert g.dtype == np.float32


@pytest.mark.parametrize("bad", [np.arange(3), np.array([True, False]), 3, [1, 2]])
def test_integer_and_bool_inputs_raise_type_error(bad):
  with pytest.raises(TypeError, match="only float inputs"):
    mt.grad(lambda x: (x * 1.0).sum())(mt.asarray(bad) if isinstance(bad, np.ndarray) else bad)


def test_bad_outputs_and_argnums():
  x = mt.asarray(np.ones(3))
  with pytest.raises(TypeError, match=r"scalar \(0-d\) float Tensor, got a Tensor of shape \(3,\)"):
    mt.grad(lambda t: t * 2)(x)
  with pytest.raises(TypeError, match="int64"): mt.grad(lambda t: t.argmax())(x)
  with pytest.raises(ValueError, match="argnums"): mt.grad(lambda t: t.sum(), argnums=1)(x)
  with pytest.raises(TypeError, match="has_aux"): mt.grad(lambda t: t.sum(), has_aux=True)(x)


def test_reading_values_of_a_lazy_input_raises_a_clear_error():
  lazy = mt.asarray(np.array([1.0, 2.0])) * 2
  with pytest.raises(TypeError, match="lazy"): mt.grad(lambda t: (t * float(t.sum())).sum())(lazy)
  g = mt.grad(lambda t: (t * float(t.sum())).sum())(lazy.realize())      # realized: f may read its values
  np.testing.assert_array_equal(np.asarray(g), [6.0, 6.0])
