"""The op table (ops.py), the rewrite walker (uop.rewrite), the symbolic rule table and kernelize's Lowering summary."""
import numpy as np
import pytest
from minitensor import ufuncs as U
from minitensor.backend import kernelize as K
from minitensor.backend import symbolic
from minitensor.backend.cost import summarize
from minitensor.backend.dtype import dtypes
from minitensor.backend.ops import ALU, ALU_OPS, BINARY, COMPARE, TRANSCENDENTAL, UNARY, Ops
from minitensor.backend.rangeify import Ctx, lower
from minitensor.backend.render_c import PRELUDE, render_c
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import UOp, UOpError, buf, range_, rewrite
from strict_c import compile_strict

DTYPES = [d for d in dtypes.all if d is not dtypes.float16]


def test_every_elementwise_op_has_one_entry():
  shape_world = {Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.SHRINK, Ops.REDUCE, Ops.STACK, Ops.STAGE, Ops.PAD, Ops.FLIP,
                 Ops.SCAN}
  loop_world = {Ops.CONST, Ops.BUFFER, Ops.ALLOC, Ops.RANGE, Ops.INDEX, Ops.LOAD, Ops.STORE, Ops.AFTER, Ops.END,
                Ops.SINK, Ops.CAST, Ops.BITCAST, Ops.VAR}
  assert set(Ops) == set(ALU_OPS) | shape_world | loop_world and not set(ALU_OPS) & (shape_world | loop_world)
  assert ALU == set(ALU_OPS) | {Ops.CAST, Ops.BITCAST} and UNARY | BINARY | {Ops.WHERE} == set(ALU_OPS)
  for op, d in ALU_OPS.items():
    assert d.operands in ("float", "int", "bits", "num", "any", "complex", "parts"), op
    assert d.result in ("same", "bool", "real", "complex") and d.cost in ("cheap", "transcendental"), op
    assert (op in COMPARE) == (d.result == "bool") and (op in TRANSCENDENTAL) == (d.cost == "transcendental")
    if d.ufunc is not None:
      assert isinstance(getattr(np, d.ufunc), np.ufunc) and getattr(np, d.ufunc).nin == d.arity, op
    if d.simd: assert d.c.isidentifier() and d.cost == "transcendental" and f"({d.c})" in PRELUDE, op


def test_ufunc_table_reads_the_op_table():
  """Every ufunc the op table names is in ufuncs.TABLE; those not built otherwise are exactly their op."""
  x, y = buf(0, 4, dtypes.float64).reshape((4,)), buf(1, 4, dtypes.float64).reshape((4,))
  for op, d in ALU_OPS.items():
    if d.ufunc is None: continue
    f = getattr(np, d.ufunc)
    assert f in U.TABLE, d.ufunc
    if d.operands == "float": assert U.TABLE[f](*(x, y)[:d.arity]) is UOp(op, (x, y)[:d.arity])


def _accepted(op: Ops, d) -> bool:
  src = (UOp.const(True),) if op is Ops.WHERE else ()
  try:
    UOp(op, src + tuple(UOp.const(1, d) for _ in range(2 if op is Ops.WHERE else ALU_OPS[op].arity)))
    return True
  except UOpError: return False


@pytest.mark.parametrize("d", DTYPES, ids=lambda d: d.name)
def test_every_accepted_op_renders_and_compiles(d):
  """The type rule and the C spellings agree: every (op, dtype) the type checker accepts renders to C that compiles
  with warnings as errors (one translation unit per dtype)."""
  parts = []
  for k, op in enumerate(ALU_OPS):
    if not _accepted(op, d): continue
    n = 2 if op is Ops.WHERE else ALU_OPS[op].arity
    ins = [buf(1 + j, 8, d).index(range_(8, 0)).load() for j in range(n)]
    if op is Ops.WHERE: ins = [ins[0].ne(ins[1])] + ins
    v = UOp(op, tuple(ins))
    parts.append(render_c(buf(0, 8, v.dtype).index(range_(8, 0)).store(v).end(range_(8, 0)), f"k{k}")
                 .replace(PRELUDE, ""))
  assert len(parts) >= 10
  compile_strict(PRELUDE + "".join(parts))


# ---------------------------------------------------------------- rewrite
def _chain(n: int) -> tuple[UOp, UOp]:
  leaf = buf(0, 4).reshape((4,))
  x = leaf
  for k in range(n): x = x * 2.0 if k % 2 else x + 1.0
  return leaf, x


def test_rewrite_substitutes_deep_graphs_without_recursion():
  leaf, x = _chain(12_000)
  other = buf(1, 4).reshape((4,))
  y = x.substitute({leaf: other})
  assert y is not x and other in y.toposort() and leaf not in y.toposort()
  assert y.substitute({other: leaf}) is x                    # hash-consing: the same graph back
  assert rewrite(x) is x                                     # nothing to change: every node kept


def test_rewrite_visits_each_node_once_and_stops_at_the_memo():
  """A ladder of 60 diamonds has 2^60 paths; the walk calls fn once per node, and never below a seeded entry."""
  x = buf(0, 4).reshape((4,))
  nodes = [x]
  for _ in range(60):
    x = (x + 1.0) * (x * 3.0)
    nodes.append(x)
  calls = []
  def fn(u, src):
    calls.append(u)
    return None
  rewrite(x, fn)
  assert len(calls) == len(x.toposort()) and len(set(calls)) == len(calls)
  calls.clear()
  mid = nodes[30]
  rewrite(x, fn, {mid: mid})
  assert not set(calls) & set(nodes[:31]) and nodes[31] in calls      # (the constants are shared by all levels)


def test_rewrite_results_replace_nodes_bottom_up():
  """fn sees its sources already rewritten: every constant 1.0 becomes 2.0 and the graph is rebuilt on top."""
  leaf, x = _chain(5000)
  two = lambda u, src: UOp.const(2.0, u.dtype) if u.op is Ops.CONST and u.arg == 1.0 else None
  y = rewrite(x, two)
  want = leaf
  for k in range(5000): want = want * 2.0 if k % 2 else want + 2.0
  assert y is want


def test_simplify_of_a_deep_sum():
  i = range_(10, 0)
  x = UOp.const(0)
  for k in range(10_000): x = x + i * (k % 3)
  assert simplify(x) is simplify(i * sum(k % 3 for k in range(10_000)))


def test_rule_table_names_the_docstring_rules():
  """One rule per line, named as the module docstring's table (and the seed) names them; every named rule is used."""
  lines = symbolic.__doc__.splitlines()
  rows = [line[4:].split("  ")[0] for line in lines if line.startswith("    ") and line[4] != " "]
  names = {n for row in rows for n in row.split(", ")}
  used = {n for name, pat, f in symbolic.RULES for n in name.split(", ")}
  assert used == names, (used ^ names)
  assert all(pat.ops and callable(f) for _, pat, f in symbolic.RULES)


# ---------------------------------------------------------------- Lowering: what kernelize's cost model reads
def _matmul(p: UOp, q: UOp) -> UOp:
  n = p.shape[0]
  return (p.reshape((n, 1, n)).expand((n, n, n)) * q.permute((1, 0)).reshape((1, n, n)).expand((n, n, n))).reduce(
    Ops.ADD, 1)


def test_lowering_counts_inline_reduce_work():
  n = 8
  a, b, c = (buf(k, n * n).reshape((n, n)) for k in range(3))
  ab = _matmul(a, b)
  abc = _matmul(ab, c)
  ctx = Ctx()
  low = summarize(ctx, lower(abc, buf(3, n * n), ctx))
  assert low.reduce_work == {abc: n ** 3, ab: n ** 4}        # A @ B recomputed for every column of the result


def test_lowering_counts_evaluations_where_values_are_placed():
  n, m = 6, 5
  x = buf(0, n).reshape((n,))
  e = UOp(Ops.EXP, (x,))
  for shape, expand, want in (((n, 1), (n, m), n), ((1, n), (m, n), n * m)):
    ctx = Ctx()
    low = summarize(ctx, lower(e.reshape(shape).expand(expand) + 1.0, buf(1, n * m), ctx))
    assert low.evaluations[e] == want          # hoisted out of the inner loop when its value allows


def test_schedule_lowers_only_changed_kernels(monkeypatch):
  """(A @ B) @ C: the output kernel is lowered, asks for A @ B, which is lowered once, and the output once more."""
  calls = []
  orig = K._kernel
  monkeypatch.setattr(K, "_kernel", lambda root, *a, **kw: calls.append(root) or orig(root, *a, **kw))
  n = 16
  a, b, c = (buf(k, n * n).reshape((n, n)) for k in range(3))
  s = K.schedule([_matmul(_matmul(a, b), c)], 3)
  assert len(s.kernels) == 2 and len(calls) == 3 and len(set(calls)) == 2
