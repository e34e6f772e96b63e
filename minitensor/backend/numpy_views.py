"""numpy_views: graphs that only move the data of one realized value, answered by NumPy views (no compile).

realize asks `numpy_view` first: `int(x[3])`, `x.tolist()`, `repr(x)` or `x.T` of a realized tensor cost no
compiler call. A non-contiguous view larger than VIEW_COPY_LIMIT elements is left to a compiled copy (faster than
NumPy's); `base_of` is the node a chain of movements moves, `leaf_of` its data.
"""
from __future__ import annotations
import numpy as np
from minitensor.backend.uop import MOVEMENT, Ops, UOp

VIEW_COPY_LIMIT = 1 << 16      # larger non-contiguous views are copied by a compiled kernel (faster than NumPy)


def base_of(u: UOp) -> UOp:
  """The node whose value a graph of movement ops moves (a realized one, or the first that is not a movement)."""
  while u.op in MOVEMENT and u.data is None: u = u.src[0]
  return u


def leaf_of(u: UOp) -> np.ndarray | None: return base_of(u).data


_CONST, _PAD, _RESHAPE, _EXPAND, _PERMUTE, _FLIP = Ops.CONST, Ops.PAD, Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.FLIP


def numpy_view(u: UOp) -> np.ndarray | None:
  """u as a NumPy view when u only moves the data of one realized value (or of a constant); else None."""
  moves = []
  while u.data is None and u.op in MOVEMENT:
    moves.append(u)
    u = u.src[0]
  if u.data is not None: x = u.data if u.data.shape == u.shape else u.data.reshape(u.shape)   # (a leaf's own shape)
  elif u.op is _CONST: x = np.array(u.arg, dtype=u.dtype.np)
  else: return None
  for m in reversed(moves):
    if m.op is _PAD:
      if x.size > VIEW_COPY_LIMIT: return None
      x = np.pad(x, m.arg[0], constant_values=m.arg[1])
    elif m.op is _RESHAPE: x = x.reshape(m.arg)
    elif m.op is _EXPAND: x = np.broadcast_to(x, m.arg)
    elif m.op is _PERMUTE: x = x.transpose(m.arg)
    elif m.op is _FLIP: x = np.flip(x, m.arg)
    else: x = x[tuple(slice(b, e) for b, e in m.arg)]
  return x
