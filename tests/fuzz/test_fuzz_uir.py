"""Random loop programs round-trip through the .uir text format: parse(print_uir(g)) is g.

Two sources of programs: a generator of loop-world graphs (nested RANGEs of every kind, index expressions,
LOADs from and STOREs to buffers of every dtype, accumulators with ALLOC/AFTER/END as lower() builds them,
ALU ops, casts and literals that need a dtype suffix or not, special floats), and the kernels minitensor's own
scheduler produces for random Tensor programs (movement chains, elementwise ops and reductions).
"""
from __future__ import annotations
import math
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt
from minitensor.backend.dtype import dtypes
from minitensor.backend.kernelize import schedule
from minitensor.backend.realize import normalize
from minitensor.backend.uir import parse, print_uir
from minitensor.backend.uop import AxisType, Ops, ParamArg, UOp, buf, range_, sink

DATA = [dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64,
        dtypes.float16, dtypes.float32, dtypes.float64]
SPECIAL = [math.nan, -math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1e-05, 0.1, 3.4028234663852886e38]


def literal(draw, d):
  if d.is_bool: return UOp.const(draw(st.booleans()), d)
  if d.is_float:
    return UOp.const(draw(st.one_of(st.sampled_from(SPECIAL), st.floats(width=min(64, 8 * d.itemsize)))), d)
  if d is dtypes.index: return UOp.const(draw(st.integers(-2**40, 2**40)))
  return UOp.const(draw(st.integers(d.min, d.max)), d)


class Loops:
  """What a program being drawn has: its ranges and buffers, and the draw function."""
  def __init__(self, draw):
    self.draw = draw
    n = draw(st.integers(1, 4))
    idxs = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n, unique=True))
    self.ranges = [range_(draw(st.integers(1, 9)), i, draw(st.sampled_from(list(AxisType)))) for i in idxs]
    self.bufs = [buf(s, draw(st.integers(1, 64)), draw(st.sampled_from(DATA))) for s in range(draw(st.integers(1, 4)))]
    self.allocs = 0

  def index(self, rs, depth: int = 3) -> UOp:
    """An index expression over the ranges rs: sums, products, // and % by constants and ranges, max, where."""
    d = self.draw
    k = d(st.integers(0, 7)) if depth > 0 else 0
    if k == 0: return d(st.sampled_from(rs)) if rs and d(st.booleans()) else UOp.const(d(st.integers(-20, 2**33)))
    a = self.index(rs, depth - 1)
    if k == 1: return a + self.index(rs, depth - 1)
    if k == 2: return a * d(st.integers(-9, 9))
    if k == 3: return a // d(st.sampled_from([-7, -2, 2, 3, 16]))
    if k == 4: return a % d(st.sampled_from([-5, 2, 3, 8]))
    if k == 5: return a.maximum(self.index(rs, depth - 1))
    if k == 6: return (a < self.index(rs, depth - 1)).where(a, self.index(rs, depth - 1))
    return a // (d(st.sampled_from(rs)) + 1) if rs else a

  def value(self, rs, d, depth: int = 2) -> UOp:
    """A scalar of dtype d: loads at index expressions, literals, ALU ops, comparisons, casts, where."""
    dr = self.draw
    k = dr(st.integers(0, 5)) if depth > 0 else dr(st.integers(0, 1))
    if k == 0: return literal(dr, d)
    if k == 1:
      b = dr(st.sampled_from(self.bufs))
      v = b.index(self.index(rs, 2)).load()
      return v if v.dtype is d else v.cast(d)
    if k == 2 and not d.is_bool:
      ops = [Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN] + ([Ops.FDIV, Ops.POW] if d.is_float else [Ops.FLOORDIV, Ops.FLOORMOD])
      op = dr(st.sampled_from(ops))
      return UOp(op, (self.value(rs, d, depth - 1), self.value(rs, d, depth - 1)))
    if k == 3 and d.is_float:
      return UOp(dr(st.sampled_from([Ops.EXP, Ops.SQRT, Ops.SIN, Ops.TRUNC, Ops.ABS])), (self.value(rs, d, depth - 1),))
    if k == 4:
      e = dr(st.sampled_from(DATA))
      c = UOp(dr(st.sampled_from([Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ])), (self.value(rs, e, depth - 1),
                                                                       self.value(rs, e, depth - 1)))
      return c if d.is_bool else c.where(self.value(rs, d, depth - 1), self.value(rs, d, depth - 1))
    return self.value(rs, dr(st.sampled_from(DATA)), depth - 1).cast(d)

  def accumulate(self, outer, d) -> UOp:
    """acc = identity; for r: acc = acc + value; the final acc -- as lower() builds a reduction."""
    r = range_(self.draw(st.integers(1, 9)), 10 + self.allocs, AxisType.REDUCE)
    acc = UOp(Ops.ALLOC, (), ParamArg(self.allocs, d, (1,)))
    self.allocs += 1
    a = acc.after(*outer)
    init = a.index(0).store(literal(self.draw, d))
    ia = a.after(init, r).index(0)
    new = ia.load().maximum(self.value(outer + [r], d)) if d.is_bool else ia.load() + self.value(outer + [r], d)
    done = ia.store(new).end(r)
    return a.after(done).index(0).load()

  def store(self) -> UOp:
    rs = self.draw(st.lists(st.sampled_from(self.ranges), unique=True))
    rs.sort(key=lambda r: r.arg.idx)
    b = self.draw(st.sampled_from(self.bufs))
    v = self.accumulate(rs, b.dtype) if self.draw(st.integers(0, 2)) == 0 else self.value(rs, b.dtype)
    return b.index(self.index(rs)).store(v).end(*rs)


@st.composite
def loop_programs(draw) -> UOp:
  """A SINK of 1-3 stores, each in the loops of its own subset of the ranges."""
  p = Loops(draw)
  return sink(*(p.store() for _ in range(draw(st.integers(1, 3)))))


@given(loop_programs())
def test_loop_programs_round_trip(g):
  text = print_uir(g)
  assert parse(text) is g
  assert print_uir(parse(text)) == text


@st.composite
def scheduled_kernels(draw) -> list[UOp]:
  """The lowered kernels minitensor schedules for a random movement chain, an elementwise op and a reduction."""
  shape = draw(mtt.shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
  x = mt.asarray(np.zeros(shape, draw(mtt.dtypes())))
  chain = draw(mtt.movement_chains(shape, max_steps=3))
  y = chain.apply(x)
  y = y + draw(st.sampled_from([1, True, 2.5]))
  if y.ndim and draw(st.booleans()): y = y.sum(axis=draw(mtt.axes(y.ndim, allow_none=False)))
  if 0 in y.shape: return []
  norm, arrays = normalize([y.uop])
  return [k.sink for k in schedule(list(norm), len(arrays)).kernels]


@given(scheduled_kernels())
def test_scheduled_kernels_round_trip(ks):
  for k in ks: assert parse(print_uir(k)) is k
