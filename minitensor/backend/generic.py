"""generic: size-generic kernels, compiled once for every shape.

An elementwise kernel (ALU and CAST nodes over views of buffers and broadcast constants) need not have its
sizes in its C source. Two families are lowered so that it does not:

    flat      every operand is read whole, in its own order (reshapes keep that order): the kernel is one
              loop over n = prod(shape), on the buffers read as (n,) arrays. Lowered by rangeify; n is an
              argument of the C function.
    strided   every operand is a strided view of a buffer (a reshape of contiguous data, expand, permute,
              shrink, flip): its element for flat output index i is at
                  off_k + sum_j ((i / P_j) % d_j) * s_kj
              over the output axes j (sizes d_j, P_j the product of the sizes after j; axes merged where every
              operand's strides allow). Sizes, offsets and strides travel in an int64 argument array, so the
              source depends only on the expression, the dtypes and the number of axes. The divisions cost
              more than nested loops do, so the family serves kernels of up to STRIDED_MAX elements: the many
              small shapes of a prototype or a property test, not a benchmark's arrays.

The kernelizer asks `flat` first, then `strided`; anything else is lowered for its shape.
"""
from __future__ import annotations
import numpy as np
from minitensor.backend.uop import UOp, Ops, ALU, AxisType, buf, range_, sink, prod
from minitensor.backend.dtype import dtypes
from minitensor.backend.symbolic import simplify

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
    elif u.op is Ops.EXPAND and (c := new[u.src[0]]).op is Ops.CONST: new[u] = c
    elif u.op in ALU:
      m = prod(u.shape)
      new[u] = u.replace(src=tuple(x.reshape((1,)).expand((m,)) if x.op is Ops.CONST else x for x in (new[s] for s in u.src)))
    else: return None
  return new[body] if new[body].shape == (n,) else None


def _reshape(shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...] | None:
  """The strides of a view reshaped to `new` without a copy (as NumPy's reshape of a view): groups of axes
  with equal products map onto each other; a group of old axes must be contiguous among itself."""
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


def _view(u: UOp) -> tuple[UOp, tuple[int, ...] | None, int] | None:
  """(BUFFER, strides, offset) when u reads a buffer through strided movement, (CONST, None, 0) for a
  broadcast constant; else None."""
  if u.op is Ops.BUFFER: return u, (1,), 0
  if u.op is Ops.CONST: return u, None, 0
  if u.op not in (Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.SHRINK, Ops.FLIP) or (v := _view(u.src[0])) is None: return None
  b, st, off = v
  if st is None: return v
  s = u.src[0].shape
  if u.op is Ops.RESHAPE:
    if (st := _reshape(s, st, u.arg)) is None: return None
  elif u.op is Ops.EXPAND: st = tuple(0 if a != b_ else t for a, b_, t in zip(s, u.arg, st))
  elif u.op is Ops.PERMUTE: st = tuple(st[i] for i in u.arg)
  elif u.op is Ops.SHRINK: off += sum(b_ * t for (b_, _), t in zip(u.arg, st))
  else:
    st = list(st)
    for a in u.arg: off, st[a] = off + (s[a] - 1) * st[a], -st[a]
    st = tuple(st)
  return b, st, off


def strided(body: UOp, out: UOp) -> tuple[UOp, np.ndarray] | None:
  """The lowered kernel storing body into `out` as a strided kernel, and its argument array; None when body
  is not elementwise over strided views, or is larger than STRIDED_MAX."""
  n = prod(body.shape)
  if not 2 <= n <= STRIDED_MAX: return None
  if body.op not in ALU: return None
  leaves: dict[UOp, tuple] = {}      # the operands of the ALU nodes that are not ALU nodes themselves
  for u in body.toposort():
    if u.op not in ALU: continue
    for s in u.src:
      if s.op not in ALU and s not in leaves:
        if (v := _view(s)) is None: return None
        leaves[s] = v
  views = [(u, v) for u, v in leaves.items() if v[1] is not None]
  # output axes of size 1 go; neighbours merge when every operand steps over them as one axis
  dims = [(d, [v[1][j] for _, v in views]) for j, d in enumerate(body.shape) if d != 1]
  merged: list[tuple[int, list[int]]] = []
  for d, st in dims:
    if merged and all(a == b * d for a, b in zip(merged[-1][1], st)): merged[-1] = (merged[-1][0] * d, st)
    else: merged.append((d, st))
  sizes = [d for d, _ in merged]
  after = [prod(sizes[j + 1:]) for j in range(len(sizes))]
  params = sizes + after + [x for k, (_, v) in enumerate(views) for x in (v[2], *(st[k] for _, st in merged))]
  p = buf(PARAMS_SLOT, len(params), dtypes.int64)
  arg = lambda k: p.index(k).load().cast(dtypes.index)
  i = range_(n, 0, AxisType.THREAD)
  r = len(sizes)
  coords = []
  for j in range(r):
    c = i if j == r - 1 else i // arg(r + j)        # the last axis has P = 1
    coords.append(c if j == 0 else c % arg(j))      # the first needs no modulo
  val: dict[UOp, UOp] = {u: b for u, (b, st, _) in leaves.items() if st is None}     # broadcast constants
  for k, (u, (b, _, _)) in enumerate(views):
    base = 2 * r + k * (r + 1)
    idx = arg(base)
    for j, c in enumerate(coords): idx = idx + c * arg(base + 1 + j)
    val[u] = b.index(idx).load()
  for u in body.toposort():
    if u.op in ALU and u not in val: val[u] = u.replace(src=tuple(val[s] for s in u.src))
  return simplify(sink(out.index(i).store(val[body]).end(i))), np.array(params, np.int64)
