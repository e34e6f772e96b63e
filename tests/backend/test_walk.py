"""walk.py's pattern language: UPat matching (op, dtype, arg, sources, names, commute, where), PatternMatcher's
order and fall-through, and graph_rewrite's fixpoint over deep graphs."""
from minitensor.backend.dtype import dtypes
from minitensor.backend.uop import Ops, UOp, var
from minitensor.backend.walk import PatternMatcher, UPat, graph_rewrite

i, j = var(0, 1, 100), var(1, 1, 100)
x, y = UPat.var("x"), UPat.var("y")


def bind(p: UPat, u: UOp) -> dict | None:
  b: dict = {}
  return b if p.match(u, b) else None


def test_op_dtype_arg():
  f = UOp.const(2.5, dtypes.float32)
  assert bind(UPat(Ops.CONST), f) == {} and bind(UPat(Ops.ADD), f) is None
  assert bind(UPat((Ops.ADD, Ops.CONST)), f) == {}
  assert bind(UPat(dtype=dtypes.float32), f) == {} and bind(UPat(dtype=dtypes.float64), f) is None
  assert bind(UPat(dtype=(dtypes.float64, dtypes.float32)), f) == {}
  assert bind(UPat(dtype=lambda d: d.is_float), f) == {} and bind(UPat(dtype=lambda d: d.is_int), f) is None
  assert bind(UPat.cvar("c", arg=2.5), f) == {"c": f} and bind(UPat.cvar(arg=2), f) is None
  assert bind(UPat.cvar(arg=1), UOp.const(1.0, dtypes.float32)) == {}      # a value, as == compares it


def test_sources_and_names():
  s = i + j
  assert bind(UPat(Ops.ADD, src=(x, y)), s) == {"x": i, "y": j}
  assert bind(UPat(Ops.ADD, src=(x,)), s) is None                    # the number of sources must match
  assert bind(UPat(Ops.ADD, src=(x, x)), s) is None                  # a name bound twice: the same node
  assert bind(UPat(Ops.ADD, src=(x, x), name="u"), i + i) == {"x": i, "u": i + i}
  assert bind(UPat(Ops.ADD, src=(UPat(Ops.VAR, name="v"), UPat.cvar("c"))), i + 3)["c"].arg == 3


def test_commute_restores_bindings():
  p = UPat(Ops.ADD, src=(UPat(Ops.VAR, name="v"), UPat.cvar("c")), commute=True)
  s = UOp(Ops.ADD, (UOp.const(3), i))
  assert bind(p, s) == {"v": i, "c": s.src[0]}
  assert bind(UPat(Ops.ADD, src=(UPat(Ops.VAR, name="v"), UPat.cvar("c"))), s) is None
  # the first order binds v to the CONST's sibling before failing; the swapped order must start from scratch
  q = UPat(Ops.ADD, src=(UPat.var("v"), UPat(Ops.CONST, name="w")), commute=True)
  assert bind(q, s) == {"v": i, "w": s.src[0]}


def test_where_predicate():
  p = UPat(Ops.CONST, name="c", where=lambda c: c.arg > 0)
  assert bind(p, UOp.const(3)) is not None and bind(p, UOp.const(-3)) is None


def test_matcher_order_and_fall_through():
  calls = []
  def first(x):
    calls.append("first")
    return None                           # declines: the next rule is tried
  pm = PatternMatcher([(UPat(Ops.ADD, src=(x, UPat.cvar(arg=0))), first),
                       (UPat(Ops.ADD, src=(x, UPat.cvar(arg=0))), lambda x: x),
                       (UPat(Ops.ADD, name="u"), lambda u: UOp.const(-1))])
  assert pm.rewrite(i + 0) is i and calls == ["first"]
  assert pm.rewrite(i + j).arg == -1 and pm.rewrite(i) is None
  assert (pm + PatternMatcher([(UPat(Ops.VAR), lambda: UOp.const(7))])).rewrite(i).arg == 7


def test_ctx_is_passed():
  pm = PatternMatcher([(UPat(Ops.VAR, name="v"), lambda ctx, v: ctx.setdefault(v.arg.idx, UOp.const(v.arg.idx + 10)))])
  seen: dict = {}
  out = graph_rewrite(i + j, pm, seen)
  assert out.src[0].arg == 10 and out.src[1].arg == 11 and set(seen) == {0, 1}


def test_graph_rewrite_reaches_a_fixpoint():
  # (x + 1) -> x + 0 ... every rewrite of the replacement too, until x + 0 -> x
  pm = PatternMatcher([(UPat(Ops.ADD, src=(x, UPat.cvar("c", where=lambda c: c.arg > 0))),
                        lambda x, c: UOp(Ops.ADD, (x, UOp.const(c.arg - 1)))),
                       (UPat(Ops.ADD, src=(x, UPat.cvar(arg=0))), lambda x: x)])
  assert graph_rewrite(UOp(Ops.ADD, (i, UOp.const(5))), pm) is i
  # bottom-up: a rewrite inside a sum is seen by the rules of its parent
  assert graph_rewrite(UOp(Ops.ADD, (UOp(Ops.ADD, (i, UOp.const(2))), UOp.const(1))), pm) is i


def test_graph_rewrite_deep_graph():
  u = i
  for _ in range(20000): u = UOp(Ops.ADD, (u, UOp.const(0)))
  pm = PatternMatcher([(UPat(Ops.ADD, src=(x, UPat.cvar(arg=0))), lambda x: x)])
  assert graph_rewrite(u, pm) is i


def test_memo_continues_walks():
  n = [0]
  def count(v):
    n[0] += 1
    return None
  pm = PatternMatcher([(UPat(Ops.VAR, name="v"), count)])
  memo: dict = {}
  graph_rewrite(i + j, pm, memo=memo)
  graph_rewrite((i + j) * 2, pm, memo=memo)
  assert n[0] == 2                        # each VAR once across both walks
