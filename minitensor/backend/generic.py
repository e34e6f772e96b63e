"""generic: size-generic kernels, compiled once for every shape.

A kernel need not have its sizes in its C source. Two families are lowered so that it does not:

    flat      an elementwise kernel whose operands are all read whole, in their own order (reshapes keep
              that order): one loop over n = prod(shape) on the buffers read as (n,) arrays. Lowered by
              rangeify; n is an argument of the C function. Any size (the loop is threaded when n is large).
    strided   an elementwise kernel whose operands are strided views of buffers (a reshape NumPy could do
              without a copy, expand, permute, shrink, flip; movement above elementwise nodes is moved
              below them first), optionally reducing such a value over its trailing axes with elementwise
              work after the reduce. Operand k's element for output index i (and reduce index r) is at
                  off_k + sum_j ((i / P_j) % d_j) * s_kj  [+ the same over the reduce axes with r]
              (sizes d_j, P_j the product of the sizes after j; neighbouring axes merged where every operand
              allows). Loop bounds are arguments, and sizes, offsets and strides an int64 argument array, so
              the source depends only on the expression, the dtypes and the number of merged axes. The
              divisions cost more than nested loops do: kernels of up to STRIDED_MAX iterations only (the
              many small shapes of a prototype or a property test, not a benchmark's arrays).

The kernelizer asks `flat` first, then `strided`; anything else is lowered for its shape. Checked mode
names buffer sizes in its guards, so checked kernels are compiled per shape.
"""
from __future__ import annotations
import numpy as np
from minitensor.backend.uop import UOp, Ops, ALU, AxisType, ParamArg, buf, range_, sink, prod, memo_walk
from minitensor.backend.rangeify import identity, combine
from minitensor.backend.dtype import dtypes

STRIDED_MAX = 1 << 16
PARAMS_SLOT = 1 << 40     # the argument array's slot: after every buffer of a schedule


def flat(body: UOp) -> UOp | None:
  """body computed on its buffers read as (n,) arrays, when it is elementwise over operands read whole in their
  own order (every RESHAPE keeps that order; EXPAND only broadcasts a constant); else None."""
  n = prod(body.shape)
  if n < 2: return None
  new: dict[UOp, UOp] = {}
  for u in body.toposort():
    if u.op in (Ops.CONST, Ops.BUFFER): new[u] = u
    elif u.op is Ops.RESHAPE: new[u] = new[u.src[0]]
    elif u.op is Ops.EXPAND and _scalar(c := new[u.src[0]]): new[u] = c
    elif u.op in ALU:
      m = prod(u.shape)
      new[u] = u.replace(src=tuple(x.reshape((1,)).expand((m,)) if _scalar(x) else x for x in (new[s] for s in u.src)))
    else: return None
  return new[body] if new[body].shape == (n,) else None


def _scalar(u: UOp) -> bool:
  """A constant, or a one-element buffer (a constant passed as a kernel argument): broadcast, not walked."""
  return u.op is Ops.CONST or (u.op is Ops.BUFFER and u.shape == (1,))


def reshape_strides(shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...] | None:
  """The strides of a view reshaped to `new` without a copy (as NumPy's reshape of a view): groups of axes
  with equal products map onto each other; a group of old axes must be contiguous among itself."""
  if 0 in shape: return None
  old = [(d, t) for d, t in zip(shape, strides) if d != 1]
  out = [0] * len(new)
  oi = ni = 0
  while oi < len(old):
    while ni < len(new) and new[ni] == 1: ni += 1
    oj, nj, po, pn = oi + 1, ni + 1, old[oi][0], new[ni]
    while po != pn:
      if po < pn: po, oj = po * old[oj][0], oj + 1
      else: pn, nj = pn * new[nj], nj + 1
    if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)): return None
    t = old[oj - 1][1]
    for k in range(nj - 1, ni - 1, -1): out[k], t = (t, t * new[k]) if new[k] != 1 else (0, t)
    oi, ni = oj, nj
  return tuple(out)


_MOVES = (Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.SHRINK, Ops.FLIP)


def _view(u: UOp) -> tuple[UOp, tuple[int, ...] | None, int] | None:
  """(BUFFER, strides, offset) when u reads a buffer through strided movement, (CONST, None, 0) for a
  broadcast constant; else None."""
  moves = []
  while u.op in _MOVES: moves.append(u); u = u.src[0]
  if u.op is Ops.CONST: return u, None, 0
  if u.op is not Ops.BUFFER: return None
  st, off = (1,), 0
  for m in reversed(moves):
    s = m.src[0].shape
    if m.op is Ops.RESHAPE:
      if (st := reshape_strides(s, st, m.arg)) is None: return None
    elif m.op is Ops.EXPAND: st = tuple(0 if a != b_ else t for a, b_, t in zip(s, m.arg, st))
    elif m.op is Ops.PERMUTE: st = tuple(st[i] for i in m.arg)
    elif m.op is Ops.SHRINK: off += sum(b_ * t for (b_, _), t in zip(m.arg, st))
    else:
      st = list(st)
      for a in m.arg: off, st[a] = off + (s[a] - 1) * st[a], -st[a]
      st = tuple(st)
  return u, st, off


def _move(m: UOp, x: UOp) -> UOp:
  """Movement m applied to x, merged with x's own movement of the same kind (pushing movement down a deep
  chain then yields one view per distinct composition, not a stack of movements that grows with the depth)."""
  if x.op is not m.op: return m.replace(src=(x,))
  b = x.src[0]
  if m.op is Ops.RESHAPE: return b.reshape(m.arg)
  if m.op is Ops.EXPAND: return b.expand(m.arg)
  if m.op is Ops.PERMUTE: return b.permute(tuple(x.arg[i] for i in m.arg))
  if m.op is Ops.SHRINK: return b.shrink(tuple((b0 + b1, b0 + e1) for (b0, _), (b1, e1) in zip(x.arg, m.arg)))
  return b.flip(tuple(sorted(set(x.arg) ^ set(m.arg))))


def _moved_down(root: UOp) -> UOp:
  """root with every movement of an elementwise value applied to that value's operands instead (the same
  value: a permute of x * y is permute(x) * permute(y)), so movement sits only on buffers and constants."""
  def rule(u: UOp):
    src = []
    for x in u.src: src.append((yield x))
    if u.op in _MOVES and src[0].op in ALU:
      moved = []
      for x in src[0].src: moved.append((yield _move(u, x)))
      return src[0].replace(src=tuple(moved))
    if u.op in _MOVES: return _move(u, src[0])
    return u if all(a is b for a, b in zip(src, u.src)) else u.replace(src=tuple(src))
  return memo_walk(root, rule, {})


def _operands(root: UOp) -> dict[UOp, tuple] | None:
  """The view of every operand of root's ALU nodes that is not an ALU node (root's own, if it is not one);
  None if one is not a strided view or a broadcast constant."""
  if root.op not in ALU: return None if (v := _view(root)) is None else {root: v}
  found: dict[UOp, tuple] = {}
  for u in root.toposort():
    if u.op not in ALU: continue
    for s in u.src:
      if s.op not in ALU and s not in found:
        if (v := _view(s)) is None: return None
        found[s] = v
  return found


def _merge(shape: tuple[int, ...], strides: list[tuple[int, ...]]) -> list[tuple[int, list[int]]]:
  """(size, stride of every operand) per axis, with axes of size 1 dropped and neighbours merged where every
  operand steps over them as over one axis."""
  merged: list[tuple[int, list[int]]] = []
  for j, d in enumerate(shape):
    if d == 1: continue
    st = [t[j] for t in strides]
    if merged and all(a == b * d for a, b in zip(merged[-1][1], st)): merged[-1] = (merged[-1][0] * d, st)
    else: merged.append((d, st))
  return merged


def _after_reduce(body: UOp, red: UOp, below: set[UOp], val: dict[UOp, UOp]) -> bool:
  """Fill val for body's nodes after the reduce, all read at the output's flat index: elementwise nodes,
  reshapes and broadcast constants. False if another node comes (a broadcast of the reduce, a view)."""
  for u in body.toposort():
    if u in below: continue
    if u.op in ALU and all(s is red or s not in below for s in u.src): val[u] = u.replace(src=tuple(val[s] for s in u.src))
    elif u.op is Ops.RESHAPE and (u.src[0] is red or u.src[0] not in below) and u.src[0] in val: val[u] = val[u.src[0]]
    elif (v := _view(u)) is not None and v[1] is None: val[u] = v[0]
    elif v is not None and v[0].shape == (1,): val[u] = v[0].index(0).load()      # a broadcast kernel argument
    else: return False
  return True


def strided(body: UOp, out: UOp) -> tuple[UOp, np.ndarray, tuple[int, ...]] | None:
  """The lowered kernel storing body into `out` as a strided kernel, its argument array and its loop sizes;
  None when body is not elementwise over strided views (optionally around one REDUCE of such a value, read at
  the output's own flat index: only reshapes, elementwise nodes and constants after it), or does more than
  STRIDED_MAX iterations."""
  reduces = [u for u in body.toposort() if u.op is Ops.REDUCE]
  if len(reduces) > 1: return None
  red = reduces[0] if reduces else None
  inner = _moved_down(red.src[0] if red is not None else body)
  n_out, n_red = prod(body.shape), prod(inner.shape[len(red.shape):]) if red is not None else 1
  if (red is not None and red.arg[1] == 0) or not 1 <= n_red or not (1 if red is not None else 2) <= n_out * n_red <= STRIDED_MAX: return None
  if (pre := _operands(inner)) is None: return None
  views = [(u, v) for u, v in pre.items() if v[1] is not None]
  if red is not None and not views: return None      # a reduce of constants: rangeify folds it without a loop
  k_out = len(inner.shape) - (red.arg[1] if red is not None else 0)
  groups = [_merge(inner.shape[:k_out], [v[1][:k_out] for _, v in views])]
  if red is not None: groups.append(_merge(inner.shape[k_out:], [v[1][k_out:] for _, v in views]))
  # the argument array: per loop its axis sizes d_j and P_j, then per operand its offset and strides
  args: list[int] = []
  at = []
  for g in groups:
    at.append(len(args))
    args += [d for d, _ in g] + [prod(d for d, _ in g[j + 1:]) for j in range(len(g))]
  axes = [a for g in groups for a in g]
  view_at = []
  for n, (_, (_, _, off)) in enumerate(views):
    view_at.append(len(args))
    args += [off, *(st[n] for _, st in axes)]
  p = buf(PARAMS_SLOT, max(len(args), 1), dtypes.int64)
  arg = lambda k: p.index(k).load().cast(dtypes.index)
  # plain loops: at most STRIDED_MAX iterations are not worth starting threads
  loops = [range_(n_out, 0)] + ([range_(n_red, 1, AxisType.REDUCE)] if red is not None else [])
  coords = []
  for loop, g, base in zip(loops, groups, at):
    for j in range(len(g)):
      c = loop if j == len(g) - 1 else loop // arg(base + len(g) + j)     # the last axis has P = 1
      coords.append(c if j == 0 else c % arg(base + j))                   # the first needs no modulo
  val: dict[UOp, UOp] = {u: b for u, (b, st, _) in pre.items() if st is None}     # broadcast constants
  for (u, (b, _, _)), vat in zip(views, view_at):
    idx = arg(vat)
    for j, c in enumerate(coords): idx = idx + c * arg(vat + 1 + j)
    val[u] = b.index(idx).load()
  for u in inner.toposort():
    if u.op in ALU and u not in val: val[u] = u.replace(src=tuple(val[s] for s in u.src))
  if red is not None:
    rop, i, k = red.arg[0], loops[0], loops[1]
    acc = UOp(Ops.ALLOC, (), ParamArg(0, red.dtype, (1,))).after(i)
    init = acc.index(0).store(UOp.const(identity(rop, red.dtype), red.dtype))
    loop = acc.after(init, k)
    upd = loop.index(0).store(combine(rop, loop.index(0).load(), val[inner]))
    below = set(red.toposort())
    val[red] = acc.after(upd.end(k)).index(0).load()
    if not _after_reduce(body, red, below, val): return None
  value = val[body] if red is not None else val[inner]
  # not simplified: its term order would follow the buffers' sizes, and the source must not
  used = args if views else []      # with no operand to load, the kernel reads no argument array
  return sink(out.index(loops[0]).store(value).end(loops[0])), np.array(used, np.int64), (n_out, n_red)[:len(loops)]
