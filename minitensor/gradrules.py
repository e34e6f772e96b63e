"""Gradient rules: the adjoint of every shape-world primitive, as UOp builders.

A rule takes the node u, the cotangent g of u (u's shape and dtype) and returns one cotangent per source of u
(None where a source gets nothing). Rules build ordinary UOps on the forward nodes, so the backward graph
shares (CSE) the forward's nodes and fuses with it. Every rule is built from differentiable primitives, so
rules compose: a gradient can be differentiated again.

    ALU        EXP g*u; EXP2 g*u*ln2; EXPM1 g*(u+1); LOG g/x; LOG2, LOG10 g/(x*ln b); LOG1P g/(1+x); SQRT g/(2u);
               SIN g*cos x; COS -g*sin x; TAN g*(1+u^2); ASIN, ACOS +-g/sqrt(1-x^2); ATAN g/(1+x^2);
               SINH g*cosh x; COSH g*sinh x; TANH g*(1-u^2); ERF g*2/sqrt(pi)*exp(-x^2); ABS g*sign(x) (0 at 0)
               ADD g, g; MUL g*b, g*a; FDIV g/b, -g/b*u; POW g*b*a^(b-1) (0 where b == 0), g*u*log(a) (0 where
               a == 0); ATAN2 g*b/r2, -g*a/r2; FLOORMOD g, -g*(a // b)
               MAX/MIN: g to the larger/smaller operand, split in halves on a tie (JAX's rule)
    WHERE      where(c, g, 0), where(c, 0, g)          CAST  g cast back (a CAST to the same dtype: stop_gradient)
    REDUCE     a computed g is staged first (read once per reduced element: materialized once, not recomputed)
               ADD: g broadcast back; MUL: the product of the other elements (exact with zeros);
               MAX/MIN: g shared evenly among the elements equal to the result (ties split, as JAX; NumPy's
               max has no gradient, and argmax's first-index rule would make the gradient depend on the order)
    SCAN       ADD: the reversed cumulative sum of g; MUL: sum over later prefixes of g times the product of
               the prefix without the element (n^2 work along the axis, exact with zeros)
    movement   RESHAPE back; EXPAND summed over the broadcast axes; PERMUTE inverted; SHRINK zero-PADded back;
               PAD SHRINKed; FLIP flipped; STACK slices; STAGE passes g
    INDEX      a gather's adjoint is a scatter-add: from the (concrete) indices NumPy builds, per target row,
               the table of gathered rows that read it, and the rows of g are gathered through it and summed
               (work = target rows x the largest repeat count)
    zero       FLOOR CEIL TRUNC RINT FLOORDIV, comparisons, bitwise ops, integer and bool values (as JAX)
"""
from __future__ import annotations
import math
from typing import Callable
import numpy as np
from minitensor.backend.uop import MOVEMENT as MOVES
from minitensor.backend.uop import Ops, UOp, prod
from minitensor.tensor import asarray

Rule = Callable[..., tuple]
_c = UOp.const_like


def _unary(op: Ops, x: UOp) -> UOp: return UOp(op, (x,))


def _sign_times(g: UOp, x: UOp) -> UOp:
  return (x < 0).where(-g, (x > 0).where(g, _c(g, 0)))


UNARY: dict[Ops, Callable[[UOp, UOp, UOp], UOp]] = {
  Ops.EXP: lambda g, x, u: g * u,
  Ops.EXP2: lambda g, x, u: g * u * math.log(2),
  Ops.EXPM1: lambda g, x, u: g * (u + 1),
  Ops.LOG: lambda g, x, u: g / x,
  Ops.LOG2: lambda g, x, u: g / (x * math.log(2)),
  Ops.LOG10: lambda g, x, u: g / (x * math.log(10)),
  Ops.LOG1P: lambda g, x, u: g / (x + 1),
  Ops.SQRT: lambda g, x, u: g / (u * 2),
  Ops.SIN: lambda g, x, u: g * _unary(Ops.COS, x),
  Ops.COS: lambda g, x, u: -(g * _unary(Ops.SIN, x)),
  Ops.TAN: lambda g, x, u: g * (u * u + 1),
  Ops.ASIN: lambda g, x, u: g / _unary(Ops.SQRT, 1 - x * x),
  Ops.ACOS: lambda g, x, u: -(g / _unary(Ops.SQRT, 1 - x * x)),
  Ops.ATAN: lambda g, x, u: g / (x * x + 1),
  Ops.SINH: lambda g, x, u: g * _unary(Ops.COSH, x),
  Ops.COSH: lambda g, x, u: g * _unary(Ops.SINH, x),
  Ops.TANH: lambda g, x, u: g * (1 - u * u),
  Ops.ERF: lambda g, x, u: g * (2 / math.sqrt(math.pi)) * _unary(Ops.EXP, -(x * x)),
  Ops.ABS: lambda g, x, u: _sign_times(g, x),
}

ZERO = {Ops.FLOOR, Ops.CEIL, Ops.TRUNC, Ops.RINT, Ops.FLOORDIV, Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ, Ops.CMPNE,
        Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.SIGNBIT, Ops.CONST, Ops.BUFFER}


# binary rules take `need`: which sources get a gradient (no nodes are built for a constant operand)
def _minmax(u: UOp, g: UOp, need: tuple) -> tuple:
  a, b = u.src
  first = (a > b) if u.op is Ops.MAX else (a < b)
  ga = first.where(g, a.eq(b).where(g * 0.5, _c(g, 0)))
  return ga, g - ga if need[1] else None


def _pow(u: UOp, g: UOp, need: tuple) -> tuple:
  a, b = u.src
  ga = b.eq(0).where(_c(g, 0), g * b * UOp(Ops.POW, (a, b - 1))) if need[0] else None
  gb = g * u * _unary(Ops.LOG, a.eq(0).where(_c(a, 1), a)) if need[1] else None
  return ga, gb


def _fdiv(u: UOp, g: UOp, need: tuple) -> tuple:
  ga = g / u.src[1]
  return ga, -(ga * u) if need[1] else None


def _atan2(u: UOp, g: UOp, need: tuple) -> tuple:
  a, b = u.src
  r2 = a * a + b * b
  return g * b / r2 if need[0] else None, -(g * a / r2) if need[1] else None


def _bias(g: UOp) -> tuple:
  # x + broadcast b: b's gradient sums g while x's consumer reads it again; computed once for both
  s = staged(g)
  return s, s


BINARY: dict[Ops, Rule] = {
  Ops.ADD: lambda u, g, need: (g, g) if not (all(need) and Ops.EXPAND in (u.src[0].op, u.src[1].op)) else _bias(g),
  Ops.MUL: lambda u, g, need: (g * u.src[1] if need[0] else None, g * u.src[0] if need[1] else None),
  Ops.FDIV: _fdiv, Ops.POW: _pow, Ops.ATAN2: _atan2, Ops.MAX: _minmax, Ops.MIN: _minmax,
  Ops.FLOORMOD: lambda u, g, need: (g, -(g * (u.src[0] // u.src[1])) if need[1] else None),
  Ops.WHERE: lambda u, g, need: (None, u.src[0].where(g, _c(g, 0)) if need[1] else None,
                                 u.src[0].where(_c(g, 0), g) if need[2] else None),
}


# ---------------------------------------------------------------------- shape world
def sum_to(g: UOp, shape: tuple[int, ...]) -> UOp:
  """The adjoint of EXPAND to g.shape from `shape` (same rank): g summed over the broadcast axes."""
  axes = [k for k, (a, b) in enumerate(zip(shape, g.shape)) if a != b]
  if not axes: return g
  keep = [k for k in range(len(shape)) if k not in axes]
  return g.permute(tuple(keep + axes)).reduce(Ops.ADD, len(axes)).reshape(shape)


def _back(v: UOp, shape: tuple[int, ...], n: int) -> UOp:
  """A REDUCE result v (shape[:-n]) broadcast back over the n reduced axes."""
  return v.reshape(v.shape + (1,) * n).expand(shape)


_LEAVES = (Ops.CONST, Ops.BUFFER, Ops.STAGE)


def staged(g: UOp) -> UOp:
  """g read from memory: a computed g (not a movement of a constant, a buffer or a staged value) has the value under
  its movements staged, so every consumer of it (whatever movement it sees it through) shares one materialization."""
  moves = []
  while g.op in MOVES: moves.append(g); g = g.src[0]
  if g.op in _LEAVES or g.data is not None: return moves[0] if moves else g
  g = g.stage()
  for m in reversed(moves): g = m.replace(src=(g,))
  return g


def _reduce(u: UOp, g: UOp) -> tuple:
  op, n = u.arg
  x = u.src[0]
  # g is read once per reduced element: a computed g is staged (materialized once), so that a kernel consuming
  # the broadcast (the weight gradient of a convolution) does not recompute it for every element of the window
  if prod(x.shape[len(x.shape) - n:]) > 1: g = staged(g)
  if op is Ops.ADD: return (_back(g, x.shape, n),)
  if op in (Ops.MAX, Ops.MIN):
    hit = x.eq(_back(u, x.shape, n)).cast(g.dtype)
    return (_back(g / hit.reduce(Ops.ADD, n), x.shape, n) * hit,)         # divided at the reduced size
  # MUL: the product of the others; exact with zeros (one zero: only it gets the product of the rest)
  zero = x.eq(0)
  nz = _back(zero.where(_c(x, 1), x).reduce(Ops.MUL, n), x.shape, n)
  zeros = _back(zero.cast(x.dtype).reduce(Ops.ADD, n), x.shape, n)
  others = zero.where(zeros.eq(1).where(nz, _c(x, 0)), zeros.eq(0).where(nz / zero.where(_c(x, 1), x), _c(x, 0)))
  return (_back(g, x.shape, n) * others,)


def _last(x: UOp, ax: int) -> UOp:
  return x.permute(tuple(k for k in range(len(x.shape)) if k != ax) + (ax,))


def _unlast(x: UOp, ax: int) -> UOp:
  n = len(x.shape)
  return x.permute(tuple(range(ax)) + (n - 1,) + tuple(range(ax, n - 1)))


def _scan(u: UOp, g: UOp) -> tuple:
  op, ax = u.arg
  if op is Ops.ADD: return (g.flip((ax,)).scan(Ops.ADD, ax).flip((ax,)),)
  if op is not Ops.MUL: raise NotImplementedError(f"no gradient rule for SCAN {op.name} (cumulative max/min)")
  # C[k, j] = prod over i <= j of x[i] with x[k] replaced by 1; dx[k] = sum over j >= k of g[j] * C[k, j]
  xm, gm = _last(u.src[0], ax), _last(g, ax)
  lead, n = xm.shape[:-1], xm.shape[-1]
  sq = lead + (n, n)
  rows = xm.reshape(lead + (1, n)).expand(sq)
  iota = np.arange(n)
  eye, later = (asarray(m).uop.reshape((1,) * len(lead) + (n, n)).expand(sq)
                for m in (iota[:, None] == iota[None, :], iota[None, :] >= iota[:, None]))
  c = eye.where(_c(rows, 1), rows).scan(Ops.MUL, len(sq) - 1)
  gj = gm.reshape(lead + (1, n)).expand(sq)
  return (_unlast(later.where(gj * c, _c(c, 0)).reduce(Ops.ADD, 1), ax),)


def _permute(u: UOp, g: UOp) -> tuple:
  inv = [0] * len(u.arg)
  for k, p in enumerate(u.arg): inv[p] = k
  return (g.permute(tuple(inv)),)


def _stack(u: UOp, g: UOp) -> tuple:
  full = tuple((0, s) for s in u.shape[1:])
  return tuple(g.shrink(((i, i + 1),) + full).reshape(s.shape) for i, s in enumerate(u.src))


MOVEMENT: dict[Ops, Rule] = {
  Ops.RESHAPE: lambda u, g: (g.reshape(u.src[0].shape),),
  Ops.EXPAND: lambda u, g: (sum_to(g, u.src[0].shape),),
  Ops.PERMUTE: _permute,
  Ops.SHRINK: lambda u, g: (g.pad(tuple((b, s - e) for (b, e), s in zip(u.arg, u.src[0].shape))),),
  Ops.PAD: lambda u, g: (g.shrink(tuple((b, b + s) for (b, _), s in zip(u.arg[0], u.src[0].shape))),),
  Ops.FLIP: lambda u, g: (g.flip(u.arg),),
  Ops.STACK: _stack,
  Ops.STAGE: lambda u, g: (g,),
  Ops.REDUCE: _reduce,
  Ops.SCAN: _scan,
}


def index_adjoint(u: UOp, g: UOp, concrete: Callable[[UOp], np.ndarray]) -> UOp | None:
  """The cotangent of the gathered value x of u = INDEX(x, *idx): g scatter-added into x's shape. The indices
  are made concrete (`concrete`); out-of-range entries (setitem's -1 for "not written") read nothing back."""
  x, idx = u.src[0], u.src[1:]
  lead, rest = x.shape[:len(idx)], x.shape[len(idx):]
  n = prod(idx[0].shape)
  vals = [concrete(i).reshape(-1).astype(np.int64) for i in idx]
  ok = np.ones(n, bool)
  for v, m in zip(vals, lead): ok &= (v >= 0) & (v < m)
  rows = np.nonzero(ok)[0]
  if rows.size == 0: return None
  p = np.ravel_multi_index(tuple(v[ok] for v in vals), lead)
  order = np.argsort(p, kind="stable")
  p, rows = p[order], rows[order]
  counts = np.bincount(p, minlength=prod(lead))
  m = int(counts.max())
  rank = np.arange(p.size) - (np.cumsum(counts) - counts)[p]
  it = np.int32 if n < 2 ** 31 else np.int64
  table, valid = np.zeros((prod(lead), m), it), np.zeros((prod(lead), m), bool)
  table[p, rank], valid[p, rank] = rows, True
  picked = g.reshape((n,) + rest).index(asarray(table).uop)                      # (P, m) + rest
  shape = picked.shape
  mask = asarray(valid).uop.reshape((prod(lead), m) + (1,) * len(rest)).expand(shape)
  summed = _last(mask.where(picked, _c(picked, 0)), 1).reduce(Ops.ADD, 1)
  return summed.reshape(x.shape)
