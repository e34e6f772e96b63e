"""leaves: the frontend's realized data as BUFFER leaves, and which ndarrays are a user's borrowed memory.

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
  _borrowed[id(a)] = weakref.ref(a, lambda _, k=id(a): _borrowed.pop(k, None))
  return a


def is_borrowed(a: np.ndarray) -> bool:
  return a is not None and (r := _borrowed.get(id(a))) is not None and r() is a
