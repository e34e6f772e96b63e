"""Random numbers: NumPy's generators, results as Tensors.

The values are NumPy's, bit for bit: `mt.random.default_rng(0).random(3)` equals
`np.random.default_rng(0).random(3)`, and `mt.random.seed(0); mt.random.rand(3)` equals
`np.random.seed(0); np.random.rand(3)`. The module-level functions draw from minitensor's own legacy
RandomState, so they never disturb NumPy's global state (nor NumPy's theirs).

shuffle and permutation draw NumPy's permutation of the indices along the axis (the same draws NumPy's shuffle
of an array of that length makes) and gather with it: `t[perm]`, lazily. shuffle of a Tensor then assigns
`t[...] = t[perm]`; other arguments (ndarrays, lists) are shuffled by NumPy itself, in place.
"""
from __future__ import annotations
import operator
from typing import Callable
import numpy as np
from numpy.exceptions import AxisError
from minitensor import views as V
from minitensor.tensor import Tensor, asarray

__all__ = ["Generator", "default_rng", "seed", "rand", "randn", "shuffle", "permutation"]


def _plain(x):
  """Tensor arguments as ndarrays for NumPy; anything else as given."""
  return np.asarray(x) if isinstance(x, Tensor) else x


def _perm(draw: Callable, n: int) -> np.ndarray:
  """The permutation `draw` (a NumPy shuffle) makes of n items: the same draws as shuffling any n rows."""
  idx = np.arange(n, dtype=np.intp)
  draw(idx)
  return idx


def _along(t: Tensor, axis: int, perm: np.ndarray) -> Tensor:
  """t gathered along axis by perm."""
  return t[(slice(None),) * axis + (perm,)]


def _axis(axis, ndim: int, op: str) -> int:
  a = operator.index(axis)
  if not -ndim <= a < ndim: raise AxisError(a, ndim, op)
  return a % ndim


def _shuffle(draw: Callable, x, axis: int, op: str) -> None:
  """Shuffle Tensor x in place along axis: x[...] = x gathered by the permutation (none drawn when x is empty,
  as NumPy)."""
  if x.ndim == 0: raise TypeError(f"{op}: len() of unsized object (a 0-d tensor cannot be shuffled)")
  ax = _axis(axis, x.ndim, op)
  if x.size:
    with V.WRITES: x[...] = _along(x, ax, _perm(draw, x.shape[ax]))   # (one step with its read: views.py)


def _permutation(draw: Callable, x, axis: int, op: str) -> Tensor:
  """A permuted arange(x) for an integer x, else a permuted copy of x along axis."""
  if isinstance(x, (int, np.integer)): return asarray(_perm(draw, x).astype(np.int64))
  t = asarray(x)
  if t.ndim == 0 and op == "permutation": raise IndexError(f"{op}: x must be an integer or at least 1-dimensional")
  ax = _axis(axis, t.ndim, op)
  return _along(t, ax, _perm(draw, t.shape[ax]))


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

  def shuffle(self, x, axis: int = 0) -> None:
    """Shuffle x in place along axis, with numpy.random.Generator.shuffle's draws (the same order for the same
    seed).

    Parameters
    ----------
    x : Tensor, ndarray or mutable sequence
        A Tensor is rebound to its shuffled value (x[...] = x[perm]); anything else is shuffled by NumPy.
    axis : int, optional
    """
    if not isinstance(x, Tensor): return self._gen.shuffle(x, axis)
    _shuffle(self._gen.shuffle, x, axis, "Generator.shuffle")

  def permutation(self, x, axis: int = 0) -> Tensor:
    """A permuted arange(x) for an integer x, else a permuted copy of x along axis, as
    numpy.random.Generator.permutation.

    Parameters
    ----------
    x : int or array_like
    axis : int, optional

    Returns
    -------
    Tensor
        int64 for an integer x; otherwise x's dtype and shape (a lazy gather of x).
    """
    return _permutation(self._gen.shuffle, x, axis, "Generator.permutation")


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


def shuffle(x) -> None:
  """Shuffle x in place along its first axis, from the module-level generator: after `mt.random.seed(s)` the
  order is the one `np.random.seed(s); np.random.shuffle(a)` gives an array of the same length.

  Parameters
  ----------
  x : Tensor, ndarray or mutable sequence
      A Tensor is rebound to its shuffled value (x[...] = x[perm]); anything else is shuffled by NumPy.
  """
  if not isinstance(x, Tensor): return _legacy.shuffle(x)
  _shuffle(_legacy.shuffle, x, 0, "shuffle")


def permutation(x) -> Tensor:
  """A permuted arange(x) for an integer x, else a permuted copy of x along its first axis, from the
  module-level generator (numpy.random.permutation's order for the same seed).

  Parameters
  ----------
  x : int or array_like
      At least 1-D when not an integer (IndexError otherwise, as NumPy).

  Returns
  -------
  Tensor
      int64 for an integer x; otherwise x's dtype and shape (a lazy gather of x).
  """
  return _permutation(_legacy.shuffle, x, 0, "permutation")
