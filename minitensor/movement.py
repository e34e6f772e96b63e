"""Movement methods of Tensor: reshape, transpose, swapaxes, squeeze, expand_dims, broadcast_to, flip, ravel,
flatten and the .T/.mT properties. Each is an index map (no data moves); where NumPy returns a view, so does
this (views.py): writes into the result reach the Tensor it was made from."""
from __future__ import annotations
import operator
from numpy.exceptions import AxisError
from minitensor import ufuncs as U
from minitensor import views as V
from minitensor.backend.uop import prod
from minitensor.numpy_rules import broadcast_shapes, check_shape, normalize_axes
from minitensor.tensor import Tensor, asarray, tensor_methods


def expand_dims(a, axis) -> Tensor:
  """a with size-1 axes inserted at the positions `axis` (of the result); a view of a.

  Parameters
  ----------
  a : array_like
  axis : int or tuple of ints

  Returns
  -------
  Tensor
  """
  a = asarray(a)
  axes = axis if isinstance(axis, (tuple, list)) else (axis,)
  n = a.ndim + len(axes)
  axes = normalize_axes(axes, n, "expand_dims")
  it = iter(a.shape)
  return a.reshape(tuple(1 if k in axes else next(it) for k in range(n)))


@tensor_methods
class _Movement:
  def reshape(self, *shape, order: str = "C") -> Tensor:
    """The same elements in row-major order, viewed with another shape (one -1 is inferred; no copy where
    NumPy makes none).

    Parameters
    ----------
    *shape : ints or a tuple of ints
    order : 'C'

    Returns
    -------
    Tensor
    """
    if order != "C": raise NotImplementedError("reshape: only order='C' is supported")
    if len(shape) == 1 and type(shape[0]) in (tuple, list): shape = tuple(shape[0])
    if not all(type(s) is int for s in shape):        # (Python ints: the common case needs no conversion)
      try: shape = tuple([operator.index(s) for s in shape])
      except TypeError: raise TypeError(f"reshape: shape must be integers, got {shape!r}") from None
    n = self.size
    if -1 in shape:
      if shape.count(-1) > 1: raise ValueError("reshape: can only specify one unknown dimension")
      known = prod(s for s in shape if s != -1)
      if known == 0 or n % known or known < 0: raise ValueError(f"cannot reshape array of size {n} into shape {shape}")
      shape = tuple([n // known if s == -1 else s for s in shape])
    if min(shape, default=0) < 0: raise ValueError(f"reshape: negative dimensions not allowed: {shape}")
    check_shape(shape, "reshape")
    if prod(shape) != n: raise ValueError(f"cannot reshape array of size {n} into shape {shape}")
    return V.reshaped(self, shape)

  def transpose(self, *axes) -> Tensor:
    """The axes permuted (reversed by default); no copy.

    Parameters
    ----------
    *axes : ints, a tuple of ints, or none

    Returns
    -------
    Tensor
    """
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)) or (len(axes) == 1 and axes[0] is None): axes = axes[0]
    if not axes: return V.permuted(self, tuple(range(self.ndim))[::-1])      # (.T: nothing to check)
    if len(axes) != self.ndim:
      raise ValueError(f"transpose: axes {tuple(axes)} don't match array of shape {self.shape}")
    ax = [operator.index(a) for a in axes]
    for a in ax:
      if not -self.ndim <= a < self.ndim: raise AxisError(a, self.ndim, "transpose")
    ax = [a % self.ndim for a in ax]
    if len(set(ax)) != len(ax): raise ValueError(f"transpose: repeated axis in {tuple(axes)}")
    return V.permuted(self, tuple(ax))

  def permute_dims(self, axes) -> Tensor:
    """The axes permuted (the Array API's name of transpose).

    Parameters
    ----------
    axes : tuple of ints

    Returns
    -------
    Tensor
    """
    return self.transpose(axes)

  def swapaxes(self, a: int, b: int) -> Tensor:
    """Axes a and b exchanged; no copy.

    Parameters
    ----------
    a, b : int

    Returns
    -------
    Tensor
    """
    a, b = (normalize_axes(x, self.ndim, "swapaxes")[0] for x in (a, b))
    p = list(range(self.ndim)); p[a], p[b] = p[b], p[a]
    return V.permuted(self, tuple(p))

  @property
  def T(self) -> Tensor:
    """The axes reversed: transpose()."""
    return self.transpose()

  @property
  def mT(self) -> Tensor:
    """The last two axes swapped (the matrix transpose of a stack of matrices); ValueError below 2-D."""
    if self.ndim < 2: raise ValueError(f"matrix transpose needs at least 2 dimensions, got shape {self.shape}")
    return self.swapaxes(-1, -2)

  def flatten(self) -> Tensor:
    """The elements as a 1-D Tensor in row-major order (no copy: Tensors are immutable; a new Tensor, not a
    view, as NumPy's flatten returns a copy).

    Returns
    -------
    Tensor
    """
    return Tensor(self.uop.reshape((self.size,)))

  def ravel(self) -> Tensor:
    """The elements as a 1-D Tensor in row-major order (a view where NumPy makes one).

    Returns
    -------
    Tensor
    """
    return self.reshape(-1)

  def squeeze(self, axis=None) -> Tensor:
    """Size-1 axes removed (all of them, or those in `axis`; ValueError for an axis of another size).

    Parameters
    ----------
    axis : None, int or tuple of ints, optional
        Negative counts from the end; None: every size-1 axis.

    Returns
    -------
    Tensor
    """
    axes = tuple(k for k, s in enumerate(self.shape) if s == 1) if axis is None else \
      normalize_axes(axis, self.ndim, "squeeze")
    for a in axes:
      if self.shape[a] != 1:
        raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size not equal to one "
                         f"(axis {a} of shape {self.shape})")
    return V.reshaped(self, tuple(s for k, s in enumerate(self.shape) if k not in axes))

  def expand_dims(self, axis) -> Tensor:
    """Size-1 axes inserted at the positions `axis` (of the result): minitensor.expand_dims.

    Parameters
    ----------
    axis : int or tuple of ints

    Returns
    -------
    Tensor
    """
    return expand_dims(self, axis)

  def broadcast_to(self, shape) -> Tensor:
    """The Tensor broadcast to `shape` (NumPy's rules): a read-only view, no copy.

    Parameters
    ----------
    shape : int or tuple of ints

    Returns
    -------
    Tensor
    """
    shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else \
      tuple(operator.index(s) for s in shape)
    check_shape(shape, "broadcast_to")
    if len(shape) < self.ndim or broadcast_shapes(self.shape, shape, op="broadcast_to") != shape:
      raise ValueError(f"broadcast_to: cannot broadcast a tensor of shape {self.shape} to shape {shape}")
    st = (0,) * (len(shape) - self.ndim) + tuple(0 if n == 1 else s for n, s in zip(self.shape, V.strides_of(self)))
    return V.readonly_view(self, lambda u: U._broadcast(u, shape), st)

  def flip(self, axis=None) -> Tensor:
    """The order of elements reversed along `axis` (all axes for None); no copy.

    Parameters
    ----------
    axis : None, int or tuple of ints, optional
        Negative counts from the end.

    Returns
    -------
    Tensor
    """
    axes = normalize_axes(axis, self.ndim, "flip")
    return V.flipped(self, axes)
