"""traced: the graphs of a traced function (mt.jit), compiled once and run on each call's arrays without a walk.

jit.py calls the function on placeholder leaves (leaves.placeholder) and hands the graphs of its results here.
`Traced` binds the placeholders to one call's arrays, finds the program as realize does (realize.lookup: from
memory, from its plan on disk, or compiled) and records which program input is which argument; the others (the
constants the function read, lifted numbers) are kept. A call then costs the program's run: no graph is built,
walked or keyed. The mode (checked, tier) is read at each call, and another mode looks its program up again. A
hot symbolic program specializes as under realize (realize.chosen), on the graph bound to that call's arrays.
"""
from __future__ import annotations
import numpy as np
from minitensor.backend import realize
from minitensor.backend.leaves import buffer_of
from minitensor.backend.uop import Ops, UOp


class Traced:
  """Graphs over placeholder BUFFER leaves `inputs` (one per argument array, in order), run on arrays."""
  __slots__ = ("graph", "inputs", "shapes", "state")

  def __init__(self, graph: list[UOp], inputs: list[UOp]):
    self.graph, self.inputs = graph, inputs
    self.shapes = [g.shape for g in graph]
    self.state: tuple | None = None       # (mode, program, sizes, argument slots, fixed inputs, aliased outputs)

  def bind(self, arrays: list[np.ndarray]) -> tuple[list[UOp], dict[UOp, int]]:
    """The graphs over BUFFER leaves holding `arrays`, and each such leaf's argument position."""
    bufs = [buffer_of(a) for a in arrays]
    graph = list(UOp(Ops.SINK, tuple(self.graph)).substitute(dict(zip(self.inputs, bufs))).src)
    return graph, {b: k for k, b in enumerate(bufs)}

  def _graph(self, arrays: list[np.ndarray]) -> tuple[list[UOp], list[UOp]]:
    graph = realize.canonical_graph(self.bind(arrays)[0])
    return graph, realize.structure(graph)[1]

  def _find(self, arrays: list[np.ndarray], mode) -> tuple:
    graph, where = self.bind(arrays)
    prog, leaves, sizes = realize.lookup(graph, mode)
    slots = tuple([(k, where[u]) for k, u in enumerate(leaves) if u in where])
    fixed = [None if u in where else a for u, a in zip(leaves, realize.arrays_of(leaves))]
    n = len(leaves)
    # an output that is one of the program's inputs (f returned an argument, or a constant) is copied: a result
    # never aliases an argument's memory or the trace's constants
    aliased = tuple([k for k, o in enumerate(prog.plan.outputs) if o < n])
    self.state = (mode, prog, sizes, slots, fixed, aliased)
    return self.state

  def run(self, arrays: list[np.ndarray], mode=None) -> list[np.ndarray]:
    """The graphs' values (C-contiguous arrays of their shapes) with the placeholders bound to `arrays` (each
    C-contiguous, of its placeholder's dtype and size), in `mode` (realize.modes(): the environment's, by default)."""
    if mode is None: mode = realize.modes()
    if (st := self.state) is None or st[0] is not mode: st = self._find(arrays, mode)
    _, prog, sizes, slots, fixed, aliased = st
    if prog.want is not None or prog.special:
      prog, sizes = realize.chosen(prog, sizes, mode, lambda: self._graph(arrays))
    inputs = list(fixed)
    for k, i in slots: inputs[k] = arrays[i]
    res = [r.reshape(s) for r, s in zip(prog(inputs, sizes), self.shapes)]
    for k in aliased: res[k] = res[k].copy()
    return res
