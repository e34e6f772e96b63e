"""Symbolic simplification.

simplify(u) rewrites a graph to a fixpoint. Index arithmetic (dtype `index`, unbounded integers with
Python's floor semantics) is kept in a normal form: a left-nested sum of terms `atom*coef`, atoms ordered by
the loops they mention, the constant last. On that form:

    constant folding            any ALU op of CONSTs (integers wrap like C, floats round like NumPy); of complex
                                ops only the exact ones (REAL, IMAG, CMPLX, ==, !=, WHERE): the rest are C calls
    identities                  x*1, x//1, x%1, x/1, and x+0, x*0 on integers (not floats: -0.0, nan); x + -0.0 on
                                floats (exact for every x: a concatenation's parts are added to -0.0 outside them)
    like terms, distribution    i*4 + i -> i*5;  (i*4 + j)*4 -> i*16 + j*4
    recombination               (x//c)*c + x%c -> x
    division                    (a*c + b)//c -> a + b//c;  (a*c + b)%c -> b%c;  gcd cancellation
    nested division             (x//a)//b -> x//(a*b);  (x%(k*c))%c -> x%c
    division by a size          x//s, x%s for a symbolic size s (a product of VARs): the terms s divides are the
                                quotient when the rest lies in [0, s)
    bounds                      x//c -> k and x%c -> x - k*c when vmin(x)//c == vmax(x)//c;
                                comparisons, MAX/MIN and WHERE decided when the bounds decide them

The rules are the table RULES (one rule per line, named as above, tried in order on each node once its sources are
simplified) as the PatternMatcher `symbolic`; the walk is walk.graph_rewrite. The bounds it reads, (vmin, vmax) of
integer and bool nodes from RANGE sizes and constants, are computed in uop.py (`bounds`, `u.vmin`, `u.vmax`: they live
with the node, so the IR needs no import of this pass); simplify's result is cached on the node as the bounds are
(nodes are immutable, so both are pure functions of the node).
"""
from __future__ import annotations
import math
from typing import Callable
import numpy as np
from minitensor.backend.dtype import DType, dtypes, float_to_int
from minitensor.backend.ops import ALU_OPS
from minitensor.backend.uop import COMPARE, Ops, UOp, bounds
from minitensor.backend.walk import PatternMatcher, UPat, graph_rewrite

_SHIFTS = (Ops.SHL, Ops.SHR)
# the cheap ops on floats are exact or correctly rounded, as in the C: NumPy's ufunc of the op computes its value
_NP_EXACT = {o: getattr(np, d.ufunc) for o, d in ALU_OPS.items() if d.cost == "cheap" and d.ufunc is not None}


# ---------------------------------------------------------------- evaluation of constants
def exec_alu(op: Ops, dtype: DType, vals: tuple):
  """The value of op on Python scalars, with the semantics of the rendered C (and so of NumPy); dtype is the
  operands' dtype. Returns None where folding is not exact in Python (transcendentals)."""
  if op is Ops.WHERE: return vals[1] if vals[0] else vals[2]
  if op is Ops.CMPLX: return complex(vals[0], vals[1])
  if dtype.is_complex:
    if op in (Ops.REAL, Ops.IMAG): return dtype.real.python(vals[0].real if op is Ops.REAL else vals[0].imag)
    if op in (Ops.CMPEQ, Ops.CMPNE): return (vals[0] == vals[1]) == (op is Ops.CMPEQ)
    return None
  if dtype.is_float:
    a = [np.array(v, dtype=dtype.np)[()] for v in vals]
    with np.errstate(all="ignore"):
      f = _NP_EXACT.get(op)
      if f is None: return None
      r = f(*a)
    return bool(r) if op in COMPARE else float(r)
  a = [int(v) for v in vals]
  if op in COMPARE:
    return {Ops.CMPLT: a[0] < a[1], Ops.CMPLE: a[0] <= a[1], Ops.CMPEQ: a[0] == a[1], Ops.CMPNE: a[0] != a[1]}[op]
  if op is Ops.FLOORDIV: r = 0 if a[1] == 0 else a[0] // a[1]
  elif op is Ops.FLOORMOD: r = 0 if a[1] == 0 else a[0] % a[1]
  elif op in _SHIFTS:
    bits = 8 * dtype.itemsize
    if not 0 <= a[1] < bits: r = 0 if op is Ops.SHL or a[0] >= 0 else -1
    else: r = a[0] << a[1] if op is Ops.SHL else a[0] >> a[1]
  elif op is Ops.POW:
    if a[1] < 0: r = 1 if a[0] == 1 else (1 if a[1] % 2 == 0 else -1) if a[0] == -1 else 0
    else: r = pow(a[0], a[1], 1 << 64) if dtype is not dtypes.index else a[0] ** a[1]
  else:
    f = {Ops.ADD: lambda x, y: x + y, Ops.MUL: lambda x, y: x * y, Ops.MAX: max, Ops.MIN: min, Ops.ABS: abs,
         Ops.AND: lambda x, y: x & y, Ops.OR: lambda x, y: x | y, Ops.XOR: lambda x, y: x ^ y}.get(op)
    if f is None: return None
    r = f(*a)
  return dtype.python(r)


def _cast_const(v, to: DType):
  if isinstance(v, complex):
    if to.is_complex: return to.python(v)
    v = v.real                                              # C and NumPy drop the imaginary part
  if to.is_complex: return to.python(complex(v, 0.0))
  if to.is_float:
    with np.errstate(over="ignore"): return float(np.array(v).astype(to.np))    # inf, as the C cast gives
  if isinstance(v, float): return bool(v) if to is dtypes.bool else float_to_int(v, to)
  return to.python(v)


# ---------------------------------------------------------------- the normal form of index sums
def _lin(u: UOp) -> tuple[dict[UOp, int], int]:
  """u as ({atom: coefficient}, constant). An explicit stack: a normal-form sum is as deep as it has terms.
  A product with a symbolic size (VAR) in it is multiplied out into monomials, each a canonical product of
  atoms (so i*s1*s2 is one atom however it was built)."""
  terms: dict[UOp, int] = {}
  c = 0
  stack = [(u, 1)]
  while stack:
    x, k = stack.pop()
    if x.op is Ops.CONST: c += x.arg * k
    elif x.op is Ops.ADD: stack += ((x.src[1], k), (x.src[0], k))
    elif x.op is Ops.MUL and (x.src[1].op is Ops.CONST or x.src[0].op is Ops.CONST):
      stack.append((x.src[0], k * x.src[1].arg) if x.src[1].op is Ops.CONST else (x.src[1], k * x.src[0].arg))
    elif x.op is Ops.MUL and x.dtype is dtypes.index and _has_var(x):
      for mono, m in _expand(x).items():
        if mono: terms[_product(mono)] = terms.get(_product(mono), 0) + m * k
        else: c += m * k
    else: terms[x] = terms.get(x, 0) + k
  return terms, c


def affine(u: UOp, counters: tuple[UOp, ...]) -> tuple[int, tuple[int, ...]] | None:
  """(offset, coefficient per counter) of an index expression that is a sum of constant multiples of the counters
  and a constant; else None."""
  terms, c = _lin(u)
  if set(terms) - set(counters): return None
  return c, tuple(terms.get(r, 0) for r in counters)


# ---------------------------------------------------------------- symbolic sizes: products of VARs
def _has_var(x: UOp) -> bool:
  """Whether the product or sum x has a VAR among its factors or terms (not looking inside other ops)."""
  stack = [x]
  while stack:
    y = stack.pop()
    if y.op is Ops.VAR: return True
    if y.op in (Ops.MUL, Ops.ADD): stack += y.src
  return False


def _factors(x: UOp) -> tuple[int, list[UOp]]:
  """x as (constant, [factors]) of a product tree."""
  k, out, stack = 1, [], [x]
  while stack:
    y = stack.pop()
    if y.op is Ops.MUL: stack += y.src
    elif y.op is Ops.CONST: k *= y.arg
    else: out.append(y)
  return k, out


def _expand(x: UOp) -> dict[tuple[UOp, ...], int]:
  """The product x multiplied out: {sorted tuple of atoms: coefficient} (() is the constant term)."""
  k, fs = _factors(x)
  poly: dict[tuple[UOp, ...], int] = {(): k}
  for f in fs:
    t, c = _lin(f) if f.op is Ops.ADD else ({f: 1}, 0)
    parts = [((a,), m) for a, m in t.items() if m] + ([((), c)] if c else [])
    new: dict[tuple[UOp, ...], int] = {}
    for mono, m in poly.items():
      for pm, pk in parts:
        key = tuple(sorted(mono + _atoms(pm), key=lambda a: a.key))
        new[key] = new.get(key, 0) + m * pk
    poly = {mono: m for mono, m in new.items() if m}
  return poly


def _atoms(mono: tuple[UOp, ...]) -> tuple[UOp, ...]:
  """The atoms of a monomial's factors (a factor that is itself a product contributes its own atoms)."""
  out: list[UOp] = []
  for a in mono:
    k, fs = _factors(a)
    out += fs
  return tuple(out)


def _product(mono: tuple[UOp, ...]) -> UOp:
  out = mono[0]
  for a in mono[1:]: out = UOp(Ops.MUL, (out, a))
  return out


def _smax(x: UOp) -> dict[tuple[int, ...], int] | None:
  """A polynomial in the VARs (monomial: sorted VAR indices) that bounds the non-negative index x from above,
  or None: atoms are RANGEs (size - 1), VARs, and remainders y % d (d - 1), with non-negative coefficients."""
  terms, c = _lin(x)
  if c < 0 or any(k < 0 for k in terms.values()): return None
  out: dict[tuple[int, ...], int] = {(): c}
  for atom, k in terms.items():
    m, fs = _factors(atom)
    if m < 0: return None
    poly: dict[tuple[int, ...], int] = {(): k * m}
    for f in fs:
      if f.op is Ops.VAR: fp = {(f.arg.idx,): 1}
      elif f.op is Ops.RANGE:
        v = f.arg.var
        fp = {(): f.arg.size - 1} if v is None else {(v.arg.idx,): 1, (): -1} if v.op is Ops.VAR else {(): v.vmax - 1}
      elif f.op is Ops.FLOORMOD and (dp := _poly(f.src[1])) is not None: fp = _padd(dp, {(): -1})
      else: return None
      poly = _pmul(poly, fp)
    out = _padd(out, poly)
  return out


def _padd(a: dict, b: dict) -> dict:
  out = dict(a)
  for m, k in b.items(): out[m] = out.get(m, 0) + k
  return out


def _pmul(a: dict, b: dict) -> dict:
  out: dict = {}
  for ma, ka in a.items():
    for mb, kb in b.items():
      m = tuple(sorted(ma + mb))
      out[m] = out.get(m, 0) + ka * kb
  return out


def _below(x: UOp, d: UOp) -> bool:
  """Whether 0 <= x < d for every value of the VARs (sizes are >= 0): d - max(x) - 1 has no negative coefficient."""
  if bounds(x)[0] < 0: return False
  if bounds(x)[1] < bounds(d)[0]: return True
  if (mx := _smax(x)) is None or (dp := _poly(d)) is None: return False
  return all(k >= 0 for k in _padd(dp, {m: -k for m, k in _padd(mx, {(): 1}).items()}).values())


def _div_mod_symbolic(u: UOp) -> UOp | None:
  """x // d and x % d for a symbolic size d (a product of VARs): the terms of x that d divides go to the
  quotient, and the rest R must satisfy 0 <= R < d (a RANGE of extent d, a remainder of d, ...): then
  x // d = quotient and x % d = R."""
  x, d = u.src
  if _poly(d) is None: return None
  dk, dfs = _factors(d)
  if dk != 1: return None
  terms, c = _lin(x)
  quot: dict[UOp, int] = {}
  rest: dict[UOp, int] = {}
  for atom, k in terms.items():
    m, left = _factors(atom)
    for f in dfs:
      if f in left: left.remove(f)
      else: left = None; break
    if left is None: rest[atom] = k
    else:
      q = _product(tuple(left)) if left else UOp.const(1)
      quot[q] = quot.get(q, 0) + k * m
  r = _build(rest, c)
  if not _below(r, d): return None
  if u.op is Ops.FLOORMOD: return r
  const = sum(k for a, k in quot.items() if a.op is Ops.CONST)
  return _build({a: k for a, k in quot.items() if a.op is not Ops.CONST}, const)


def _poly(x: UOp) -> dict[tuple[int, ...], int] | None:
  """x as a polynomial in the VARs, when it is a sum of products of VARs and constants; else None."""
  terms, c = _lin(x)
  out: dict[tuple[int, ...], int] = {(): c} if c else {}
  for atom, k in terms.items():
    m, fs = _factors(atom)
    if any(f.op is not Ops.VAR for f in fs): return None
    key = tuple(sorted(f.arg.idx for f in fs))
    out[key] = out.get(key, 0) + k * m
  return out


def _order(u: UOp) -> tuple:
  rs = u.ranges
  return (max((r.arg.idx for r in rs), default=-1), 0 if u.op is Ops.RANGE else 1, u.key)


def _build(terms: dict[UOp, int], c: int) -> UOp:
  out = None
  for a in sorted((a for a, k in terms.items() if k), key=_order):
    k = terms[a]
    t = a if k == 1 else UOp(Ops.MUL, (a, UOp.const(k)))
    out = t if out is None else UOp(Ops.ADD, (out, t))
  if out is None: return UOp.const(c)
  return UOp(Ops.ADD, (out, UOp.const(c))) if c else out


def _recombine(terms: dict[UOp, int]) -> int | None:
  """(x//c)*(k*c) + (x%c)*k -> x*k, in place. The constant that adds to the sum, or None if nothing changed."""
  for m, k in terms.items():
    if m.op is Ops.FLOORMOD and m.src[1].op is Ops.CONST and k:
      x, c = m.src[0], m.src[1].arg
      dv = UOp(Ops.FLOORDIV, (x, m.src[1]))
      if terms.get(dv, 0) == k * c:
        terms[m] = terms[dv] = 0
        xt, xc = _lin(x)
        for a, v in xt.items(): terms[a] = terms.get(a, 0) + v * k
        return xc * k
  return None


def _norm_sum(u: UOp) -> UOp:
  terms, c = _lin(u)
  while (dc := _recombine(terms)) is not None: c += dc
  return _build(terms, c)


def _split(terms: dict[UOp, int], c: int, d: int):
  """x = d*A + B with every coefficient of B in (-d, d) and B's constant in [0, d)."""
  qa = {a: (k // d if k >= 0 else -((-k) // d)) for a, k in terms.items()}
  rb = {a: k - d * qa[a] for a, k in terms.items()}
  return qa, c // d, rb, c % d


# ---------------------------------------------------------------- rules
# constant folding is tried on every op but the transcendental float functions (exec_alu has no exact value for them)
_FOLDABLE = tuple(o for o, d in ALU_OPS.items() if not (d.cost == "transcendental" and d.operands == "float"))


def _fold(u: UOp) -> UOp | None:
  v = exec_alu(u.op, u.src[-1].dtype, tuple(s.arg for s in u.src))
  return None if v is None else UOp.const(v, u.dtype)


def _fold_cast(u: UOp) -> UOp | None:
  v = _cast_const(u.src[0].arg, u.dtype)
  return None if v is None else UOp.const(v, u.dtype)


def _bool_identity(u: UOp) -> UOp | None:
  """x & True -> x, x & False -> False, x | False -> x, x | True -> True, x & x and x | x -> x (bool)."""
  for a, b in (u.src, u.src[::-1]):
    if a.op is Ops.CONST: return b if a.arg == (u.op is Ops.AND) else a
  return u.src[0] if u.src[0] is u.src[1] else None


def _div_bounds(u: UOp) -> UOp | None:
  """x//c -> k and x%c -> x - k*c when vmin(x)//c == vmax(x)//c == k."""
  x, d = u.src[0], u.src[1].arg
  lo, hi = bounds(x)
  if lo // d != hi // d: return None
  return UOp.const(lo // d) if u.op is Ops.FLOORDIV else x - (lo // d) * d if lo // d else x


def _nested_div(u: UOp) -> UOp | None:
  """(x//a)//b -> x//(a*b);  (x%(k*c))%c -> x%c."""
  x, dv = u.src
  if x.op is not u.op or x.src[1].op is not Ops.CONST: return None
  a = x.src[1].arg
  if u.op is Ops.FLOORDIV: return UOp(Ops.FLOORDIV, (x.src[0], UOp.const(a * dv.arg))) if a > 0 else None
  return UOp(Ops.FLOORMOD, (x.src[0], dv)) if a % dv.arg == 0 else None


def _divide(u: UOp) -> UOp | None:
  """gcd cancellation; (a*c + b)//c -> a + b//c;  (a*c + b)%c -> b%c."""
  x, d = u.src[0], u.src[1].arg
  terms, c = _lin(x)
  g = math.gcd(d, c, *terms.values())
  if g > 1:
    y = _build({a: k // g for a, k in terms.items()}, c // g)
    return y // (d // g) if u.op is Ops.FLOORDIV else (y % (d // g)) * g
  qa, qc, rb, rc = _split(terms, c, d)
  if u.op is Ops.FLOORDIV:
    if any(qa.values()) or qc: return _build(qa, qc) + _build(rb, rc) // d
    return None
  if any(qa.values()) or rc != c: return _build(rb, rc) % d
  return None


def _normal_sum(u: UOp) -> UOp | None:
  r = _norm_sum(u)
  return None if r is u else r


def _max_bounds(u: UOp) -> UOp | None:
  (a0, a1), (b0, b1) = bounds(u.src[0]), bounds(u.src[1])
  if u.op is Ops.MAX: return u.src[0] if a0 >= b1 else u.src[1] if b0 >= a1 else None
  return u.src[0] if a1 <= b0 else u.src[1] if b1 <= a0 else None


def _cmp_bounds(u: UOp) -> UOp | None:
  lo, hi = bounds(u)
  return UOp.const(bool(lo)) if lo == hi else None


_MINMAX, _DIVMOD, _CMP = (Ops.MAX, Ops.MIN), (Ops.FLOORDIV, Ops.FLOORMOD), tuple(COMPARE)
_index = lambda d: d is dtypes.index
_ints, _real = lambda d: d.is_int, lambda d: not d.is_complex
_data_ints = lambda d: d.is_int and d is not dtypes.index
x, y = UPat.var("x"), UPat.var("y")
one, zero = UPat.cvar(arg=1), UPat.cvar(arg=0)
neg_zero = UPat.cvar(where=lambda c: c.dtype.is_float and c.arg == 0 and math.copysign(1.0, c.arg) < 0)
ordered = lambda u: u.src[0].dtype.kind not in "fc"       # integers and bool: bounds may decide
positive = UPat.cvar(where=lambda c: c.arg > 0)

# The rules, in the order they are tried, one per line: (name in the table above, pattern, rewrite). A rule applies to a
# node whose sources are already simplified; its function returns the replacement, or None where the pattern does not
# simplify after all. Complex values take only constant folding and the WHERE and ==/!= rules (z*(1+0j) is not z in
# NumPy's arithmetic when a part is inf or nan); floats no identity that -0.0 or nan breaks.
_keep = lambda x: x
_zero_of = lambda u, x: UOp.const(0, u.dtype)
RULES: tuple[tuple[str, UPat, Callable[..., UOp | None]], ...] = (
  ("constant folding", UPat(Ops.CAST, src=(UPat(Ops.CONST),), name="u"), _fold_cast),
  ("constant folding", UPat(_FOLDABLE, name="u", where=lambda u: all(s.op is Ops.CONST for s in u.src)), _fold),
  ("bounds", UPat(Ops.WHERE, src=(UPat.var("c"), x, y)),
   lambda c, x, y: x if bounds(c)[0] else y if not bounds(c)[1] else None),
  ("identities", UPat(Ops.WHERE, src=(UPat(), x, x)), _keep),
  ("bounds", UPat(_CMP, name="u", where=ordered), _cmp_bounds),
  ("identities", UPat(_CMP, src=(x, x), name="u", where=ordered),
   lambda u, x: UOp.const(u.op in (Ops.CMPLE, Ops.CMPEQ))),
  ("identities", UPat(_MINMAX, src=(x, x), where=ordered), _keep),
  ("bounds", UPat(_MINMAX, name="u", where=ordered), _max_bounds),
  ("identities", UPat(Ops.MUL, _real, src=(x, one), commute=True), _keep),                  # x*1, 1*x
  ("identities", UPat(Ops.FDIV, _real, src=(x, one)), _keep),                               # x/1
  ("identities", UPat((Ops.AND, Ops.OR), dtypes.bool, name="u"), _bool_identity),
  ("identities", UPat(Ops.MUL, _ints, src=(x, zero), name="u", commute=True), _zero_of),    # x*0
  ("identities", UPat(Ops.ADD, _data_ints, src=(x, zero), commute=True), _keep),            # x+0
  ("identities", UPat(Ops.ADD, src=(x, neg_zero), commute=True), _keep),                    # x + -0.0
  ("identities", UPat(Ops.FLOORDIV, _ints, src=(x, one)), _keep),                           # x//1
  ("identities", UPat(Ops.FLOORMOD, _ints, src=(x, one), name="u"), _zero_of),              # x%1
  ("like terms, distribution, recombination", UPat((Ops.ADD, Ops.MUL), _index, name="u"), _normal_sum),
  ("division by a size", UPat(_DIVMOD, _index, src=(UPat(), UPat(where=lambda d: d.op is not Ops.CONST)), name="u"),
   _div_mod_symbolic),
  ("bounds", UPat(_DIVMOD, _index, src=(UPat(), positive), name="u"), _div_bounds),
  ("nested division", UPat(_DIVMOD, _index, src=(UPat(), positive), name="u"), _nested_div),
  ("division", UPat(_DIVMOD, _index, src=(UPat(), positive), name="u"), _divide),
)
symbolic = PatternMatcher([(pat, f) for _, pat, f in RULES])


class _Simplified:
  """simplify's memo for `rewrite`: the result cached on each node (u._simp: True for itself), shared by all calls."""
  __slots__ = ()
  def __contains__(self, u: UOp) -> bool: return u._simp is not None
  def __getitem__(self, u: UOp) -> UOp: return u if u._simp is True else u._simp
  def get(self, u: UOp) -> UOp | None: return None if u._simp is None else u if u._simp is True else u._simp
  def __setitem__(self, u: UOp, r: UOp) -> None: u._simp = True if r is u else r


_MEMO = _Simplified()


def simplify(root: UOp) -> UOp:
  """root rewritten to a fixpoint of the rules above. Values are unchanged at every point of the loops."""
  return graph_rewrite(root, symbolic, memo=_MEMO)
