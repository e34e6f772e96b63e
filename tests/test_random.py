"""minitensor.random against numpy.random: the same streams, values and dtypes for the same seeds and calls."""
import numpy as np
import pytest
import minitensor as mt

SEEDS = (0, 1, 7, 42, 2**32 - 1)
P = np.array([0.1, 0.2, 0.3, 0.4])
COV = np.array([[2.0, 0.3], [0.3, 1.0]])
# (name, args, kwargs) of numpy.random's legacy functions, each drawn with and without a size
LEGACY = [("random", (), {}), ("random_sample", ((2, 3),), {}), ("sample", (4,), {}), ("ranf", (), {}),
          ("rand", (3, 2), {}), ("rand", (), {}), ("randn", (4,), {}), ("randint", (10,), {}),
          ("randint", (-5, 5, (2, 3)), {}), ("randint", (0, 2, 7), {"dtype": np.uint8}),
          ("randint", (0, 100), {"size": 3, "dtype": np.int32}), ("uniform", (-10, 10, 10), {}), ("uniform", (), {}),
          ("normal", (1.0, 2.0, (3, 2)), {}), ("standard_normal", (5,), {}), ("choice", (5, 3), {}),
          ("choice", (10, 4), {"replace": False}), ("choice", ([3.0, 4.0, 5.0, 6.0], 6), {"p": P}),
          ("choice", (4, 2, False, P), {}), ("binomial", (10, 0.3, 5), {}), ("poisson", (3.0, (2, 2)), {}),
          ("poisson", (), {}), ("exponential", (2.0, 4), {}), ("beta", (2.0, 3.0, 3), {}),
          ("gamma", (2.0, 1.5, 3), {}), ("standard_gamma", (0.5, 3), {}), ("geometric", (0.3, 4), {}),
          ("negative_binomial", (3, 0.5, 4), {}), ("hypergeometric", (5, 6, 4, 3), {}), ("chisquare", (3, 2), {}),
          ("standard_t", (4, 3), {}), ("standard_cauchy", (3,), {}), ("standard_exponential", (3,), {}),
          ("f", (3, 4, 2), {}), ("lognormal", (0, 1, 3), {}), ("laplace", (0, 1, 3), {}), ("logistic", (0, 1, 3), {}),
          ("gumbel", (0, 1, 3), {}), ("triangular", (0, 1, 3, 3), {}), ("weibull", (2, 3), {}), ("pareto", (2, 3), {}),
          ("rayleigh", (1, 3), {}), ("vonmises", (0, 1, 3), {}), ("wald", (1, 2, 3), {}), ("zipf", (2, 3), {}),
          ("power", (2, 3), {}), ("logseries", (0.5, 3), {}), ("multinomial", (10, P, 2), {}),
          ("dirichlet", ([1.0, 2.0, 3.0], 2), {}), ("multivariate_normal", ([0.0, 1.0], COV, 3), {})]
GENERATOR = [("random", (), {}), ("random", ((2, 3),), {}), ("random", (4,), {"dtype": np.float32}),
             ("integers", (10,), {}), ("integers", (-3, 3, (2, 2)), {"endpoint": True}),
             ("integers", (0, 255, 5), {"dtype": np.uint8}), ("normal", (1.0, 2.0, 3), {}),
             ("standard_normal", (3,), {}), ("standard_normal", (3,), {"dtype": np.float32}),
             ("uniform", (-1, 1, (2, 2)), {}), ("choice", (10, 3), {}), ("choice", (10, 3), {"replace": False}),
             ("choice", ([1.5, 2.5, 3.5, 4.5], 5), {"p": P}), ("choice", (np.arange(12).reshape(4, 3), 2), {"axis": 1}),
             ("exponential", (2.0, 3), {}), ("standard_exponential", (3,), {}), ("poisson", (4.0, 3), {}),
             ("binomial", (5, 0.5, 3), {}), ("beta", (0.5, 0.5, 3), {}), ("gamma", (3.0, 2.0, 3), {}),
             ("standard_gamma", (2.0, 3), {}), ("negative_binomial", (3, 0.5, 3), {}), ("geometric", (0.2, 3), {}),
             ("hypergeometric", (5, 5, 3, 3), {}), ("chisquare", (2, 3), {}), ("standard_t", (3, 3), {}),
             ("standard_cauchy", (3,), {}), ("f", (2, 3, 3), {}), ("lognormal", (0, 1, 3), {}),
             ("laplace", (0, 1, 3), {}), ("logistic", (0, 1, 3), {}), ("gumbel", (0, 1, 3), {}),
             ("triangular", (0, 1, 2, 3), {}), ("weibull", (1.5, 3), {}), ("pareto", (3, 3), {}),
             ("rayleigh", (2, 3), {}), ("multinomial", (8, P, 2), {}), ("dirichlet", ([1.0, 1.0], 3), {}),
             ("multivariate_normal", ([0.0, 0.0], COV, 4), {}),
             ("multivariate_normal", ([0.0, 0.0], COV, 2), {"method": "cholesky"})]


def same(got, want):
  assert isinstance(got, mt.Tensor), type(got)
  w = np.asarray(want)
  assert (got.dtype, got.shape) == (w.dtype, w.shape)
  np.testing.assert_array_equal(np.asarray(got), w)


def _calls(table, seed):
  """The table's calls in an order that depends on the seed (mixed call orders)."""
  order = np.random.default_rng(seed).permutation(len(table))
  return [table[i] for i in order]


@pytest.mark.parametrize("seed", SEEDS)
def test_legacy_functions_follow_numpys_stream(seed):
  np.random.seed(seed)
  want = [getattr(np.random, n)(*a, **k) for n, a, k in _calls(LEGACY, seed)]
  mt.random.seed(seed)
  for (n, a, k), w in zip(_calls(LEGACY, seed), want):
    same(getattr(mt.random, n)(*a, **k), w)
  assert float(mt.random.random()) == np.random.random()


@pytest.mark.parametrize("seed", SEEDS)
def test_generator_methods_follow_numpys_stream(seed):
  g_np, g_mt = np.random.default_rng(seed), mt.random.default_rng(seed)
  for n, a, k in _calls(GENERATOR, seed):
    same(getattr(g_mt, n)(*a, **k), getattr(g_np, n)(*a, **k))
  x = np.arange(12.0).reshape(3, 4)
  same(g_mt.permuted(mt.asarray(x), axis=1), g_np.permuted(x, axis=1))
  same(g_mt.permuted(x), g_np.permuted(x))
  assert float(g_mt.random()) == g_np.random() and g_mt.bytes(5) == g_np.bytes(5)


def test_random_state_objects_and_tensor_arguments():
  r_np, r_mt = np.random.RandomState(3), mt.random.RandomState(3)
  lo, hi = np.array([0.0, 10.0, 100.0]), np.array([1.0, 20.0, 300.0])
  same(r_mt.uniform(mt.asarray(lo), mt.asarray(hi)), r_np.uniform(lo, hi))
  same(r_mt.choice(mt.arange(5) * 2, 3), r_np.choice(np.arange(5) * 2, 3))
  same(r_mt.normal(mt.asarray(lo), 1.0, (2, 3)), r_np.normal(lo, 1.0, (2, 3)))
  same(r_mt.randint(0, mt.asarray([3, 30, 300])), r_np.randint(0, [3, 30, 300]))
  assert repr(r_mt) == "RandomState(MT19937)"


@pytest.mark.parametrize("seed", SEEDS)
def test_get_state_and_set_state_round_trip(seed):
  mt.random.seed(seed)
  mt.random.rand(3); mt.random.randn(3)       # randn leaves a cached gaussian in the state
  state = mt.random.get_state()
  a = mt.random.randn(5).numpy()
  mt.random.set_state(state)
  np.testing.assert_array_equal(mt.random.randn(5).numpy(), a)
  np.random.set_state(state)                   # the same format as NumPy's: NumPy continues the same stream
  np.testing.assert_array_equal(np.random.randn(5), a)
  mt.random.set_state(np.random.get_state(legacy=False))
  np.testing.assert_array_equal(mt.random.random(4).numpy(), np.random.random(4))


def test_out_and_generators_as_numpy():
  g_np, g_mt = np.random.default_rng(5), mt.random.default_rng(5)
  out = mt.zeros((2, 3))
  assert g_mt.random(out=out) is out
  np.testing.assert_array_equal(out.numpy(), g_np.random((2, 3)))
  buf = np.zeros(3, np.float32)
  g_mt.standard_normal(out=buf, dtype=np.float32)
  np.testing.assert_array_equal(buf, g_np.standard_normal(3, dtype=np.float32))
  with pytest.raises(TypeError, match="wrong type"): g_mt.random(out=mt.zeros(3, dtype=mt.int64))
  with pytest.raises(ValueError): g_mt.random((4,), out=mt.zeros(3))                  # size must match out, as NumPy
  out = mt.zeros(3)
  g_mt.standard_gamma(2.0, out=out)
  np.testing.assert_array_equal(out.numpy(), g_np.standard_gamma(2.0, 3))
  assert mt.random.default_rng(g_mt) is g_mt
  same(mt.random.Generator(np.random.PCG64(9)).random(3), np.random.Generator(np.random.PCG64(9)).random(3))
  kids_np, kids_mt = np.random.default_rng(1).spawn(2), mt.random.default_rng(1).spawn(2)
  for a, b in zip(kids_np, kids_mt): same(b.integers(0, 9, 4), a.integers(0, 9, 4))


def test_errors_as_numpy():
  for f in (lambda r: r.randint(5, 1), lambda r: r.choice(3, 5, replace=False), lambda r: r.choice([], 1),
            lambda r: r.uniform(0, 1, -1), lambda r: r.choice(3, p=[0.5, 0.6, 0.1]), lambda r: r.binomial(-1, 0.5)):
    with pytest.raises(Exception) as e_np: f(np.random)
    with pytest.raises(type(e_np.value)): f(mt.random)
