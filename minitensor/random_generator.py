"""minitensor.random.Generator: numpy.random.Generator's methods, returning Tensors.

Every value is drawn by a numpy.random.Generator (minitensor.random_draws), so `mt.random.default_rng(s)` gives
`np.random.default_rng(s)`'s stream, bit for bit, method for method and in any order of calls. Results are
Tensors of NumPy's dtypes (0-d when size is None); Tensor arguments are read as their values. `out=` takes a
Tensor (written in place, as `out[...] = draws`) or an ndarray (NumPy writes it). shuffle and permutation gather
a Tensor lazily by NumPy's permutation; permuted computes on the realized values.
"""
from __future__ import annotations
import numpy as np
from minitensor import tracing as T
from minitensor.random_draws import draw, permutation_of, plain, shuffle_tensor
from minitensor.tensor import Tensor, asarray

__all__ = ["Generator"]


def _fill(f, out, dtype) -> Tensor:
  """Draws of f (NumPy's `out=` form) into out: a Tensor is written as out[...] = draws, an ndarray by NumPy."""
  if not isinstance(out, Tensor):
    f(out=out)
    return out
  if out.dtype != np.dtype(dtype):
    raise TypeError(f"Supplied output array has the wrong type. Expected {np.dtype(dtype)}, got {out.dtype}")
  buf = np.empty(out.shape, out.dtype)
  f(out=buf)
  out[...] = asarray(buf, copy=False)
  return out


class Generator:
  """A random generator with numpy.random.Generator's methods, returning Tensors (0-d when size is None).

  Parameters
  ----------
  bit_generator : numpy.random.BitGenerator or numpy.random.Generator
      What draws the values (a numpy Generator is used as it is; a BitGenerator is wrapped in one).
  """

  def __init__(self, bit_generator):
    g = bit_generator
    self._numpy = g if isinstance(g, np.random.Generator) else np.random.Generator(g)

  @property
  def _gen(self) -> np.random.Generator:
    """The NumPy Generator that draws (inside a jit trace: TracerError, tracing.check_draw)."""
    if T.ACTIVE[0]: T.check_draw("a Generator method")
    return self._numpy

  def __repr__(self) -> str: return f"Generator({type(self._numpy.bit_generator).__name__})"

  @property
  def bit_generator(self):
    """The NumPy BitGenerator that draws the bits."""
    return self._gen.bit_generator

  def spawn(self, n_children: int) -> list[Generator]:
    """n_children independent Generators, as numpy.random.Generator.spawn."""
    return [Generator(g) for g in self._gen.spawn(n_children)]

  def bytes(self, length: int) -> bytes:
    """length random bytes (a Python bytes object, as NumPy's)."""
    return self._gen.bytes(length)

  def random(self, size=None, dtype=np.float64, out=None) -> Tensor:
    """Uniform floats in [0, 1) of the given size; dtype float64 or float32; out= a Tensor or ndarray to fill."""
    if out is not None: return _fill(lambda out: self._gen.random(size, dtype, out), out, dtype)
    return asarray(self._gen.random(size, dtype))

  def integers(self, low, high=None, size=None, dtype=np.int64, endpoint: bool = False) -> Tensor:
    """Random integers in [low, high) ([low, high] with endpoint; [0, low) when high is None) of dtype."""
    return draw(self._gen.integers, low, high, size, dtype=dtype, endpoint=endpoint)

  def standard_normal(self, size=None, dtype=np.float64, out=None) -> Tensor:
    """Samples of N(0, 1) of the given size; dtype float64 or float32; out= a Tensor or ndarray to fill."""
    if out is not None: return _fill(lambda out: self._gen.standard_normal(size, dtype, out), out, dtype)
    return asarray(self._gen.standard_normal(size, dtype))

  def normal(self, loc=0.0, scale=1.0, size=None) -> Tensor:
    """Samples of N(loc, scale**2); loc and scale broadcast (floats or arrays)."""
    return draw(self._gen.normal, loc, scale, size)

  def uniform(self, low=0.0, high=1.0, size=None) -> Tensor:
    """Uniform samples in [low, high); low and high broadcast."""
    return draw(self._gen.uniform, low, high, size)

  def choice(self, a, size=None, replace: bool = True, p=None, axis: int = 0, shuffle: bool = True) -> Tensor:
    """Samples from a (an array, or range(a) for an int) along axis, with replacement or not, with
    probabilities p; shuffle=False keeps a sample without replacement in a's order."""
    return draw(self._gen.choice, a, size, replace, p, axis, shuffle)

  def shuffle(self, x, axis: int = 0) -> None:
    """Shuffle x in place along axis with numpy.random.Generator.shuffle's draws. A Tensor is rebound to its
    shuffled value (x[...] = x[perm], its views see it); anything else is shuffled by NumPy."""
    if not isinstance(x, Tensor): return self._gen.shuffle(x, axis)
    shuffle_tensor(self._gen.shuffle, x, axis, "Generator.shuffle")

  def permutation(self, x, axis: int = 0) -> Tensor:
    """A permuted arange(x) (int64) for an integer x, else x permuted along axis (a lazy gather of x)."""
    return permutation_of(self._gen.shuffle, x, axis, "Generator.permutation")

  def permuted(self, x, axis=None, out=None) -> Tensor:
    """x with each slice along axis shuffled independently (the flattened x when axis is None), as
    numpy.random.Generator.permuted; computed on x's realized values. out= a Tensor or ndarray to write."""
    r = self._gen.permuted(plain(x), axis=axis)
    if out is None: return asarray(r)
    if isinstance(out, Tensor): out[...] = asarray(r)
    else: np.copyto(out, r)
    return out

  def exponential(self, scale=1.0, size=None) -> Tensor:
    """Samples of the exponential distribution with the given scale (1 / rate)."""
    return draw(self._gen.exponential, scale, size)

  def standard_exponential(self, size=None, dtype=np.float64, method: str = "zig", out=None) -> Tensor:
    """Samples of the exponential distribution of scale 1 (method 'zig' or 'inv', as NumPy's)."""
    if out is not None:
      return _fill(lambda out: self._gen.standard_exponential(size, dtype, method, out), out, dtype)
    return asarray(self._gen.standard_exponential(size, dtype, method))

  def poisson(self, lam=1.0, size=None) -> Tensor:
    """Samples of the Poisson distribution of rate lam (int64)."""
    return draw(self._gen.poisson, lam, size)

  def binomial(self, n, p, size=None) -> Tensor:
    """Samples of the binomial distribution of n trials with success probability p (int64)."""
    return draw(self._gen.binomial, n, p, size)

  def negative_binomial(self, n, p, size=None) -> Tensor:
    """Samples of the negative binomial distribution (failures before n successes of probability p)."""
    return draw(self._gen.negative_binomial, n, p, size)

  def geometric(self, p, size=None) -> Tensor:
    """Samples of the geometric distribution (trials up to the first success of probability p)."""
    return draw(self._gen.geometric, p, size)

  def hypergeometric(self, ngood, nbad, nsample, size=None) -> Tensor:
    """Samples of the hypergeometric distribution (good items in nsample drawn from ngood + nbad)."""
    return draw(self._gen.hypergeometric, ngood, nbad, nsample, size)

  def beta(self, a, b, size=None) -> Tensor:
    """Samples of the beta distribution with shape parameters a and b."""
    return draw(self._gen.beta, a, b, size)

  def gamma(self, shape, scale=1.0, size=None) -> Tensor:
    """Samples of the gamma distribution with the given shape and scale."""
    return draw(self._gen.gamma, shape, scale, size)

  def standard_gamma(self, shape, size=None, dtype=np.float64, out=None) -> Tensor:
    """Samples of the gamma distribution with the given shape and scale 1."""
    if out is not None: return _fill(lambda out: self._gen.standard_gamma(plain(shape), size, dtype, out), out, dtype)
    return asarray(self._gen.standard_gamma(plain(shape), size, dtype))

  def chisquare(self, df, size=None) -> Tensor:
    """Samples of the chi-square distribution with df degrees of freedom."""
    return draw(self._gen.chisquare, df, size)

  def standard_t(self, df, size=None) -> Tensor:
    """Samples of Student's t distribution with df degrees of freedom."""
    return draw(self._gen.standard_t, df, size)

  def standard_cauchy(self, size=None) -> Tensor:
    """Samples of the standard Cauchy distribution."""
    return draw(self._gen.standard_cauchy, size)

  def f(self, dfnum, dfden, size=None) -> Tensor:
    """Samples of the F distribution with dfnum and dfden degrees of freedom."""
    return draw(self._gen.f, dfnum, dfden, size)

  def lognormal(self, mean=0.0, sigma=1.0, size=None) -> Tensor:
    """Samples whose logarithm is N(mean, sigma**2)."""
    return draw(self._gen.lognormal, mean, sigma, size)

  def laplace(self, loc=0.0, scale=1.0, size=None) -> Tensor:
    """Samples of the Laplace (double exponential) distribution."""
    return draw(self._gen.laplace, loc, scale, size)

  def logistic(self, loc=0.0, scale=1.0, size=None) -> Tensor:
    """Samples of the logistic distribution."""
    return draw(self._gen.logistic, loc, scale, size)

  def gumbel(self, loc=0.0, scale=1.0, size=None) -> Tensor:
    """Samples of the Gumbel distribution."""
    return draw(self._gen.gumbel, loc, scale, size)

  def triangular(self, left, mode, right, size=None) -> Tensor:
    """Samples of the triangular distribution on [left, right] with its peak at mode."""
    return draw(self._gen.triangular, left, mode, right, size)

  def weibull(self, a, size=None) -> Tensor:
    """Samples of the Weibull distribution with shape a."""
    return draw(self._gen.weibull, a, size)

  def pareto(self, a, size=None) -> Tensor:
    """Samples of the Pareto II (Lomax) distribution with shape a."""
    return draw(self._gen.pareto, a, size)

  def rayleigh(self, scale=1.0, size=None) -> Tensor:
    """Samples of the Rayleigh distribution."""
    return draw(self._gen.rayleigh, scale, size)

  def multinomial(self, n, pvals, size=None) -> Tensor:
    """Counts of n trials over len(pvals) outcomes of probabilities pvals (int64, last axis the outcomes)."""
    return draw(self._gen.multinomial, n, pvals, size)

  def dirichlet(self, alpha, size=None) -> Tensor:
    """Samples of the Dirichlet distribution with concentration alpha (last axis len(alpha))."""
    return draw(self._gen.dirichlet, alpha, size)

  def multivariate_normal(self, mean, cov, size=None, check_valid: str = "warn", tol: float = 1e-8, *,
                          method: str = "svd") -> Tensor:
    """Samples of the multivariate normal distribution N(mean, cov) (last axis len(mean)); method 'svd',
    'eigh' or 'cholesky' factors cov, as NumPy's."""
    return draw(self._gen.multivariate_normal, mean, cov, size, check_valid, tol, method=method)
