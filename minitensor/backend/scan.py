"""scan: lowering a SCAN, the one shaped op whose elements depend on each other.

    SCAN(op, axis)(x)[..., j, ...]  =  out[..., j - 1, ...] op x[..., j, ...]      (j > 0; out[..., 0, ...] = x)

A scan is always a kernel of its own (the kernelizer stages it); its source x fuses into it as usual. The kernel
walks the output in row-major order and reads the previous prefix back from the output buffer, so every prefix
is combined in NumPy's sequential order (an overflow to inf stays inf, NaN stays NaN, float rounding is
NumPy's bit for bit). Row-major order puts the scan loop outside the loops of the later axes: a scan along
axis 0 of (n, m) runs m independent chains per step (vectorized), reading the previous row back; one along the
last axis runs a single chain per row, its running value kept in an accumulator (a register, not a reload).
The first step combines with the identity instead of a load: -0.0 + x and 1 * x are x exactly (signed zeros too),
except a complex 1 * x (NumPy's product makes NaN of 0 * inf): a complex product scan selects x itself there.
"""
from __future__ import annotations
from minitensor.backend.rangeify import rangeify
from minitensor.backend.ranges import Ctx, ranges_in, ravel
from minitensor.backend.reduce_rule import combine, identity
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import AxisType, Ops, UOp, prod, sink

THREAD_WORK = 1 << 17     # as opt.py: a scan of at least this many elements runs its outermost free axis in threads


def lower_scan(root: UOp, out: UOp, ctx: Ctx) -> UOp:
  """The SINK storing SCAN `root` (its source rangeified by the usual rules) into BUFFER `out`."""
  op, ax = root.arg
  shape = root.shape
  # the outermost axis before the scan axis runs in threads (each thread owns whole chains)
  thread = next((k for k in range(ax) if shape[k] > 1), None) if prod(shape) >= THREAD_WORK else None
  idx = tuple(ctx.rng(s, AxisType.THREAD if k == thread else AxisType.LOOP, sym=True) if s > 1 else UOp.const(0)
              for k, s in enumerate(shape))
  x = rangeify(root.src[0], idx, ctx)
  d = root.dtype
  first = (complex(-0.0, -0.0) if d.is_complex else -0.0) if op is Ops.ADD and d.kind in "fc" else identity(op, d)
  sizes = ctx.sizes_of(shape)
  j, at = idx[ax], out.index(ravel(idx, sizes))
  raw = d.is_complex and op is Ops.MUL
  if j.op is Ops.CONST:
    return simplify(sink(at.store(x if raw else combine(op, UOp.const(first, d), x)).end(*ranges_in(*idx))))
  outer = ranges_in(*idx[:ax])
  if all(s == 1 for s in shape[ax + 1:]):
    # the scan axis is the innermost loop: the running value stays in a register (an accumulator)
    acc = ctx.alloc(d).after(*outer)
    accl = acc.after(acc.index(0).store(UOp.const(first, d)), j)
    v = combine(op, accl.index(0).load(), x)
    if raw: v = (j >= 1).where(v, x)
    body = UOp(Ops.SINK, (accl.index(0).store(v), at.store(v)))
  else:
    # later axes are inner loops: the previous prefix is read back from the output (independent chains)
    back = ravel(idx[:ax] + ((j - 1).maximum(0),) + idx[ax + 1:], sizes)
    # the AFTER keeps the load in the innermost loop: it reads what the previous iteration stored
    prev = (j >= 1).where(out.after(*ranges_in(*idx)).index(simplify(back)).load(), UOp.const(first, d))
    body = at.store((j >= 1).where(combine(op, prev, x), x) if raw else combine(op, prev, x))
  return simplify(sink(body.end(*ranges_in(*idx))))
