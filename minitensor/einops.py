"""An einops backend for Tensors: `import minitensor.einops` once, then einops.rearrange/reduce/repeat/pack/unpack/
einsum take Tensors and return lazy Tensors (every einops operation is a reshape, transpose, reduction, tile or
concatenation of minitensor's, so a whole rearrange-reduce chain fuses into the kernels of its consumer).

einops finds a backend as a subclass of its AbstractBackend whose `framework_name` module is imported; this
module defines that subclass, so it must be imported (once, anywhere) before einops sees a Tensor.
"""
from __future__ import annotations
import numpy as np
from einops._backends import AbstractBackend
from minitensor import creation, manipulation, movement, rearranging
from minitensor.einsum import einsum
from minitensor.tensor import Tensor, asarray

__all__ = ["MinitensorBackend"]


class MinitensorBackend(AbstractBackend):
  """einops' backend for minitensor.Tensor (imperative: no symbols)."""
  framework_name = "minitensor"

  def is_appropriate_type(self, tensor) -> bool:
    """Whether einops should use this backend for `tensor`."""
    return isinstance(tensor, Tensor)
  def from_numpy(self, x) -> Tensor:
    """A Tensor of x's values."""
    return asarray(x)
  def to_numpy(self, x: Tensor) -> np.ndarray:
    """x's realized values."""
    return np.asarray(x)
  def arange(self, start: int, stop: int) -> Tensor:
    """The integers start .. stop-1."""
    return creation.arange(start, stop)
  def stack_on_zeroth_dimension(self, tensors: list) -> Tensor:
    """The tensors stacked along a new first axis."""
    return manipulation.stack(tensors)
  def tile(self, x: Tensor, repeats: tuple) -> Tensor:
    """x repeated `repeats[i]` times along axis i."""
    return rearranging.tile(x, repeats)
  def concat(self, tensors: list, axis: int) -> Tensor:
    """The tensors joined along axis."""
    return manipulation.concatenate(tensors, axis=axis)
  def is_float_type(self, x: Tensor) -> bool:
    """Whether x has a real floating dtype (einops averages only those)."""
    return x.dtype.kind == "f"
  def add_axis(self, x: Tensor, new_position: int) -> Tensor:
    """x with a new axis of length 1 at new_position."""
    return movement.expand_dims(x, new_position)
  def einsum(self, pattern: str, *x: Tensor) -> Tensor:
    """minitensor's einsum."""
    return einsum(pattern, *x)
