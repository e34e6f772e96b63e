"""Random numbers: NumPy's generators, results as Tensors.

The values are NumPy's, bit for bit: `mt.random.default_rng(0).random(3)` equals
`np.random.default_rng(0).random(3)`, and `mt.random.seed(0); mt.random.rand(3)` equals
`np.random.seed(0); np.random.rand(3)`. The module-level functions draw from minitensor's own legacy
RandomState, so they never disturb NumPy's global state (nor NumPy's theirs).
"""
from __future__ import annotations
import numpy as np
from minitensor.tensor import Tensor, asarray

__all__ = ["Generator", "default_rng", "seed", "rand", "randn"]


def _plain(x):
  """Tensor arguments as ndarrays for NumPy; anything else as given."""
  return np.asarray(x) if isinstance(x, Tensor) else x


class Generator:
  """A random generator with numpy.random.Generator's methods, returning Tensors (0-d when size is None).

  Parameters
  ----------
  gen : numpy.random.Generator
      The generator that draws the values.
  """

  def __init__(self, gen: np.random.Generator):
    self._gen = gen

  def __repr__(self) -> str: return f"Generator({type(self._gen.bit_generator).__name__})"

  def random(self, size=None, dtype=np.float64) -> Tensor:
    """Uniform floats in [0, 1).

    Parameters
    ----------
    size : int or tuple of ints, optional
    dtype : float32 or float64, optional

    Returns
    -------
    Tensor
    """
    return asarray(self._gen.random(size, dtype))

  def standard_normal(self, size=None, dtype=np.float64) -> Tensor:
    """Samples of the standard normal distribution.

    Parameters
    ----------
    size : int or tuple of ints, optional
    dtype : float32 or float64, optional

    Returns
    -------
    Tensor
    """
    return asarray(self._gen.standard_normal(size, dtype))

  def uniform(self, low=0.0, high=1.0, size=None) -> Tensor:
    """Uniform samples in [low, high).

    Parameters
    ----------
    low, high : float or array_like
    size : int or tuple of ints, optional

    Returns
    -------
    Tensor
    """
    return asarray(self._gen.uniform(_plain(low), _plain(high), size))

  def normal(self, loc=0.0, scale=1.0, size=None) -> Tensor:
    """Samples of the normal distribution N(loc, scale**2).

    Parameters
    ----------
    loc, scale : float or array_like
    size : int or tuple of ints, optional

    Returns
    -------
    Tensor
    """
    return asarray(self._gen.normal(_plain(loc), _plain(scale), size))

  def integers(self, low, high=None, size=None, dtype=np.int64, endpoint: bool = False) -> Tensor:
    """Random integers in [low, high) (or [low, high] when endpoint); [0, low) when high is None.

    Parameters
    ----------
    low, high : int or array_like
    size : int or tuple of ints, optional
    dtype : integer or bool data-type, optional
    endpoint : bool, optional

    Returns
    -------
    Tensor
    """
    return asarray(self._gen.integers(_plain(low), _plain(high), size, dtype=dtype, endpoint=endpoint))

  def choice(self, a, size=None, replace: bool = True, p=None, axis: int = 0, shuffle: bool = True) -> Tensor:
    """Random samples from a (an array_like, or range(a) for an int).

    Parameters
    ----------
    a : int or array_like
    size : int or tuple of ints, optional
    replace : bool, optional
    p : array_like, optional
        Probabilities of the entries of a.
    axis : int, optional
    shuffle : bool, optional

    Returns
    -------
    Tensor
    """
    return asarray(self._gen.choice(_plain(a), size, replace, _plain(p), axis, shuffle))


def default_rng(seed=None) -> Generator:
  """A Generator seeded as numpy.random.default_rng(seed) is.

  Parameters
  ----------
  seed : None, int, sequence of ints, SeedSequence, BitGenerator or numpy Generator, optional

  Returns
  -------
  Generator
  """
  return Generator(np.random.default_rng(seed))


_legacy = np.random.RandomState()


def seed(seed=None) -> None:
  """Seed the module-level generator (as numpy.random.seed does NumPy's).

  Parameters
  ----------
  seed : None, int or array_like of ints, optional
  """
  _legacy.seed(seed)


def rand(*shape: int) -> Tensor:
  """Uniform floats in [0, 1) of the given shape, from the module-level generator.

  Parameters
  ----------
  *shape : int

  Returns
  -------
  Tensor
      float64, 0-d when no shape is given.
  """
  return asarray(_legacy.rand(*shape))


def randn(*shape: int) -> Tensor:
  """Standard normal samples of the given shape, from the module-level generator.

  Parameters
  ----------
  *shape : int

  Returns
  -------
  Tensor
      float64, 0-d when no shape is given.
  """
  return asarray(_legacy.randn(*shape))
