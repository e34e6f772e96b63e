"""kernelize: cut a shaped graph into kernels, so no work is repeated and everything else is fused.

Lowering a whole graph as one loop nest is always correct, but rangeify evaluates a node once per index it
is asked for. A REDUCE's accumulator lives in every loop its index mentions (and the loops around those),
so a reduce read at indices that vary over another loop is recomputed in every iteration of that loop:
(A @ B) @ C lowered inline costs N^4 multiply-adds instead of 2 N^3.

The cost model is the loop-iteration count. For a REDUCE u lowered inline,

    inline(u)   = sum over its accumulators of  prod(sizes of the loops around the accumulator) * prod(reduce axes)
    staged(u)   = prod(u.shape) * prod(reduce axes)          (computed once into a buffer, then loaded)

and u is materialized (cut into a kernel of its own) when inline(u) > staged(u): some element is computed
more than once. A REDUCE reached from two outputs of one realize is materialized too (shared work is done
once), an output used by another output is loaded from its buffer, and STAGE marks a cut explicitly.
Everything else fuses: elementwise chains, a reduce with its producers and consumers, softmax and layernorm
along the last axis (their reductions become sibling loops inside the row loop, where each runs once per row).

schedule(outputs) returns the kernels in dependency order, each a lowered SINK over kernel-local buffer
slots (with the Opts opt.py chooses), plus the intermediate buffers to allocate; `iterations` (from
linearize) counts the loop iterations of a lowered kernel: the work accounting tests and `explain` use.
"""
from __future__ import annotations
from dataclasses import dataclass
from minitensor.backend.uop import UOp, Ops, ParamArg, buf, prod
from minitensor.backend.rangeify import Ctx, Opts, lower
from minitensor.backend.linearize import iterations
from minitensor.backend.opt import choose_opts


@dataclass(frozen=True)
class KernelSpec:
  """One kernel: its lowered program over local slots 0..n-1, and the schedule buffer of each local slot."""
  name: str
  ast: UOp                    # the shaped root it computes (for inspection)
  sink: UOp                   # lowered, kernel-local slots
  slots: tuple[int, ...]      # local slot k reads/writes schedule buffer slots[k]
  out: int                    # the schedule buffer it writes


@dataclass(frozen=True)
class Schedule:
  """Kernels in run order over schedule buffers: inputs 0..n_inputs-1, then one buffer per staged node."""
  kernels: tuple[KernelSpec, ...]
  n_inputs: int
  buffers: tuple[tuple[int, object], ...]     # (size, DType) of every schedule buffer after the inputs
  outputs: tuple[int, ...]                    # the schedule buffer of each output


def _inline_cost(ctx: Ctx, out_ranges: list[UOp]) -> dict[UOp, int]:
  """Per REDUCE, the iterations its inline accumulators cost (see the module docstring)."""
  around: dict[UOp, frozenset] = {r: frozenset(out_ranges[:k]) for k, r in enumerate(out_ranges)}
  def closure(rs: frozenset) -> frozenset:
    return rs.union(*(around.get(r, frozenset()) for r in rs))
  cost: dict[UOp, int] = {}
  for (u, rs), parts in ctx.reduce_ranges.items():
    enclosing = closure(rs)
    for r, _ in parts:
      if r.op is Ops.RANGE: around[r] = enclosing
    rsize = prod(s for s in u.src[0].shape[len(u.src[0].shape) - u.arg[1]:])
    cost[u] = cost.get(u, 0) + prod(r.arg.size for r in enclosing) * rsize
  return cost


def _lower_kernel(root: UOp, staged_bufs: dict[UOp, UOp], out: UOp, optimize: bool) -> tuple[UOp, Ctx]:
  body = root.src[0] if root.op is Ops.STAGE else root
  body = body.substitute({k: v for k, v in staged_bufs.items() if k is not root})
  ctx = Ctx(opts=choose_opts(body) if optimize else Opts())
  return lower(body, out, ctx), ctx


def _localize(sink: UOp) -> tuple[UOp, tuple[int, ...]]:
  """Renumber a kernel's BUFFER slots 0..k-1 (in order of the schedule slots), so equal kernels share code."""
  bufs = sorted({u for u in sink.toposort() if u.op is Ops.BUFFER}, key=lambda b: b.arg.slot)
  mapping = {b: UOp(Ops.BUFFER, (), ParamArg(k, b.arg.dtype, b.arg.shape)) for k, b in enumerate(bufs)}
  return sink.substitute(mapping), tuple(b.arg.slot for b in bufs)


def schedule(outputs: list[UOp], n_inputs: int, optimize: bool = True) -> Schedule:
  """Kernels for `outputs`, whose BUFFER leaves are schedule slots 0..n_inputs-1."""
  nodes = UOp(Ops.SINK, tuple(outputs)).toposort()
  reach: dict[UOp, set[int]] = {}
  for k, o in enumerate(outputs):
    for u in o.toposort(): reach.setdefault(u, set()).add(k)
  staged: list[UOp] = [u for u in nodes if u.op is Ops.STAGE]
  staged += [u for u in nodes if u.op is Ops.REDUCE and len(reach.get(u, ())) > 1]
  for o in outputs:
    if o not in staged and o.op is not Ops.BUFFER: staged.append(o)
  while True:
    order = [u for u in nodes if u in set(staged)]
    slot = {u: n_inputs + k for k, u in enumerate(order)}
    bufs = {u: buf(slot[u], max(prod(u.shape), 1), u.dtype).reshape(u.shape) for u in order}
    kernels, new = [], None
    for u in order:
      if prod(u.shape) == 0: continue
      out = buf(slot[u], prod(u.shape), u.dtype)
      sink, ctx = _lower_kernel(u, bufs, out, optimize)
      loops = sorted((r for r in sink.toposort() if r.op is Ops.RANGE and r.arg.kind.name != "REDUCE"), key=lambda r: r.arg.idx)
      for r, c in _inline_cost(ctx, loops).items():
        if r not in bufs and c > prod(r.shape) * prod(r.src[0].shape[len(r.shape):]):
          new = r
          break
      if new is not None: break
      local, slots = _localize(sink)
      kernels.append(KernelSpec(f"k{len(kernels)}", u, local, slots, slot[u]))
    if new is None: break
    staged.append(new)
  outs = tuple(o.arg.slot if o.op is Ops.BUFFER else slot[o] for o in outputs)
  return Schedule(tuple(kernels), n_inputs, tuple((max(prod(u.shape), 1), u.dtype) for u in order), outs)
