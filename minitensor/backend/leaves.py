"""leaves: the frontend's realized data as BUFFER leaves, which ndarrays are a user's borrowed memory, and which
constants are leaves too (`lifted`: kernel arguments).

A small module of its own so that building graphs over data (`mt.asarray`) does not import the compiler:
realize.py and the stages below it are imported on the first realize.
"""
from __future__ import annotations
import itertools
import weakref
import numpy as np
from minitensor.backend.dtype import dtypes
from minitensor.backend.uop import Ops, ParamArg, UOp

_ids = itertools.count(1 << 20)        # far from the small slots of hand-written kernels
_placeholders = itertools.count(1 << 40)      # slots of placeholder leaves (far from buffer ids)


class Unbound(TypeError):
  """A graph to compute reads a placeholder leaf: an input that mt.jit or mt.grad trace stands in for, which has
  no data (the traced function asked for a value of its input)."""


def placeholder(dtype, size: int) -> UOp:
  """A fresh BUFFER leaf of `size` elements of dtype (a DType) holding no data: a traced function's input."""
  return UOp(Ops.BUFFER, (), ParamArg(next(_placeholders), dtype, (size,)))


def buffer_of(a: np.ndarray) -> UOp:
  """A fresh BUFFER leaf holding the C-contiguous ndarray `a` (the leaf keeps it alive)."""
  a = np.ascontiguousarray(a)
  u = UOp(Ops.BUFFER, (), ParamArg(next(_ids), dtypes.from_numpy(a.dtype), (a.size,)))
  u.data = a
  return u


def array_of(u: UOp) -> np.ndarray:
  """The ndarray behind a realized BUFFER leaf."""
  return u.data


_borrowed: dict[int, weakref.ref] = {}


def borrow(a: np.ndarray) -> np.ndarray:
  """Mark a as a user's memory wrapped without a copy (`asarray(a, copy=False)`): results are never views of it."""
  _borrowed[id(a)] = weakref.ref(a, lambda _, k=id(a), held=_borrowed: held.pop(k, None))
  return a


def is_borrowed(a: np.ndarray) -> bool:
  return a is not None and (r := _borrowed.get(id(a))) is not None and r() is a


def any_borrowed(leaves: list[UOp]) -> bool:
  """Whether a leaf's data is a user's memory (is_borrowed; at once when no memory is borrowed at all)."""
  return bool(_borrowed) and any(is_borrowed(b.data) for b in leaves)


def lifted(u: UOp) -> bool:
  """Whether CONST u is a kernel argument rather than a literal in the C: every number a program may vary (a
  scale, an offset, a clip bound, a fill value) except 0, 1 and -1, which the simplifier folds (x*1, x+0, -x),
  and NaN and the infinities. Index constants and booleans are structure, never arguments."""
  v = u.arg
  return u.dtype is not dtypes.index and u.dtype is not dtypes.bool and v != 0 and v != 1 and v != -1 and v - v == 0
