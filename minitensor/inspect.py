"""Inspection: what minitensor will run for a Tensor, and the graph it recorded.

    explain(t)    the schedule of t's realization: kernels with their C, loop-iteration counts and buffers
    to_dot(t)     Graphviz text of t's UOp graph

MINITENSOR_DEBUG=1 logs one line per kernel run through the `minitensor` logger (name, output shape, time,
GB/s of the buffers it touched, and whether it came from the cache or how long compiling took); =2 adds the
C source of each compiled translation unit. Silence it with logging.getLogger("minitensor").setLevel(...).
"""
from __future__ import annotations
from typing import NamedTuple
from minitensor.backend.uop import Ops, UOp


class KernelInfo(NamedTuple):
  """One kernel of a realization: its name, output shape and dtype, loop iterations, the buffers it reads and
  writes, its C source, the lowering that made it and the Opts actions applied."""
  name: str
  shape: tuple[int, ...]
  dtype: str
  iterations: int
  reads: tuple[int, ...]
  writes: int
  source: str
  lowering: str = "loops"            # the lowerings.py entry that lowered it
  opts: tuple = ()                   # the Opts actions applied (opt.py)


class Explanation(NamedTuple):
  """The schedule of a realization: kernels in run order, buffers (inputs, then intermediates and outputs)."""
  kernels: tuple[KernelInfo, ...]
  inputs: tuple[tuple[tuple[int, ...], str], ...]
  buffers: tuple[tuple[int, str], ...]
  outputs: tuple[int, ...]

  @property
  def total_iterations(self) -> int: return sum(k.iterations for k in self.kernels)

  def __str__(self) -> str:
    n_in = len(self.inputs)
    lines = [f"{len(self.kernels)} kernel(s), {self.total_iterations:,} loop iterations"]
    lines += [f"  input  buf{i}: {s} {d}" for i, (s, d) in enumerate(self.inputs)]
    lines += [f"  {'output' if n_in + i in self.outputs else 'temp  '} buf{n_in + i}: {n} x {d}"
              for i, (n, d) in enumerate(self.buffers)]
    for k in self.kernels:
      opts = "".join(f", {o!r}" for o in k.opts)
      lines.append(f"\n{k.name}: {k.shape} {k.dtype}, reads {', '.join(f'buf{r}' for r in k.reads)} -> buf{k.writes}, "
                   f"{k.iterations:,} iterations, {k.lowering}{opts}")
      lines.append(k.source.rstrip())
    return "\n".join(lines)


def explain(*tensors) -> Explanation:
  """The schedule minitensor runs to realize `tensors` (already realized ones are loaded, not recomputed). A small
  graph is lowered in its canonical form (backend/canonical.py), so its kernels' shapes have no axes of 1 and
  merge the axes that move together: softmax over the last axis of (3, 4, 5) runs a (12, 5) kernel.

  Parameters
  ----------
  *tensors : Tensor

  Returns
  -------
  Explanation
      kernels (name, shape, iteration count, C source, buffers read and written), buffers, outputs;
      str() of it is a readable report.
  """
  tensors = tuple(t for t in tensors if t._realized() is None)
  if not tensors: return Explanation((), (), (), ())
  from minitensor.backend.realize import scheduled  # (the compiler is imported on first use)
  s, arrays = scheduled([t.uop for t in tensors])
  ks = tuple(KernelInfo(k.name, k.ast.shape, k.ast.dtype.name, k.program.iterations,
                        tuple(x for x in k.slots if x != k.out), k.out, k.program.render(k.name), k.program.kind,
                        k.program.opts) for k in s.kernels)
  return Explanation(ks, tuple((a.shape, a.dtype.name) for a in arrays), tuple((n, d.name) for n, d in s.buffers),
                     s.outputs)


def to_dot(t) -> str:
  """Graphviz (dot) text of the UOp graph behind a Tensor (or of a UOp).

  Parameters
  ----------
  t : Tensor or UOp

  Returns
  -------
  str
  """
  root = t if isinstance(t, UOp) else t.uop
  nodes = root.toposort()
  ids = {u: f"n{k}" for k, u in enumerate(nodes)}
  lines = ["digraph minitensor {", "  node [shape=box, fontname=monospace, fontsize=10];"]
  for u in nodes:
    arg = "" if u.arg is None else f"\\n{u.arg.size if u.op is Ops.RANGE else u.arg}"
    label = f"{u.op.name}{arg}\\n{u.dtype.name} {u.shape}".replace('"', "'")
    lines.append(f'  {ids[u]} [label="{label}"];')
    lines += [f"  {ids[s]} -> {ids[u]};" for s in u.src]
  lines.append("}")
  return "\n".join(lines)
