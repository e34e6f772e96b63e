"""masks: boolean indices as the flat positions of their True elements.

A boolean mask's np.nonzero of several axes is several times slower than its flat positions (np.flatnonzero)
divided out axis by axis (685 against 162 us for (400, 333) at half True), and slower still than needing no
division at all: a mask of several axes before any None or Ellipsis indexes those axes merged into one (`merged`),
and a write through one mask of the array's whole shape goes by the positions (`whole_mask`: NumPy's boolean
assignment into (333, 400) complex takes 554 us at half True, by positions 53 us; AMD EPYC Zen 5). A mask Tensor's
positions are found once per value (`mask_of`): a loop indexes with one mask several times.
"""
from __future__ import annotations
import weakref
import numpy as np
from minitensor.backend.leaves import is_borrowed
from minitensor.backend.uop import prod
from minitensor.tensor import Tensor

__all__ = ["Mask", "mask_of", "merged", "positions", "whole_mask"]


class Mask:
  """A boolean index of one or more axes: its shape, how many of its elements are True (`count`) and the flat
  positions of those (`flat`, int64). A mask True everywhere (`r[r > 0]` where r > 0 holds: indexing then reads
  and writes without positions) gets its positions, an arange, only if asked: np.count_nonzero of (100, 100) takes
  about 1 us, np.flatnonzero 15. `indices`, its np.nonzero, is divided out of the positions when first asked for."""
  __slots__ = ("shape", "count", "_flat", "_indices", "_frozen")

  def __init__(self, shape: tuple[int, ...], values: np.ndarray | None = None, flat: np.ndarray | None = None,
               frozen: bool = False):
    """Of a boolean array `values` of that shape (or of positions `flat`); frozen: the positions are read-only."""
    self.shape, self._indices, self._frozen = shape, None, frozen
    if flat is None:
      if (count := int(np.count_nonzero(values))) != values.size: flat = positions(values)
    else: count = flat.size
    if flat is not None and frozen: flat.flags.writeable = False
    self.count, self._flat = count, flat

  ndim = property(lambda self: len(self.shape))

  @property
  def flat(self) -> np.ndarray:
    if self._flat is None:
      self._flat = np.arange(self.count, dtype=np.int64)
      if self._frozen: self._flat.flags.writeable = False
    return self._flat

  @property
  def indices(self) -> tuple[np.ndarray, ...]:
    if self._indices is None:
      flat, out = self.flat, []
      for n in reversed(self.shape[1:]):
        if not flat.size: break
        flat, r = np.divmod(flat, n)
        out.append(r)
      out = [flat] * len(self.shape) if not flat.size else [flat, *reversed(out)]
      if not self.flat.flags.writeable:
        for i in out: i.flags.writeable = False
      self._indices = tuple(out)
    return self._indices


_MASKS: dict[int, tuple] = {}     # id of a mask Tensor -> (weakref to it, its version, its Mask)


def mask_of(t: Tensor) -> Mask:
  """The Mask of boolean Tensor t, found once per value of t: a loop indexes with one mask several times
  (`z[m] = z[m] ** 2 + c[m]; n[m] = i`), and np.nonzero of a large mask costs more than the rest of an indexing. A
  view, or a Tensor over a user's memory (which the user may change), is not kept."""
  a = np.asarray(t)
  keep = t._link is None and not is_borrowed(t._data)
  if keep and (hit := _MASKS.get(id(t))) is not None and hit[0]() is t and hit[1] == t._version: return hit[2]
  m = Mask(a.shape, a, frozen=keep)
  if keep:
    if len(_MASKS) >= 64: _MASKS.clear()
    _MASKS[id(t)] = (weakref.ref(t), t._version, m)
  return m


def positions(a: np.ndarray) -> np.ndarray:
  """The flat positions of a boolean array's True elements, as int64."""
  return np.flatnonzero(a).astype(np.int64, copy=False)


def merged(shape: tuple[int, ...], items: list) -> tuple[tuple[int, ...], list] | None:
  """(shape, items) with each mask of several axes made a mask of one axis, those axes merged into one (row-major:
  the same elements in the same order, gathered through one index array, none divided out), or None when no mask
  can be merged. Only masks before any None and Ellipsis, whose axes are known; a mask whose shape does not match
  its axes is left for indexing's error."""
  out_shape, out, ax, joined = [], [], 0, False
  for k, x in enumerate(items):
    if x is None or x is Ellipsis:
      out += items[k:]
      break
    if type(x) is bool:                    # (a 0-d mask takes no axis)
      out.append(x)
      continue
    n = x.ndim if type(x) is Mask else 1
    if ax + n > len(shape) or (type(x) is Mask and x.shape != shape[ax:ax + n]): return None
    if type(x) is Mask and n > 1:
      out_shape.append(prod(x.shape))
      out.append(Mask((prod(x.shape),), flat=x.flat))
      joined = True
    else:
      out_shape += shape[ax:ax + n]
      out.append(x)
    ax += n
  return (tuple(out_shape) + shape[ax:], out) if joined else None


def whole_mask(t: Tensor, idx) -> np.ndarray | None:
  """The flat positions of idx when it is one boolean mask of t's shape (a Tensor's found once per value, mask_of),
  else None. Assigning through them is NumPy's boolean assignment, faster (92 against 161 us into (333, 400)
  complex128 at 90% True; the module docstring has half True)."""
  if isinstance(idx, Tensor) and idx.shape == t.shape and idx.ndim and idx.dtype == np.bool_: return mask_of(idx).flat
  if type(idx) is np.ndarray and idx.dtype == np.bool_ and idx.shape == t.shape and idx.ndim: return positions(idx)
  return None
