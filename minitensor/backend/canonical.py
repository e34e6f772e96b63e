"""canonical: a graph's shapes in canonical form, so that graphs differing only in how their values' axes are cut
are one program.

    canonical(outputs, limit)   the outputs' graph with size-1 axes dropped and adjacent axes that move together
                                merged (a graph with a value over `limit` elements: as it is)

A softmax over the last axis of (3, 4, 3), of (2, 1, 6, 3) and of (12, 1, 3) is one softmax of a (12, 3) array;
without this pass each is a structure of its own, with its own compile. realize's lookup keys and lowers the
canonical graph (keys.structure, kernelize), and reshapes the results to the outputs' shapes.

The contract: each output of the result has the elements of the corresponding output in the same row-major order,
in a shape of the same element count (the result's values reshaped to the output's shape are the output's values);
the leaves (nodes holding data, constants, placeholders) are the same nodes, met in the same order by a walk of
sources left to right. Two passes, each rebuilding the graph bottom-up:

  squeeze   every node's shape without its 1s. A reshape adding or dropping 1s costs the lowering nothing (no
            index arithmetic), so an op that needs one (a shrink to one element of a longer axis, a pad of a
            1-axis, a sum over 1-axes) gets it from a reshape around it; a max, min or product over 1-axes alone
            is its source.
  merge     adjacent axes k, k+1 of a node are one axis when every op that reads or makes them treats them alike:
            an elementwise op links the boundary k of its sources to its own; an expand links it when both axes
            are broadcast or neither is; a permute when k+1 follows k in its source; a shrink or pad when the inner
            axis is whole; a flip when it flips both or neither; a reduce links the kept axes' boundaries and
            separates the kept from the reduced; a reshape and a leaf constrain nothing (a reshape of the merged
            source to the merged shape keeps the row-major order). The boundaries are classes of a union-find;
            a class is merged unless some op separates it. Each rule is a sufficient condition that composes over
            a run of merged axes, so every rebuilt op is well formed.

Ops the rules do not know (INDEX, a gather) keep all of their own and their sources' axes. Graphs with an empty
value, or a value over `limit` elements (large graphs keep the shapes their kernels were tuned at), are returned
as they are; so is a graph the pass would not change.
"""
from __future__ import annotations
import math
from minitensor.backend.uop import ALU, Ops, UOp, UOpError

_SAME = ALU | {Ops.CAST, Ops.BITCAST, Ops.STAGE}           # ops whose sources have the node's shape
_PER_AXIS = (Ops.SHRINK, Ops.PAD, Ops.FLIP, Ops.SCAN)


def canonical(outputs: list[UOp], limit: int) -> list[UOp]:
  """The outputs' graph in canonical form (the module docstring), or `outputs` itself where the pass does not
  apply or changes nothing."""
  order = _postorder(outputs, limit)
  if order is None: return outputs
  for u in order:
    if len(u.shape) >= 2 or 1 in u.shape: break
  else: return outputs                                     # (scalars and vectors: nothing to drop or merge)
  try:
    squeezed: dict[UOp, UOp] = {}
    for u in order: squeezed[u] = _squeeze(u, [squeezed[s] for s in u.src] if _inner(u) else ())
    out = _merge([squeezed[o] for o in outputs])
  except UOpError:            # (not expected: every rule builds well-formed nodes; the graph is lowered as it is)
    return outputs
  out = [c if _inner(o) else o for c, o in zip(out, outputs)]      # (an output that is a leaf stays one)
  return outputs if all(a is b for a, b in zip(out, outputs)) else out


def _inner(u: UOp) -> bool:
  """Whether u is computed in the graph (a leaf holds data, or is a constant or a placeholder)."""
  return u.data is None and bool(u.src)


def _postorder(outputs: list[UOp], limit: int) -> list[UOp] | None:
  """The inner nodes and leaves of the outputs' graph, each after its sources, or None when some value is empty
  or has more than `limit` elements."""
  seen: dict[UOp, None] = {}
  stack = [(o, False) for o in reversed(outputs)]
  while stack:
    u, ready = stack.pop()
    if u in seen: continue
    if ready or not _inner(u):
      n = math.prod(u.shape)
      if n == 0 or n > limit: return None
      seen[u] = None
      continue
    stack.append((u, True))
    stack.extend([(s, False) for s in reversed(u.src) if s not in seen])
  return list(seen)


def _sq(shape: tuple[int, ...]) -> tuple[int, ...]: return tuple([s for s in shape if s != 1])


def _squeeze(u: UOp, src: list[UOp]) -> UOp:
  """u rebuilt in the shape _sq(u.shape) over its sources' squeezed nodes src (each of its source's shape
  without 1s)."""
  op, shape = u.op, u.shape
  if 1 not in shape and all(a is b for a, b in zip(src, u.src)) and not (op is Ops.REDUCE and not u.arg[1]):
    return u                          # (nothing to drop here or below; a reduce over no axes is one over 1-axes)
  if not src: return u.reshape(_sq(shape))
  if op in _SAME: return u.replace(src=tuple(src))
  x, have = src[0], u.src[0].shape
  if op is Ops.RESHAPE: return x.reshape(_sq(shape))
  if op is Ops.EXPAND:    # (the axes of 1 in the result are 1 in the source: the rest, with the broadcast 1s)
    return x.reshape(tuple([a for a, b in zip(have, shape) if b != 1])).expand(_sq(shape))
  if op is Ops.PERMUTE:
    kept = {a: k for k, a in enumerate([a for a in range(len(have)) if have[a] != 1])}
    return x.permute(tuple([kept[a] for a in u.arg if a in kept]))
  if op in _PER_AXIS:     # (an axis stays where the source's or the result's size is not 1, and a scan's own axis)
    axes = [a for a in range(len(shape)) if have[a] != 1 or shape[a] != 1 or (op is Ops.SCAN and a == u.arg[1])]
    x = x.reshape(tuple([have[a] for a in axes]))
    if op is Ops.SHRINK: y = x.shrink(tuple([u.arg[a] for a in axes]))
    elif op is Ops.PAD: y = x.pad(tuple([u.arg[0][a] for a in axes]), u.arg[1])
    elif op is Ops.FLIP: y = x.flip(tuple([k for k, a in enumerate(axes) if a in u.arg]))
    else: y = x.scan(u.arg[0], axes.index(u.arg[1]))
    return y.reshape(_sq(shape))
  if op is Ops.REDUCE:
    r = len(have) - u.arg[1]
    if not (reduced := _sq(have[r:])):
      # (one element per result: a max, min or product of it is that element; a sum adds it to 0, as NumPy's does:
      # the sum of -0.0 is 0.0)
      if u.arg[0] is not Ops.ADD: return x
      reduced = (1,)
    return x.reshape(_sq(have[:r]) + reduced).reduce(u.arg[0], len(reduced))
  if op is Ops.STACK: return UOp(Ops.STACK, tuple(src)).reshape(_sq(shape))
  return u.replace(src=tuple([x.reshape(s.shape) for x, s in zip(src, u.src)])).reshape(_sq(shape))


class _Boundaries:
  """The boundaries between adjacent axes of every node (node u's k-th: between its axes k and k+1) as a
  union-find, each class merged unless cut."""

  def __init__(self, order: list[UOp]):
    self.base: dict[UOp, int] = {}
    n = 0
    for u in order:
      self.base[u] = n
      n += max(len(u.shape) - 1, 0)
    self.parent = list(range(n))
    self.cut = [False] * n

  def find(self, i: int) -> int:
    p = self.parent
    while p[i] != i:
      p[i] = p[p[i]]
      i = p[i]
    return i

  def link(self, u: UOp, k: int, s: UOp, j: int) -> None:
    a, b = self.find(self.base[u] + k), self.find(self.base[s] + j)
    if a != b:
      self.parent[b] = a
      self.cut[a] = self.cut[a] or self.cut[b]

  def separate(self, u: UOp, k: int) -> None: self.cut[self.find(self.base[u] + k)] = True

  def separate_all(self, u: UOp) -> None:
    for k in range(len(u.shape) - 1): self.separate(u, k)

  def groups(self, u: UOp) -> list[list[int]]:
    """u's axes in runs of merged ones."""
    out = [[0]] if u.shape else []
    b = self.base[u]
    for k in range(len(u.shape) - 1):
      if self.cut[self.find(b + k)]: out.append([k + 1])
      else: out[-1].append(k + 1)
    return out


def _constrain(u: UOp, bd: _Boundaries) -> None:
  """Link or separate u's boundaries and its sources' by the rule of u's op (the module docstring)."""
  op, shape, r = u.op, u.shape, len(u.shape)
  if op in _SAME or op is Ops.STACK:
    off = 1 if op is Ops.STACK else 0
    if off and r > 1: bd.separate(u, 0)
    for s in u.src:
      for k in range(len(s.shape) - 1): bd.link(u, k + off, s, k)
    return
  if op is Ops.RESHAPE: return
  s = u.src[0]
  have = s.shape
  if op is Ops.EXPAND:
    for k in range(r - 1):
      if (have[k] == shape[k]) == (have[k + 1] == shape[k + 1]): bd.link(u, k, s, k)
      else: bd.separate(u, k); bd.separate(s, k)
  elif op is Ops.PERMUTE:
    p = u.arg
    for k in range(r - 1):
      if p[k + 1] == p[k] + 1: bd.link(u, k, s, p[k])
      else: bd.separate(u, k)
    follows = {p[k] for k in range(r - 1) if p[k + 1] == p[k] + 1}
    for j in range(r - 1):
      if j not in follows: bd.separate(s, j)
  elif op in _PER_AXIS:
    for k in range(r - 1):
      if op is Ops.SHRINK: ok = u.arg[k + 1] == (0, have[k + 1])
      elif op is Ops.PAD: ok = u.arg[0][k + 1] == (0, 0)
      elif op is Ops.FLIP: ok = (k in u.arg) == (k + 1 in u.arg)
      else: ok = u.arg[1] not in (k, k + 1)
      if ok: bd.link(u, k, s, k)
      else: bd.separate(u, k); bd.separate(s, k)
  elif op is Ops.REDUCE:
    for k in range(r - 1): bd.link(u, k, s, k)
    if r: bd.separate(s, r - 1)
  else:
    bd.separate_all(u)
    for s in u.src: bd.separate_all(s)


def _merge(outputs: list[UOp]) -> list[UOp]:
  """The squeezed outputs with the axes that move together merged (the module docstring)."""
  order = _postorder(outputs, limit=1 << 62)
  bd = _Boundaries(order)
  for u in order:
    if _inner(u): _constrain(u, bd)
  if all(bd.cut[bd.find(i)] for i in range(len(bd.cut))): return outputs        # (no two axes merge)
  new: dict[UOp, UOp] = {}
  for u in order:
    g = bd.groups(u)
    src = [new[s] for s in u.src] if _inner(u) else []
    if len(g) == len(u.shape) and all(a is b for a, b in zip(src, u.src)):
      new[u] = u                                        # (its axes and its sources' stay as they are)
      continue
    shape = tuple([math.prod([u.shape[a] for a in grp]) for grp in g])
    if not _inner(u):
      new[u] = u.reshape(shape)
      continue
    op = u.op
    if op in _SAME or op is Ops.STACK or op not in (Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.REDUCE, *_PER_AXIS):
      y = u.replace(src=tuple(src)) if any(a is not b for a, b in zip(src, u.src)) else u
    elif op is Ops.RESHAPE: y = src[0].reshape(shape)
    elif op is Ops.EXPAND: y = src[0].expand(shape)
    elif op is Ops.PERMUTE:
      sg = bd.groups(u.src[0])
      first = {grp[0]: k for k, grp in enumerate(sg)}
      y = src[0].permute(tuple([first[u.arg[grp[0]]] for grp in g]))
    elif op is Ops.REDUCE:
      r = len(u.shape)
      y = src[0].reduce(u.arg[0], sum(1 for grp in bd.groups(u.src[0]) if grp[0] >= r))
    else:
      inner = [math.prod([u.src[0].shape[a] for a in grp[1:]]) for grp in g]
      if op is Ops.SHRINK: y = src[0].shrink(tuple([(u.arg[gr[0]][0] * n, u.arg[gr[0]][1] * n)
                                                    for gr, n in zip(g, inner)]))
      elif op is Ops.PAD: y = src[0].pad(tuple([(u.arg[0][gr[0]][0] * n, u.arg[0][gr[0]][1] * n)
                                                for gr, n in zip(g, inner)]), u.arg[1])
      elif op is Ops.FLIP: y = src[0].flip(tuple([k for k, gr in enumerate(g) if gr[0] in u.arg]))
      else: y = src[0].scan(u.arg[0], next(k for k, gr in enumerate(g) if u.arg[1] in gr))
    if y.shape != shape or y.dtype is not u.dtype:
      raise UOpError(f"canonical: {op.name} rebuilt as {y.dtype.name} {y.shape}, not {u.dtype.name} {shape}")
    new[u] = y
  return [new[o] for o in outputs]
