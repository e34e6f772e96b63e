"""Symbolic simplification.

simplify(u) rewrites a graph to a fixpoint. Index arithmetic (dtype `index`, unbounded integers with
Python's floor semantics) is kept in a normal form: a left-nested sum of terms `atom*coef`, atoms ordered by
the loops they mention, the constant last. On that form:

    constant folding            any ALU op of CONSTs (integers wrap like C, floats round like NumPy); of complex
                                ops only the exact ones (REAL, IMAG, CMPLX, ==, !=, WHERE): the rest are C calls
    identities                  x*1, x//1, x%1, x/1, and x+0, x*0 on integers (not floats: -0.0, nan)
    like terms, distribution    i*4 + i -> i*5;  (i*4 + j)*4 -> i*16 + j*4
    recombination               (x//c)*c + x%c -> x
    division                    (a*c + b)//c -> a + b//c;  (a*c + b)%c -> b%c;  gcd cancellation
    nested division             (x//a)//b -> x//(a*b);  (x%(k*c))%c -> x%c
    bounds                      x//c -> k and x%c -> x - k*c when vmin(x)//c == vmax(x)//c;
                                comparisons, MAX/MIN and WHERE decided when the bounds decide them

The bounds it reads, (vmin, vmax) of integer and bool nodes from RANGE sizes and constants, are computed in uop.py
(`bounds`, `u.vmin`, `u.vmax`: they live with the node, so the IR needs no import of this pass); simplify's result
is cached on the node as the bounds are (nodes are immutable, so both are pure functions of the node).
"""
from __future__ import annotations
import math
import numpy as np
from minitensor.backend.dtype import DType, dtypes, float_to_int
from minitensor.backend.uop import COMPARE, Ops, UOp, bounds

_SHIFTS = (Ops.SHL, Ops.SHR)


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
      f = {Ops.ADD: np.add, Ops.MUL: np.multiply, Ops.FDIV: np.divide, Ops.MAX: np.maximum, Ops.MIN: np.minimum,
           Ops.FLOORDIV: np.floor_divide, Ops.FLOORMOD: np.remainder, Ops.CMPLT: np.less, Ops.CMPLE: np.less_equal,
           Ops.CMPEQ: np.equal, Ops.CMPNE: np.not_equal, Ops.ABS: np.abs, Ops.FLOOR: np.floor, Ops.CEIL: np.ceil,
           Ops.TRUNC: np.trunc, Ops.RINT: np.rint, Ops.SQRT: np.sqrt}.get(op)
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
      elif f.op is Ops.RANGE: fp = {(): f.arg.size - 1} if f.arg.var is None else {(f.arg.var.arg.idx,): 1, (): -1}
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


def _div_mod(u: UOp) -> UOp | None:
  x, dv = u.src
  if dv.op is not Ops.CONST: return _div_mod_symbolic(u)
  if dv.arg <= 0: return None
  d = dv.arg
  if d == 1: return x if u.op is Ops.FLOORDIV else UOp.const(0)
  lo, hi = bounds(x)
  if lo // d == hi // d: return UOp.const(lo // d) if u.op is Ops.FLOORDIV else x - (lo // d) * d if lo // d else x
  if u.op is Ops.FLOORDIV and x.op is Ops.FLOORDIV and x.src[1].op is Ops.CONST and x.src[1].arg > 0:
    return UOp(Ops.FLOORDIV, (x.src[0], UOp.const(x.src[1].arg * d)))
  if u.op is Ops.FLOORMOD and x.op is Ops.FLOORMOD and x.src[1].op is Ops.CONST and x.src[1].arg % d == 0:
    return UOp(Ops.FLOORMOD, (x.src[0], dv))
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


# ---------------------------------------------------------------- rules
def _rules(u: UOp) -> UOp | None:
  """One rewrite of u (whose sources are already simplified), or None if no rule applies."""
  op, src, d = u.op, u.src, u.dtype
  if op is Ops.CAST and src[0].op is Ops.CONST:
    v = _cast_const(src[0].arg, d)
    return None if v is None else UOp.const(v, d)
  if op not in _FOLDABLE: return None
  if src and all(s.op is Ops.CONST for s in src):
    v = exec_alu(op, src[-1].dtype, tuple(s.arg for s in src))
    if v is not None: return UOp.const(v, d)
  if op is Ops.WHERE:
    c0, c1 = bounds(src[0])
    if c0: return src[1]
    if not c1: return src[2]
    if src[1] is src[2]: return src[1]
    return None
  if op in COMPARE or op in (Ops.MAX, Ops.MIN):
    if src[0].dtype.kind in "fc": return None
    (a0, a1), (b0, b1) = bounds(src[0]), bounds(src[1])
    if op in COMPARE:
      lo, hi = bounds(u)
      if lo == hi: return UOp.const(bool(lo))
      if src[0] is src[1]: return UOp.const(op in (Ops.CMPLE, Ops.CMPEQ))
      return None
    if src[0] is src[1]: return src[0]
    if op is Ops.MAX: return src[0] if a0 >= b1 else src[1] if b0 >= a1 else None
    return src[0] if a1 <= b0 else src[1] if b1 <= a0 else None
  if d.is_complex: return None          # z*(1+0j) is not z in NumPy's arithmetic when a part is inf or nan
  one = lambda s: s.op is Ops.CONST and s.arg == 1
  zero = lambda s: s.op is Ops.CONST and s.arg == 0
  if op is Ops.MUL and (one(src[1]) or one(src[0])): return src[0] if one(src[1]) else src[1]
  if op is Ops.FDIV and one(src[1]): return src[0]
  if d.is_bool and op in (Ops.AND, Ops.OR):
    for a, b in (src, src[::-1]):
      if a.op is Ops.CONST: return b if a.arg == (op is Ops.AND) else a
    return src[0] if src[0] is src[1] else None
  if not d.is_int: return None
  if op is Ops.MUL and (zero(src[0]) or zero(src[1])): return UOp.const(0, d)
  if d is not dtypes.index:
    if op is Ops.ADD and (zero(src[0]) or zero(src[1])): return src[1] if zero(src[0]) else src[0]
    if op in (Ops.FLOORDIV, Ops.FLOORMOD) and one(src[1]): return src[0] if op is Ops.FLOORDIV else UOp.const(0, d)
    return None
  if op in (Ops.ADD, Ops.MUL):
    r = _norm_sum(u)
    return None if r is u else r
  if op in (Ops.FLOORDIV, Ops.FLOORMOD): return _div_mod(u)
  return None


_FOLDABLE = {Ops.ADD, Ops.MUL, Ops.FDIV, Ops.FLOORDIV, Ops.FLOORMOD, Ops.MAX, Ops.MIN, Ops.POW, Ops.AND, Ops.OR,
             Ops.XOR, Ops.SHL, Ops.SHR, Ops.WHERE, Ops.ABS, Ops.FLOOR, Ops.CEIL, Ops.TRUNC, Ops.RINT, Ops.SQRT,
             Ops.REAL, Ops.IMAG, Ops.CMPLX} | COMPARE


def _done(u: UOp) -> UOp | None:
  s = u._simp
  return None if s is None else u if s is True else s


def simplify(root: UOp) -> UOp:
  """root rewritten to a fixpoint of the rules above. Values are unchanged at every point of the loops."""
  if (r := _done(root)) is not None: return r
  order: list[UOp] = []
  seen: set[UOp] = set()
  stack: list[tuple[UOp, bool]] = [(root, False)]
  while stack:
    u, post = stack.pop()
    if post: order.append(u); continue
    if u in seen or u._simp is not None: continue
    seen.add(u)
    stack.append((u, True))
    stack.extend((s, False) for s in reversed(u.src))
  for u in order:
    src = tuple(_done(s) for s in u.src)
    v = u if all(a is b for a, b in zip(src, u.src)) else u.replace(src=src)
    r = v if (w := _rules(v)) is None else simplify(w)
    r._simp = True
    u._simp = True if r is u else r
    if v._simp is None: v._simp = True if r is v else r
  return _done(root)
