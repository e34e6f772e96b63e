"""debug: run one lowered kernel by hand, for tests and experiments (the library itself runs schedules through
realize.py). Each helper crosses stages on purpose, so it lives here and no stage imports another for it.

    run_c(prog, bufs)          renders (if given a SINK), compiles and calls one kernel on {slot: ndarray} (and the
                               values of a symbolic kernel's sizes)
    run_shaped(root, inputs)   lowers a shaped graph over BUFFER slots 0..n-1, runs it, returns the result
    new_nodes(fn)              the UOps one call of fn creates (graph building's cost, in nodes)
"""
from __future__ import annotations
import gc
import numpy as np
from minitensor.backend import tiers, uop
from minitensor.backend.dtype import dtypes
from minitensor.backend.linearize import variables
from minitensor.backend.rangeify import lower
from minitensor.backend.ranges import Ctx, Opts
from minitensor.backend.render_c import render_c
from minitensor.backend.runtime import compile_c, native
from minitensor.backend.uop import AxisType, Ops, UOp, buf, prod


def run_c(prog: UOp | str, buffers: dict[int, np.ndarray], name: str = "kernel", sizes: tuple[int, ...] = ()) -> None:
  """Run one kernel on {slot: ndarray}. `prog` is a lowered SINK (rendered here, built by tier 0's compiler unless
  it has threaded loops) or C source defining `name` (built at tier 1's flags).
  Buffers must be C-contiguous, of the BUFFER's dtype and at least its size; they are used in place. sizes: the
  values of a symbolic kernel's VARs by index (a SINK's: those it uses are passed after the buffers)."""
  if isinstance(prog, UOp):
    nodes = prog.toposort()
    bufs = {u.arg.slot: u for u in nodes if u.op is Ops.BUFFER}
    written = {u.src[0].src[0].arg.slot for u in nodes if u.op is Ops.STORE and u.src[0].src[0].op is Ops.BUFFER}
    for s, b in bufs.items():
      if s not in buffers: raise ValueError(f"run_c: no array for buffer slot {s}")
      a = buffers[s]
      if not isinstance(a, np.ndarray) or not a.flags.c_contiguous or a.dtype != b.dtype.np or a.size < b.arg.shape[0]:
        raise ValueError(f"run_c: slot {s} needs a contiguous {b.dtype.name} array of {b.arg.shape[0]} elements, "
                         f"got {getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
      if s in written and not a.flags.writeable:
        raise ValueError(f"run_c: slot {s} is written but the array is read-only")
    slots = sorted(bufs)
    ints = [sizes[v] for v in variables(prog)]
    # tier 0's compiler, as a small program's first run (tcc builds in milliseconds where -O3 takes tens), unless the
    # kernel has threaded loops: they run threaded, at tier 1
    threaded = any(u.op is Ops.RANGE and u.arg.kind is AxisType.THREAD for u in nodes)
    cc, flags = tiers.toolchain(int(threaded), any(u.dtype.is_complex or u.dtype is dtypes.float16 for u in nodes))
    k = compile_c(render_c(prog, name), flags, cc)[name]
  else:
    slots, ints = sorted(buffers), list(sizes)
    k = compile_c(prog)[name]
  k.fn(*[native().from_buffer(buffers[s]) for s in slots], *ints)


def run_shaped(root: UOp, inputs: list[np.ndarray], opts: Opts | None = None) -> np.ndarray:
  """Lower a shaped graph whose BUFFERs are slots 0..len(inputs)-1, run it, return the result."""
  n = prod(root.shape)
  res = np.zeros(max(n, 1), root.dtype.np)
  if n:
    out = buf(len(inputs), n, root.dtype)
    run_c(lower(root, out, Ctx(opts=opts or Opts())),
          {**{i: np.ascontiguousarray(a) for i, a in enumerate(inputs)}, len(inputs): res})
  return res[:n].reshape(root.shape)


def new_nodes(fn) -> int:
  """The UOps one call of fn creates: the growth of the cons table while fn's result is held."""
  gc.collect()
  n = uop.live_nodes()
  r = fn()
  k = uop.live_nodes() - n
  del r
  return k
