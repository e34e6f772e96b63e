"""simplify() on random index expressions, evaluated at random points of their loops.

The grammar reaches further than tests/backend/test_symbolic.py: constants up to +-2**40 (index arithmetic past
int32), loops of up to 2**20 iterations, negative divisors, divisors that are expressions, MIN/MAX/WHERE and
boolean combinations. For every expression:

  - simplify keeps its value at every point drawn, and bounds() of both forms contain it;
  - simplify is a fixpoint: simplifying the result again returns the same node;
  - the C the renderer makes of both forms (with `int` or `int64_t` chosen from the bounds, and `/` `%`
    emitted where the bounds prove the operands non-negative) computes the same values, at every point of
    small loops.
"""
from __future__ import annotations
import itertools
import math
import random
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from minitensor.backend.debug import run_c
from minitensor.backend.dtype import dtypes
from minitensor.backend.symbolic import bounds, simplify
from minitensor.backend.uop import Ops, UOp, buf, range_, sink

BIG = 2**62          # the C check leaves out expressions whose values (or intermediates) pass this


def ref(op: Ops, a: list):
  """Python's value of op on a (floor division and modulo; x // 0 and x % 0 are 0, as in the compiled C)."""
  if op is Ops.ADD: return a[0] + a[1]
  if op is Ops.MUL: return a[0] * a[1]
  if op is Ops.FLOORDIV: return 0 if a[1] == 0 else a[0] // a[1]
  if op is Ops.FLOORMOD: return 0 if a[1] == 0 else a[0] % a[1]
  if op is Ops.MAX: return max(a)
  if op is Ops.MIN: return min(a)
  if op is Ops.WHERE: return a[1] if a[0] else a[2]
  if op is Ops.CAST: return int(a[0])
  cmp = {Ops.CMPLT: lambda x, y: x < y, Ops.CMPLE: lambda x, y: x <= y, Ops.CMPEQ: lambda x, y: x == y,
         Ops.CMPNE: lambda x, y: x != y, Ops.AND: lambda x, y: x and y, Ops.OR: lambda x, y: x or y,
         Ops.XOR: lambda x, y: x != y}
  return cmp[op](a[0], a[1])


def evaluate(u: UOp, env: dict) -> tuple[int | bool, int]:
  """(value of u with each RANGE r at env[r], the largest magnitude of any intermediate)."""
  val, big = {}, 0
  for x in u.toposort():
    if x.op is Ops.CONST: val[x] = x.arg
    elif x.op is Ops.RANGE: val[x] = env[x]
    else: val[x] = ref(x.op, [val[s] for s in x.src])
    big = max(big, abs(int(val[x])))
  return val[u], big


@st.composite
def int_expr(draw, rngs, depth):
  k = draw(st.integers(0, 11)) if depth > 0 else 0
  if k == 0:
    if draw(st.booleans()): return draw(st.sampled_from(rngs))
    return UOp.const(draw(st.one_of(st.integers(-30, 30), st.integers(-2**40, 2**40))))
  sub = lambda: draw(int_expr(rngs, depth - 1))
  a = sub()
  if k == 1: return a + sub()
  if k == 2: return a - sub()
  if k == 3: return a * draw(st.one_of(st.integers(-12, 12), st.integers(-2**20, 2**20)))
  if k == 4: return a * sub()
  if k in (5, 6):
    c = draw(st.one_of(st.integers(-16, 16), st.sampled_from([2**20, 2**31, -2**33])).filter(bool))
    return a // c if k == 5 else a % c
  if k in (7, 8):                       # a divisor that is an expression, provably positive
    dv = draw(st.sampled_from(rngs)) + draw(st.integers(1, 5))
    return a // dv if k == 7 else a % dv
  if k == 9: return a.maximum(sub())
  if k == 10: return a.minimum(sub())
  return draw(bool_expr(rngs, depth - 1)).where(a, sub())


@st.composite
def bool_expr(draw, rngs, depth):
  a, b = draw(int_expr(rngs, depth)), draw(int_expr(rngs, depth))
  c = UOp(draw(st.sampled_from([Ops.CMPLT, Ops.CMPLE, Ops.CMPEQ, Ops.CMPNE])), (a, b))
  if depth > 0 and draw(st.booleans()):
    c = UOp(draw(st.sampled_from([Ops.AND, Ops.OR, Ops.XOR])), (c, draw(bool_expr(rngs, depth - 1))))
  return c


def points(rngs, seed: int, n: int = 30) -> list[dict]:
  """Every point if there are few, else the corners and a random sample."""
  sizes = [r.arg.size for r in rngs]
  if math.prod(sizes) <= n: return [dict(zip(rngs, p)) for p in itertools.product(*map(range, sizes))]
  rnd = random.Random(seed)
  corners = [tuple(0 for _ in sizes), tuple(s - 1 for s in sizes)]
  return [dict(zip(rngs, p)) for p in corners + [tuple(rnd.randrange(s) for s in sizes) for _ in range(n)]]


@st.composite
def expressions(draw, max_size: int = 2**20):
  n = draw(st.integers(1, 3))
  rngs = [range_(draw(st.one_of(st.integers(1, 12), st.integers(1, max_size))), k) for k in range(n)]
  es = draw(st.lists(st.one_of(int_expr(rngs, 4), bool_expr(rngs, 2)), min_size=1, max_size=4))
  return rngs, es, draw(st.integers(0, 2**16))


@given(expressions())
def test_simplify_keeps_values_and_bounds(case):
  rngs, es, seed = case
  for e in es:
    s = simplify(e)
    assert simplify(s) is s, "simplify is not a fixpoint"
    for env in points(rngs, seed):
      (v, _), (w, _) = evaluate(e, env), evaluate(s, env)
      at = ", ".join(f"r{r.arg.idx}={x}" for r, x in env.items())
      assert v == w, f"at {at}: {v} before simplify, {w} after"
      for x, xv in ((e, v), (s, w)):
        lo, hi = bounds(x)
        assert lo <= xv <= hi, f"at {at}: value {xv} outside bounds [{lo}, {hi}]"


@settings(max_examples=max(1, settings.default.max_examples // 2))     # a compile per example
@given(expressions(max_size=6))
def test_rendered_c_computes_the_same_values(case):
  rngs, es, _ = case
  envs = points(rngs, 0, n=10**6)
  forms = [f for e in es for f in (e, simplify(e))]
  want = np.zeros((len(envs), len(forms)), np.int64)
  keep = []
  for j, f in enumerate(forms):
    vals = [evaluate(f, env) for env in envs]
    if max(b for _, b in vals) < BIG and max(abs(b) for b in bounds(f)) < BIG: keep.append(j)
    want[:, j] = [int(v) if abs(int(v)) < BIG else 0 for v, _ in vals]
  if not keep: return
  flat = UOp.const(0)
  for r in rngs: flat = flat * r.arg.size + r
  out = buf(0, len(envs) * len(keep), dtypes.int64)
  stores = [out.index(flat * len(keep) + c).store(forms[j].cast(dtypes.int64)) for c, j in enumerate(keep)]
  got = np.zeros(len(envs) * len(keep), np.int64)
  run_c(sink(UOp(Ops.SINK, tuple(stores)).end(*rngs)), {0: got})
  # points() enumerates in the loops' row-major order, as the kernel stores them
  np.testing.assert_array_equal(got.reshape(len(envs), len(keep)), want[:, keep])
