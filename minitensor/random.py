"""Random numbers: NumPy's generators, results as Tensors.

The values are NumPy's, bit for bit, because NumPy's own generators draw them (minitensor.random_draws wraps
the arrays): `mt.random.default_rng(0).random(3)` equals `np.random.default_rng(0).random(3)`, and
`mt.random.seed(0); mt.random.randint(0, 10, 5)` equals `np.random.seed(0); np.random.randint(0, 10, 5)`, for
every function and any order of calls. Results are Tensors of NumPy's dtypes (a 0-d Tensor where NumPy returns
a scalar, size=None); Tensor arguments are read as their values.

  module functions          numpy.random's legacy functions (rand, randint, uniform, choice, shuffle, ...,
                            seed, get_state, set_state) on minitensor's own RandomState: they never disturb
                            NumPy's global state (nor NumPy's theirs)
  RandomState(seed)         numpy.random.RandomState's methods
  default_rng(seed), Generator
                            numpy.random.Generator's methods (minitensor.random_generator)

shuffle and permutation of a Tensor gather it lazily by NumPy's permutation (the same draws NumPy makes for an
array of that length); shuffle assigns `t[...] = t[perm]`, so t's views see it. Other arguments (ndarrays,
lists) are shuffled by NumPy itself, in place.
"""
from __future__ import annotations
import numpy as np
from minitensor import tracing as T
from minitensor.random_draws import draw, permutation_of, shuffle_tensor
from minitensor.random_generator import Generator
from minitensor.tensor import Tensor

__all__ = ["Generator", "RandomState", "default_rng", "seed", "get_state", "set_state", "random", "random_sample",
           "sample", "ranf", "rand", "randn", "randint", "uniform", "normal", "standard_normal", "choice",
           "permutation", "shuffle", "bytes", "binomial", "negative_binomial", "poisson", "geometric",
           "hypergeometric", "exponential", "standard_exponential", "beta", "gamma", "standard_gamma", "chisquare",
           "standard_t", "standard_cauchy", "f", "lognormal", "laplace", "logistic", "gumbel", "triangular", "weibull",
           "pareto", "rayleigh", "vonmises", "wald", "zipf", "power", "logseries", "multinomial", "dirichlet",
           "multivariate_normal"]


def default_rng(seed=None) -> Generator:
  """A Generator seeded as numpy.random.default_rng(seed) is (a minitensor Generator is returned as it is).

  Parameters
  ----------
  seed : None, int, sequence of ints, SeedSequence, BitGenerator, numpy or minitensor Generator, optional

  Returns
  -------
  Generator
  """
  if isinstance(seed, Generator): return seed
  return Generator(np.random.default_rng(seed))


class RandomState:
  """numpy.random.RandomState's legacy generator, its results as Tensors: the same stream as
  `np.random.RandomState(seed)` for the same calls.

  Parameters
  ----------
  seed : None, int, array_like of ints or BitGenerator, optional
  """

  def __init__(self, seed=None):
    self._numpy = np.random.RandomState(seed)

  @property
  def _rs(self) -> np.random.RandomState:
    """The NumPy RandomState that draws (inside a jit trace: TracerError, tracing.check_draw)."""
    if T.ACTIVE[0]: T.check_draw(f"a {type(self).__name__} method")
    return self._numpy

  def __repr__(self) -> str: return f"RandomState({type(self._numpy._bit_generator).__name__})"

  def seed(self, seed=None) -> None:
    """Reseed the generator (None: from the operating system's entropy), as RandomState.seed."""
    self._rs.seed(seed)

  def get_state(self, legacy: bool = True):
    """The generator's state: NumPy's ('MT19937', keys, pos, has_gauss, cached_gaussian) tuple, or a dict when
    legacy is False. Feeding it to set_state (here or on a NumPy RandomState) continues the same stream."""
    return self._rs.get_state(legacy=legacy)

  def set_state(self, state) -> None:
    """Restore a state from get_state (minitensor's or NumPy's: they are the same format)."""
    self._rs.set_state(state)

  def random_sample(self, size=None) -> Tensor:
    """Uniform float64 values in [0, 1) of the given size."""
    return draw(self._rs.random_sample, size)

  def random(self, size=None) -> Tensor:
    """Uniform float64 values in [0, 1) of the given size (random_sample)."""
    return draw(self._rs.random_sample, size)

  def rand(self, *shape: int) -> Tensor:
    """Uniform float64 values in [0, 1) of the given shape (rand(2, 3)); 0-d without a shape."""
    return draw(self._rs.rand, *shape)

  def randn(self, *shape: int) -> Tensor:
    """Standard normal float64 samples of the given shape (randn(2, 3)); 0-d without a shape."""
    return draw(self._rs.randn, *shape)

  def randint(self, low, high=None, size=None, dtype=int) -> Tensor:
    """Random integers in [low, high) ([0, low) when high is None) of dtype (default int64)."""
    return draw(self._rs.randint, low, high, size, dtype)

  def uniform(self, low=0.0, high=1.0, size=None) -> Tensor:
    """Uniform samples in [low, high); low and high broadcast."""
    return draw(self._rs.uniform, low, high, size)

  def normal(self, loc=0.0, scale=1.0, size=None) -> Tensor:
    """Samples of N(loc, scale**2); loc and scale broadcast."""
    return draw(self._rs.normal, loc, scale, size)

  def standard_normal(self, size=None) -> Tensor:
    """Samples of N(0, 1) of the given size."""
    return draw(self._rs.standard_normal, size)

  def choice(self, a, size=None, replace: bool = True, p=None) -> Tensor:
    """Samples of a 1-D array a (or of range(a) for an int), with replacement or not, with probabilities p."""
    return draw(self._rs.choice, a, size, replace, p)

  def shuffle(self, x) -> None:
    """Shuffle x in place along its first axis with NumPy's draws. A Tensor is rebound to its shuffled value
    (x[...] = x[perm], its views see it); anything else is shuffled by NumPy."""
    if not isinstance(x, Tensor): return self._rs.shuffle(x)
    shuffle_tensor(self._rs.shuffle, x, 0, "shuffle")

  def permutation(self, x) -> Tensor:
    """A permuted arange(x) (int64) for an integer x, else x permuted along its first axis (a lazy gather of x;
    IndexError for a 0-d x, as NumPy)."""
    return permutation_of(self._rs.shuffle, x, 0, "permutation")

  def bytes(self, length: int) -> bytes:
    """length random bytes (a Python bytes object, as NumPy's)."""
    return self._rs.bytes(length)

  def binomial(self, n, p, size=None) -> Tensor:
    """Samples of the binomial distribution of n trials with success probability p (int64)."""
    return draw(self._rs.binomial, n, p, size)

  def negative_binomial(self, n, p, size=None) -> Tensor:
    """Samples of the negative binomial distribution (failures before n successes of probability p)."""
    return draw(self._rs.negative_binomial, n, p, size)

  def poisson(self, lam=1.0, size=None) -> Tensor:
    """Samples of the Poisson distribution of rate lam (int64)."""
    return draw(self._rs.poisson, lam, size)

  def geometric(self, p, size=None) -> Tensor:
    """Samples of the geometric distribution (trials up to the first success of probability p)."""
    return draw(self._rs.geometric, p, size)

  def hypergeometric(self, ngood, nbad, nsample, size=None) -> Tensor:
    """Samples of the hypergeometric distribution (good items in nsample drawn from ngood + nbad)."""
    return draw(self._rs.hypergeometric, ngood, nbad, nsample, size)

  def exponential(self, scale=1.0, size=None) -> Tensor:
    """Samples of the exponential distribution with the given scale (1 / rate)."""
    return draw(self._rs.exponential, scale, size)

  def standard_exponential(self, size=None) -> Tensor:
    """Samples of the exponential distribution of scale 1."""
    return draw(self._rs.standard_exponential, size)

  def beta(self, a, b, size=None) -> Tensor:
    """Samples of the beta distribution with shape parameters a and b."""
    return draw(self._rs.beta, a, b, size)

  def gamma(self, shape, scale=1.0, size=None) -> Tensor:
    """Samples of the gamma distribution with the given shape and scale."""
    return draw(self._rs.gamma, shape, scale, size)

  def standard_gamma(self, shape, size=None) -> Tensor:
    """Samples of the gamma distribution with the given shape and scale 1."""
    return draw(self._rs.standard_gamma, shape, size)

  def chisquare(self, df, size=None) -> Tensor:
    """Samples of the chi-square distribution with df degrees of freedom."""
    return draw(self._rs.chisquare, df, size)

  def standard_t(self, df, size=None) -> Tensor:
    """Samples of Student's t distribution with df degrees of freedom."""
    return draw(self._rs.standard_t, df, size)

  def standard_cauchy(self, size=None) -> Tensor:
    """Samples of the standard Cauchy distribution."""
    return draw(self._rs.standard_cauchy, size)

  def f(self, dfnum, dfden, size=None) -> Tensor:
    """Samples of the F distribution with dfnum and dfden degrees of freedom."""
    return draw(self._rs.f, dfnum, dfden, size)

  def lognormal(self, mean=0.0, sigma=1.0, size=None) -> Tensor:
    """Samples whose logarithm is N(mean, sigma**2)."""
    return draw(self._rs.lognormal, mean, sigma, size)

  def laplace(self, loc=0.0, scale=1.0, size=None) -> Tensor:
    """Samples of the Laplace (double exponential) distribution."""
    return draw(self._rs.laplace, loc, scale, size)

  def logistic(self, loc=0.0, scale=1.0, size=None) -> Tensor:
    """Samples of the logistic distribution."""
    return draw(self._rs.logistic, loc, scale, size)

  def gumbel(self, loc=0.0, scale=1.0, size=None) -> Tensor:
    """Samples of the Gumbel distribution."""
    return draw(self._rs.gumbel, loc, scale, size)

  def triangular(self, left, mode, right, size=None) -> Tensor:
    """Samples of the triangular distribution on [left, right] with its peak at mode."""
    return draw(self._rs.triangular, left, mode, right, size)

  def weibull(self, a, size=None) -> Tensor:
    """Samples of the Weibull distribution with shape a."""
    return draw(self._rs.weibull, a, size)

  def pareto(self, a, size=None) -> Tensor:
    """Samples of the Pareto II (Lomax) distribution with shape a."""
    return draw(self._rs.pareto, a, size)

  def rayleigh(self, scale=1.0, size=None) -> Tensor:
    """Samples of the Rayleigh distribution."""
    return draw(self._rs.rayleigh, scale, size)

  def vonmises(self, mu, kappa, size=None) -> Tensor:
    """Samples of the von Mises distribution on [-pi, pi] (mode mu, concentration kappa)."""
    return draw(self._rs.vonmises, mu, kappa, size)

  def wald(self, mean, scale, size=None) -> Tensor:
    """Samples of the Wald (inverse Gaussian) distribution."""
    return draw(self._rs.wald, mean, scale, size)

  def zipf(self, a, size=None) -> Tensor:
    """Samples of the Zipf distribution with parameter a > 1 (int64)."""
    return draw(self._rs.zipf, a, size)

  def power(self, a, size=None) -> Tensor:
    """Samples in [0, 1] of the power distribution with exponent a - 1."""
    return draw(self._rs.power, a, size)

  def logseries(self, p, size=None) -> Tensor:
    """Samples of the logarithmic series distribution (int64)."""
    return draw(self._rs.logseries, p, size)

  def multinomial(self, n, pvals, size=None) -> Tensor:
    """Counts of n trials over len(pvals) outcomes of probabilities pvals (last axis the outcomes)."""
    return draw(self._rs.multinomial, n, pvals, size)

  def dirichlet(self, alpha, size=None) -> Tensor:
    """Samples of the Dirichlet distribution with concentration alpha (last axis len(alpha))."""
    return draw(self._rs.dirichlet, alpha, size)

  def multivariate_normal(self, mean, cov, size=None, check_valid: str = "warn", tol: float = 1e-8) -> Tensor:
    """Samples of the multivariate normal distribution N(mean, cov) (last axis len(mean)), NumPy's SVD
    factoring."""
    return draw(self._rs.multivariate_normal, mean, cov, size, check_valid, tol)


# the module functions are the methods of one RandomState, as numpy.random's are
_global = RandomState()
seed, get_state, set_state = _global.seed, _global.get_state, _global.set_state
random, random_sample, rand, randn, randint = _global.random, _global.random_sample, _global.rand, _global.randn, \
  _global.randint
sample = ranf = random_sample
uniform, normal, standard_normal, choice = _global.uniform, _global.normal, _global.standard_normal, _global.choice
permutation, shuffle, bytes = _global.permutation, _global.shuffle, _global.bytes
binomial, negative_binomial, poisson, geometric = _global.binomial, _global.negative_binomial, _global.poisson, \
  _global.geometric
hypergeometric, exponential, standard_exponential = _global.hypergeometric, _global.exponential, \
  _global.standard_exponential
beta, gamma, standard_gamma, chisquare = _global.beta, _global.gamma, _global.standard_gamma, _global.chisquare
standard_t, standard_cauchy, f, lognormal = _global.standard_t, _global.standard_cauchy, _global.f, _global.lognormal
laplace, logistic, gumbel, triangular = _global.laplace, _global.logistic, _global.gumbel, _global.triangular
weibull, pareto, rayleigh, vonmises, wald = _global.weibull, _global.pareto, _global.rayleigh, _global.vonmises, \
  _global.wald
zipf, power, logseries = _global.zipf, _global.power, _global.logseries
multinomial, dirichlet, multivariate_normal = _global.multinomial, _global.dirichlet, _global.multivariate_normal
