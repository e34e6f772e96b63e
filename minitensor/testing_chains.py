"""Movement chains: hypothesis draws of movement steps (reshape, transpose, broadcast_to, basic indexing, pad, flip,
concatenate, stack, squeeze, expand_dims) for an input shape; the second part of `minitensor.testing`, which
re-exports the public names here (import that module).

A Step runs on a Tensor with minitensor's function and on an ndarray with NumPy's function of the same name, so one
chain drives both sides of `assert_matches_numpy`, and its repr reads like the code that fails. movement_chains
draws only valid steps: each is built for the current shape and applied to a dummy int8 array of it with NumPy,
which gives the next shape; a step whose result would pass MAX_CHAIN_SIZE elements or MAX_CHAIN_NDIM axes is
dropped. The Step classes _Call, _Index and _Join are private, but tests build chains by hand with them.
"""
from __future__ import annotations
from typing import Sequence
import numpy as np
from hypothesis import strategies as st
import minitensor as mt
from minitensor.testing_strategies import axes

__all__ = ["movement_chains", "MovementChain", "Step"]

MAX_CHAIN_SIZE = 1024     # movement_chains keeps every intermediate at most this many elements
MAX_CHAIN_NDIM = 6


def _ns(x):
  """minitensor for a Tensor, NumPy for anything else."""
  return mt if isinstance(x, mt.Tensor) else np


def _fmt_index(idx: tuple) -> str:
  def one(i) -> str:
    if i is None: return "None"
    if i is Ellipsis: return "..."
    if isinstance(i, slice):
      s = f"{'' if i.start is None else i.start}:{'' if i.stop is None else i.stop}"
      return s + (f":{i.step}" if i.step is not None else "")
    return repr(i)
  return f"[{', '.join(map(one, idx))}]" if idx else "[()]"


class Step:
  """One movement step: `apply(x)` uses minitensor's function on a Tensor and NumPy's on an ndarray."""
  def apply(self, x): raise NotImplementedError
  def __repr__(self) -> str: raise NotImplementedError


class _Call(Step):
  """ns.name(x, *args, **kwargs)."""
  def __init__(self, name: str, *args, **kwargs):
    self.name, self.args, self.kwargs = name, args, kwargs
  def apply(self, x): return getattr(_ns(x), self.name)(x, *self.args, **self.kwargs)
  def __repr__(self) -> str:
    args = self.args[0] if self.name == "reshape" and self.args[0] else self.args
    return f"{self.name}({', '.join([repr(a) for a in args] + [f'{k}={v!r}' for k, v in self.kwargs.items()])})"


class _Index(Step):
  def __init__(self, idx: tuple): self.idx = idx
  def apply(self, x): return x[self.idx]
  def __repr__(self) -> str: return _fmt_index(self.idx)


class _Join(Step):
  """concatenate or stack of x with x itself, a slice of x (concatenate) or a flip of x (stack)."""
  def __init__(self, name: str, axis, other: tuple | None, first: bool):
    self.name, self.axis, self.other, self.first = name, axis, other, first
  def _other(self, x):
    if self.other is None: return x
    if self.name == "stack": return _ns(x).flip(x, self.other[0])
    return x[self.other]
  def apply(self, x):
    o = self._other(x)
    return getattr(_ns(x), self.name)([x, o] if self.first else [o, x], axis=self.axis)
  def __repr__(self) -> str:
    o = "x" if self.other is None else f"flip(x, {self.other[0]})" if self.name == "stack" \
      else f"x{_fmt_index(self.other)}"
    return f"{self.name}([{'x, ' + o if self.first else o + ', x'}], axis={self.axis!r})"


class MovementChain(Sequence):
  """A sequence of movement Steps drawn for an input shape; `apply(x)` runs them in order.

  Attributes
  ----------
  steps : tuple of Step
  in_shape, out_shape : tuple of int
  """
  def __init__(self, steps: Sequence[Step], in_shape: tuple[int, ...], out_shape: tuple[int, ...]):
    self.steps, self.in_shape, self.out_shape = tuple(steps), tuple(in_shape), tuple(out_shape)
  def apply(self, x):
    """The chain applied to x: a Tensor (minitensor's functions) or an ndarray (NumPy's; the result an ndarray)."""
    for s in self.steps: x = s.apply(x)
    return x if isinstance(x, mt.Tensor) else np.asarray(x)
  def __call__(self, x): return self.apply(x)
  def __getitem__(self, i): return self.steps[i]
  def __len__(self) -> int: return len(self.steps)
  def __repr__(self) -> str: return " -> ".join(map(repr, self.steps)) if self.steps else "identity"


def _factor(n: int) -> list[int]:
  out, p = [], 2
  while p * p <= n:
    while n % p == 0: out.append(p); n //= p
    p += 1
  return out + ([n] if n > 1 else [])


def _slice(draw, n: int) -> slice:
  """A slice of an axis of size n: bounds in and out of range, negative bounds, steps +-1..3."""
  bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
  return slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, 3, -1, -2, -3])))


def _axis(draw, ndim: int) -> int:
  a = draw(st.integers(0, ndim - 1))
  return a - ndim if draw(st.booleans()) else a


def _draw_step(draw, x: np.ndarray) -> list[Step]:
  """One step (two for a broadcast that first inserts a size-1 axis) valid for the dummy array x."""
  s, nd = x.shape, x.ndim
  kinds = ["reshape", "transpose", "broadcast", "index", "flip", "stack", "expand_dims", "squeeze"]
  kinds += ["pad", "concatenate"] if nd else []
  k = draw(st.sampled_from(kinds))
  if k == "reshape":
    n = x.size
    r = draw(st.integers(0 if n == 1 else 1, 4))
    if n == 0: dims = [draw(st.integers(0, 3)) for _ in range(r)]; dims[draw(st.integers(0, r - 1))] = 0
    else:
      dims = [1] * r
      for p in _factor(n): dims[draw(st.integers(0, r - 1))] *= p
      if r and draw(st.booleans()): dims[draw(st.integers(0, r - 1))] = -1
    return [_Call("reshape", tuple(dims))]
  if k == "transpose":
    perm = draw(st.permutations(range(nd)))
    return [_Call("transpose", tuple(a - nd if a and draw(st.booleans()) else a for a in perm))]
  if k == "expand_dims": return [_Call("expand_dims", _axis(draw, nd + 1))]
  if k == "squeeze":
    ones = [a for a in range(nd) if s[a] == 1]
    if not ones or draw(st.booleans()): return [_Call("squeeze")]
    pick = draw(st.lists(st.sampled_from(ones), min_size=1, unique=True))
    ax = tuple(a - nd if draw(st.booleans()) else a for a in pick)
    return [_Call("squeeze", axis=ax[0] if len(ax) == 1 and draw(st.booleans()) else ax)]
  if k == "broadcast":
    pre: list[Step] = []
    if 1 not in s:
      pre = [_Call("expand_dims", _axis(draw, nd + 1))]
      x = pre[0].apply(x)
      s = x.shape
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    target = lead + tuple(draw(st.sampled_from([0, 1, 2, 3, 3])) if m == 1 else m for m in s)
    return pre + [_Call("broadcast_to", target)]
  if k == "index":
    one = lambda m: _slice(draw, m) if draw(st.integers(0, 4)) or not m else draw(st.integers(-m, m - 1))
    lead = draw(st.integers(0, nd))
    # an Ellipsis, then trailing axes
    trail = draw(st.integers(0, nd - lead)) if draw(st.integers(0, 3)) == 0 else None
    items: list = [one(m) for m in s[:lead]]
    if trail is not None: items += [Ellipsis] + [one(m) for m in s[nd - trail:]]
    if draw(st.integers(0, 3)) == 0: items.insert(draw(st.integers(0, len(items))), None)
    return [_Index(tuple(items))]
  if k == "flip":
    ax = draw(axes(nd))
    return [_Call("flip", axis=ax)]
  if k == "pad":
    widths = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nd))
    return [_Call("pad", widths, constant_values=draw(st.sampled_from([0, 1, 5, -0.0, 0.5])))]
  if k == "concatenate":
    if draw(st.integers(0, 7)) == 0: return [_Join("concatenate", None, None, draw(st.booleans()))]
    a = _axis(draw, nd)
    other = None if draw(st.booleans()) else (slice(None),) * (a % nd) + (_slice(draw, s[a]),)
    return [_Join("concatenate", a, other, draw(st.booleans()))]
  # stack: with x itself or with x flipped along its first axis
  other = (0,) if nd and draw(st.booleans()) else None
  return [_Join("stack", _axis(draw, nd + 1), other, draw(st.booleans()))]


@st.composite
def movement_chains(draw, shape: tuple[int, ...], max_steps: int = 6) -> MovementChain:
  """Chains of movement steps for an input of the given shape.

  Each step is one of: reshape (sometimes with a -1), transpose (a random permutation, axes sometimes
  negative), expand_dims, squeeze (all or some size-1 axes), broadcast_to (after inserting a size-1 axis when
  there is none; new leading axes too; size 0 included), basic indexing (slices with random bounds and steps
  +-1..3, integers, None, Ellipsis), pad (constant, per-axis widths), flip (None, an axis or a tuple),
  concatenate (with a copy of itself or a slice of it, or axis=None) and stack (with itself or a flipped copy).
  Every intermediate result has at most MAX_CHAIN_SIZE elements (or twice the input's, if more) and at most
  MAX_CHAIN_NDIM axes (or the input's, if more).

  Parameters
  ----------
  shape : tuple of int
      The shape of the arrays the chain will be applied to.
  max_steps : int
      The most steps a chain has (a broadcast that first inserts an axis counts as one).

  Returns
  -------
  SearchStrategy of MovementChain
      `chain.apply(x)` works on a Tensor (minitensor's functions) and on an ndarray (NumPy's), and its repr
      reads like ``reshape(3, -1) -> transpose((1, 0)) -> [::-2, 1:]``.
  """
  x = np.zeros(shape, np.int8)
  max_size, max_ndim = max(MAX_CHAIN_SIZE, 2 * x.size), max(MAX_CHAIN_NDIM, x.ndim)
  steps: list[Step] = []
  for _ in range(draw(st.integers(0, max_steps))):
    new = _draw_step(draw, x)
    y = x
    for s in new: y = np.asarray(s.apply(y))
    if y.size <= max_size and y.ndim <= max_ndim: steps += new; x = y
  return MovementChain(steps, shape, x.shape)
