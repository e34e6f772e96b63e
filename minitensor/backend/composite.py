"""Composite ops: concatenation, padding and flipping built from the primitives.

    move_axis, concat2, concat     STACK + PERMUTE + RESHAPE
    zeros_like                     CONST + RESHAPE + EXPAND
    pad_axis, pad                  concatenate with zeros, shrink the excess (doubling when wider than the axis)
    anti_eye, flip_axis            reversal as a product with the anti-identity (the "diagonal trick"), O(n^2)
    flip_stack                     reversal as a STACK of n one-element SHRINKs (exercise 5): O(n) nodes
    pad_guarded, flip              the primitive PAD (exercise 9, a clamped and guarded load) and FLIP

Which the library uses (measured with benchmarks/bench_composite.py on this machine: float32, median of 5
kernel calls after a warm-up, compile time apart; the machine was shared, so figures vary by ~30 %):

    pad (1024, 1024) by 1 on each side    composite pad 0.69 ms            primitive PAD 0.33 ms
    flip (1024,)                          anti_eye flip_axis 0.064 ms      flip_stack 0.003 ms, but 27 s to compile
                                          primitive FLIP 0.003 ms (35 ms to compile)
    flip (4096,)                          anti_eye flip_axis 0.89 ms (n^2 work)
                                          flip_stack: stopped after a minute of compiling

The composite PAD evaluates both sides of each doubling STACK and keeps the // and % of the doubled shape in
its index; the primitive PAD is one clamped load and one select per padded axis. Both composite flips are
quadratic (each output element sums over, or selects along, the whole axis: a WHERE evaluates both branches,
and flip_stack's chain of n selects makes C the compiler needs seconds for). So the library uses the
primitives PAD and FLIP (`pad_guarded`, `flip`); the composites stay as executable specifications and
are tested against NumPy like everything else.
"""
from __future__ import annotations
from minitensor.backend.uop import Ops, UOp


def move_axis(x: UOp, src: int, dst: int) -> UOp:
  """x with axis `src` moved to position `dst`, the others in order."""
  order = [k for k in range(len(x.shape)) if k != src]
  order.insert(dst, src)
  return x.permute(tuple(order))


def concat2(a: UOp, b: UOp, axis: int) -> UOp:
  """Concatenate two same-shaped tensors along `axis`: STACK, move the new axis next to `axis`, merge."""
  return concat([a, b], axis)


def concat(xs: list[UOp], axis: int) -> UOp:
  """Concatenate same-shaped tensors along `axis` with one STACK."""
  s = UOp(Ops.STACK, tuple(xs))                                   # (k, *shape)
  s = move_axis(s, 0, axis)                                       # (..., k, n, ...)
  shape = list(xs[0].shape)
  shape[axis] *= len(xs)
  return s.reshape(tuple(shape))


def zeros_like(x: UOp) -> UOp: return x.const_like(0)


def _shrink_axis(x: UOp, axis: int, b: int, e: int) -> UOp:
  return x.shrink(tuple((b, e) if k == axis else (0, s) for k, s in enumerate(x.shape)))


def pad_axis(x: UOp, axis: int, before: int, after: int) -> UOp:
  """Zero-pad one axis by doubling with zeros and shrinking back."""
  if x.shape[axis] == 0:
    shape = tuple(before + after if k == axis else s for k, s in enumerate(x.shape))
    return UOp.const(0, x.dtype).reshape((1,) * len(shape)).expand(shape) if shape else UOp.const(0, x.dtype)
  while after > 0:
    n = x.shape[axis]
    x = _shrink_axis(concat2(x, zeros_like(x), axis), axis, 0, n + min(after, n))
    after -= min(after, n)
  while before > 0:
    n = x.shape[axis]
    x = _shrink_axis(concat2(zeros_like(x), x, axis), axis, n - min(before, n), 2 * n)
    before -= min(before, n)
  return x


def pad(x: UOp, arg: tuple[tuple[int, int], ...]) -> UOp:
  """Zero padding from primitives only."""
  for axis, (b, a) in enumerate(arg): x = pad_axis(x, axis, b, a)
  return x


def anti_eye(n: int, dtype) -> UOp:
  """M[i, j] = (i + j == n - 1), from one-hot + the expand/reshape/shrink "diagonal trick".

  u is one-hot at n-1, length 2n-1. Expand u to (n+1, 2n-1), flatten, keep n*2n elements, view as (n, 2n):
  element (i, j) is u[(2n*i + j) mod (2n-1)] = u[i + j] because 2n = 1 (mod 2n-1) and i + j <= 2n-2.
  """
  if n == 1: return UOp.const(1, dtype).reshape((1, 1))
  u = pad_axis(UOp.const(1, dtype).reshape((1,)), 0, n - 1, n - 1)              # (2n-1,)
  m = u.reshape((1, 2 * n - 1)).expand((n + 1, 2 * n - 1)).reshape(((n + 1) * (2 * n - 1),))
  m = m.shrink(((0, n * 2 * n),)).reshape((n, 2 * n))
  return m.shrink(((0, n), (0, n)))


def flip_axis(x: UOp, axis: int) -> UOp:
  """Reverse one axis: y[i] = sum_j x[j] * [i + j == n-1]. O(n^2) work, only primitives."""
  n = x.shape[axis]
  if n <= 1: return x
  xl = move_axis(x, axis, len(x.shape) - 1)                                    # (..., n)
  lead = xl.shape[:-1]
  xe = xl.reshape(lead + (1, n)).expand(lead + (n, n))
  m = anti_eye(n, x.dtype).reshape((1,) * len(lead) + (n, n)).expand(lead + (n, n))
  y = (xe * m).reduce(Ops.ADD, 1)                                               # (..., n)
  return move_axis(y, len(x.shape) - 1, axis)


def flip_stack(x: UOp, axis: int) -> UOp:
  """Reverse one axis as a STACK of its n elements in reverse order: O(n) nodes, exact for every value."""
  n = x.shape[axis]
  if n <= 1: return x
  parts = [_shrink_axis(x, axis, n - 1 - k, n - k) for k in range(n)]          # each of size 1 on `axis`
  return move_axis(UOp(Ops.STACK, tuple(parts)), 0, axis).reshape(x.shape)


def pad_guarded(x: UOp, arg: tuple[tuple[int, int], ...], value=0) -> UOp:
  """Constant padding as the primitive PAD: rangeify clamps the load index and selects `value` outside."""
  return x.pad(arg, value)


def flip(x: UOp, axes: tuple[int, ...]) -> UOp:
  """Reverse the given axes with the primitive FLIP (index n-1-i)."""
  return x.flip(axes)
