"""linearize (through render_c): hand-built loop programs with accumulators, checked for loop structure in the
linearized program and the generated C, compiled with -Wall -Werror, and run against NumPy."""
import re
import numpy as np
import pytest
from minitensor.backend.debug import run_c
from minitensor.backend.dtype import dtypes
from minitensor.backend.linearize import LinearizeError, linearize
from minitensor.backend.render_c import render_c, render_function
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import AxisType, Ops, ParamArg, UOp, buf, range_, sink
from strict_c import compile_strict


def run_kernel(s: UOp, bufs: dict, name: str) -> str:
  """Render, check with -Wall -Werror, run; the C function (without prelude) for structure assertions."""
  compile_strict(render_c(s, name))
  run_c(s, bufs, name)
  return render_function(s, name)


def loop_nest(src: str) -> list[tuple[str, tuple[str, ...]]]:
  """Each line of a C function with the loop counters of the for loops around it (outermost first)."""
  out, stack = [], []
  for line in src.splitlines():
    t = line.strip()
    if t == "}":
      if stack: stack.pop()
      continue
    out.append((t, tuple(stack)))
    if (m := re.match(r"for \(\w+ (ridx\d+) = 0;", t)): stack.append(m.group(1))
  return out


def acc(slot: int, d=dtypes.float32) -> UOp: return UOp(Ops.ALLOC, (), ParamArg(slot, d, (1,)))


def reduce_loop(a: UOp, scope: tuple, r: UOp, identity: UOp, combine, value: UOp):
  """The seed's accumulator pattern: (the update ended by r, the read after the loop)."""
  a0 = a.after(*scope)
  init = a0.index(0).store(identity)
  al = a0.after(init, r)
  upd = al.index(0).store(combine(al.index(0).load(), value))
  return a0, upd


# ---------------------------------------------------------------- GEMM
def gemm_program(N: int) -> UOp:
  A, B, C = buf(0, N * N), buf(1, N * N), buf(2, N * N)
  i, j, k = range_(N, 0), range_(N, 1), range_(N, 2, AxisType.REDUCE)
  a0, upd = reduce_loop(acc(0), (i, j), k, UOp.const(0.0), lambda x, v: x + v,
                        A.index(i * N + k).load() * B.index(k * N + j).load())
  res = a0.after(upd.end(k)).index(0).load()
  return sink(C.index(i * N + j).store(res).end(i, j))


def test_gemm():
  N = 8
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((N, N), dtype=np.float32), rng.standard_normal((N, N), dtype=np.float32)
  c = np.zeros(N * N, np.float32)
  src = run_kernel(simplify(gemm_program(N)), {0: a.ravel(), 1: b.ravel(), 2: c}, "gemm")
  np.testing.assert_allclose(c.reshape(N, N), a @ b, rtol=1e-5, atol=1e-5)
  nest = dict(loop_nest(src))
  assert nest["acc0 = 0.0f;"] == ("ridx0", "ridx1")                  # reset once per output element
  assert [ln for ln, s in loop_nest(src) if ln.startswith("for")] == \
    [f"for (int ridx{k} = 0; ridx{k} < {N}; ridx{k}++) {{" for k in range(3)]
  store = next(s for ln, s in loop_nest(src) if ln.startswith("data2["))
  assert store == ("ridx0", "ridx1")                                 # the store is after the k loop, not in it


def test_gemm_is_not_the_syllabus_gemm():
  # swapping the operand indices gives A * rowsum(B): NumPy, not a hand expectation, tells them apart
  N = 8
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((N, N), dtype=np.float32), rng.standard_normal((N, N), dtype=np.float32)
  A, B, C = buf(0, N * N), buf(1, N * N), buf(2, N * N)
  i, j, k = range_(N, 0), range_(N, 1), range_(N, 2, AxisType.REDUCE)
  a0, upd = reduce_loop(acc(0), (i, j), k, UOp.const(0.0), lambda x, v: x + v,
                        A.index(i * N + j).load() * B.index(i * N + k).load())
  s = simplify(sink(C.index(i * N + j).store(a0.after(upd.end(k)).index(0).load()).end(i, j)))
  c = np.zeros(N * N, np.float32)
  src = run_kernel(s, {0: a.ravel(), 1: b.ravel(), 2: c}, "syllabus")
  np.testing.assert_allclose(c.reshape(N, N), a * b.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
  assert not np.allclose(c.reshape(N, N), a @ b, atol=1e-2)
  load_a = next(s for ln, s in loop_nest(src) if "data0[" in ln)
  assert load_a == ("ridx0", "ridx1")                                # A's load is hoisted out of the k loop


# ---------------------------------------------------------------- x - rowmax(x): sibling loops
def sub_max_program(R: int, C: int) -> UOp:
  x, out = buf(0, R * C), buf(1, R * C)
  i, j, r = range_(R, 0), range_(C, 1), range_(C, 2, AxisType.REDUCE)
  a0, upd = reduce_loop(acc(0), (i,), r, UOp.const(-np.inf), lambda a, v: a.maximum(v), x.index(i * C + r).load())
  m = a0.after(upd.end(r)).index(0).load()
  return sink(out.index(i * C + j).store(x.index(i * C + j).load() - m).end(i, j))


@pytest.mark.parametrize("R,C", [(3, 4), (5, 7)])
def test_sub_max_sibling_loops(R, C):
  rng = np.random.default_rng(2)
  x = rng.standard_normal((R, C)).astype(np.float32)
  x[1, 2] = np.nan                                                   # max propagates NaN as NumPy's does
  x[2] = -np.inf
  out = np.zeros(R * C, np.float32)
  s = simplify(sub_max_program(R, C))
  src = run_kernel(s, {0: x.ravel(), 1: out}, "sub_max")
  with np.errstate(invalid="ignore"):
    np.testing.assert_array_equal(out.reshape(R, C), x - x.max(1, keepdims=True))
  nest = loop_nest(src)
  inits = [s for ln, s in nest if ln.startswith("acc0 = -INFINITY")]
  assert inits == [("ridx0",)], f"the accumulator reset must sit in the row loop only:\n{src}"
  max_loop = next(s for ln, s in nest if ln.startswith("for (int ridx2"))
  col_loop = next(s for ln, s in nest if ln.startswith("for (int ridx1"))
  assert max_loop == ("ridx0",) and col_loop == ("ridx0",), f"max loop and column loop must be siblings:\n{src}"
  assert all("ridx1" not in s for ln, s in nest if "ridx2" in s), "the max loop is nested inside the column loop"
  # loop-invariant work is hoisted: the negated row max is computed once per row, not per column
  assert all(s == ("ridx0",) for ln, s in nest if "-1.0f" in ln), \
    f"row-invariant arithmetic inside the column loop:\n{src}"
  lines = [ln for ln, _ in nest]
  assert lines.index(next(ln for ln in lines if ln.startswith("for (int ridx2"))) < \
    lines.index(next(ln for ln in lines if ln.startswith("for (int ridx1")))
  # the same facts in the linearized program
  prog = linearize(s)
  opens = [k for k, st in enumerate(prog) if st.kind == "open"]
  order = [(prog[k].u.arg.idx) for k in opens]
  assert order == [0, 2, 1]
  depth, depths = 0, {}
  for st in prog:
    if st.kind == "open": depth += 1; depths[st.u.arg.idx] = depth
    elif st.kind == "close": depth -= 1
  assert depths == {0: 1, 2: 2, 1: 2}


# ---------------------------------------------------------------- two accumulators, one reduce loop
def neighbors_program(R: int, C: int) -> UOp:
  x, out = buf(0, R * C), buf(1, R - 1)
  i, r = range_(R - 1, 0), range_(C, 1, AxisType.REDUCE)
  add = lambda a, v: a + v
  a0, ua = reduce_loop(acc(0), (i,), r, UOp.const(0.0), add, x.index(i * C + r).load())
  b0, ub = reduce_loop(acc(1), (i,), r, UOp.const(0.0), add, x.index((i + 1) * C + r).load())
  end = UOp(Ops.END, (UOp(Ops.SINK, (ua, ub)), r))                  # both updates end the same loop once
  s_i, s_next = a0.after(end).index(0).load(), b0.after(end).index(0).load()
  return sink(out.index(i).store(s_i + s_next).end(i))


@pytest.mark.parametrize("R,C", [(4, 5), (6, 3)])
def test_neighbors_share_one_loop(R, C):
  rng = np.random.default_rng(3)
  x = rng.standard_normal((R, C)).astype(np.float32)
  out = np.zeros(R - 1, np.float32)
  src = run_kernel(simplify(neighbors_program(R, C)), {0: x.ravel(), 1: out}, "neighbors")
  s = x.sum(1)
  np.testing.assert_allclose(out, s[:-1] + s[1:], rtol=1e-5, atol=1e-6)
  nest = loop_nest(src)
  assert sum(ln.startswith("for (int ridx1") for ln, _ in nest) == 1, f"one reduce loop for both accumulators:\n{src}"
  for a in ("acc0", "acc1"):
    assert [s for ln, s in nest if ln == f"float {a};"] == [("ridx0",)]
    assert [s for ln, s in nest if ln == f"{a} = 0.0f;"] == [("ridx0",)]
    assert any(ln.startswith(f"{a} = (") and s == ("ridx0", "ridx1") for ln, s in nest)


def test_unsimplified_index_nests_the_reduce():
  # the seed's pitfall, the other way round: an accumulator scoped by a loop it does not use is reset per
  # iteration of that loop. The values stay right, only the work grows; the C shows where the reset is.
  R, C = 3, 4
  x, out = buf(0, R * C), buf(1, R * C)
  i, j, r = range_(R, 0), range_(C, 1), range_(C, 2, AxisType.REDUCE)
  a0, upd = reduce_loop(acc(0), (i, j), r, UOp.const(-np.inf), lambda a, v: a.maximum(v), x.index(i * C + r).load())
  m = a0.after(upd.end(r)).index(0).load()
  s = simplify(sink(out.index(i * C + j).store(x.index(i * C + j).load() - m).end(i, j)))
  xs = np.random.default_rng(4).standard_normal((R, C)).astype(np.float32)
  o = np.zeros(R * C, np.float32)
  src = run_kernel(s, {0: xs.ravel(), 1: o}, "nested_max")
  np.testing.assert_array_equal(o.reshape(R, C), xs - xs.max(1, keepdims=True))
  assert [s for ln, s in loop_nest(src) if ln.startswith("acc0 = -INFINITY")] == [("ridx0", "ridx1")]


def test_each_node_emitted_once_and_loops_balanced():
  for s in (gemm_program(4), sub_max_program(3, 4), neighbors_program(4, 5)):
    prog = linearize(simplify(s))
    nodes = [st.u for st in prog if st.kind == "node"]
    assert len(nodes) == len(set(nodes))
    assert all(u.op not in (Ops.CONST, Ops.RANGE, Ops.BUFFER, Ops.ALLOC, Ops.SINK, Ops.END) for u in nodes)
    stack = []
    for st in prog:
      if st.kind == "open": stack.append(st.u)
      elif st.kind == "close": assert stack.pop() is st.u
    assert not stack
    pos = {u: k for k, u in enumerate(nodes)}
    for u in nodes:                              # every statement comes after the statements it reads
      for x in u.src:
        if x in pos: assert pos[x] < pos[u], f"{u.op} before its source {x.op}"


def test_node_in_two_sibling_loops_is_an_error():
  i, j = range_(3, 0), range_(4, 1)
  b = buf(0, 12)
  # a value that needs i and j, stored after the j loop closed only: no loop nest can hold it
  st1 = b.index(j).store(UOp.const(1.0))
  x = b.after(st1.end(j)).index(i).load()
  y = b.index(i * 4 + j).load()
  bad = sink(b.index(i).store(x + y).end(i))
  with pytest.raises(LinearizeError):
    linearize(bad)


# ---------------------------------------------------------------- more shapes of accumulator programs
def test_softmax_three_sibling_loops():
  R, C = 4, 6
  x, out = buf(0, R * C), buf(1, R * C)
  i, j, r1, r2 = range_(R, 0), range_(C, 1), range_(C, 2, AxisType.REDUCE), range_(C, 3, AxisType.REDUCE)
  a0, upd = reduce_loop(acc(0), (i,), r1, UOp.const(-np.inf), lambda a, v: a.maximum(v), x.index(i * C + r1).load())
  m = a0.after(upd.end(r1)).index(0).load()
  e = lambda k: UOp(Ops.EXP, (x.index(i * C + k).load() - m,))
  b0, upd2 = reduce_loop(acc(1), (i,), r2, UOp.const(0.0), lambda a, v: a + v, e(r2))
  tot = b0.after(upd2.end(r2)).index(0).load()
  s = simplify(sink(out.index(i * C + j).store(e(j) / tot).end(i, j)))
  xs = np.random.default_rng(5).standard_normal((R, C)).astype(np.float32) * 4
  o = np.zeros(R * C, np.float32)
  src = run_kernel(s, {0: xs.ravel(), 1: o}, "softmax")
  ex = np.exp(xs - xs.max(1, keepdims=True))
  np.testing.assert_allclose(o.reshape(R, C), ex / ex.sum(1, keepdims=True), rtol=1e-5)
  nest = loop_nest(src)
  fors = [(ln.split()[2], s) for ln, s in nest if ln.startswith("for")]
  assert fors == [("ridx0", ()), ("ridx2", ("ridx0",)), ("ridx3", ("ridx0",)), ("ridx1", ("ridx0",))], src


def test_scalar_reduction_of_row_maxima():
  # sum_i max_j x[i, j]: the inner accumulator lives in the i loop, the outer one at the top
  R, C = 5, 3
  x, out = buf(0, R * C), buf(1, 1)
  i, j = range_(R, 0, AxisType.REDUCE), range_(C, 1, AxisType.REDUCE)
  a0, upd = reduce_loop(acc(0), (i,), j, UOp.const(-np.inf), lambda a, v: a.maximum(v), x.index(i * C + j).load())
  rowmax = a0.after(upd.end(j)).index(0).load()
  b0, upd2 = reduce_loop(acc(1), (), i, UOp.const(0.0), lambda a, v: a + v, rowmax)
  s = simplify(sink(out.index(0).store(b0.after(upd2.end(i)).index(0).load())))
  xs = np.random.default_rng(6).standard_normal((R, C)).astype(np.float32)
  o = np.zeros(1, np.float32)
  src = run_kernel(s, {0: xs.ravel(), 1: o}, "sum_of_max")
  np.testing.assert_allclose(o[0], xs.max(1).sum(), rtol=1e-6)
  nest = dict(loop_nest(src))
  assert nest["acc1 = 0.0f;"] == () and nest["acc0 = -INFINITY;"] == ("ridx0",)


def test_accumulator_array():
  # an ALLOC of 4 elements: a per-row histogram of x % 4 counts (int32), reset in the row loop
  R, C, K = 3, 10, 4
  x, out = buf(0, R * C, dtypes.int32), buf(1, R * K, dtypes.int32)
  i, k, r, k2 = range_(R, 0), range_(K, 1), range_(C, 2, AxisType.REDUCE), range_(K, 3)
  h = UOp(Ops.ALLOC, (), ParamArg(0, dtypes.int32, (K,)))
  h0 = h.after(i)
  init = h0.index(k).store(UOp.const(0, dtypes.int32)).end(k)
  hl = h0.after(init, r)
  b = x.index(i * C + r).load() % UOp.const(K, dtypes.int32)
  upd = hl.index(b.cast(dtypes.index)).store(hl.index(b.cast(dtypes.index)).load() + UOp.const(1, dtypes.int32))
  res = h0.after(upd.end(r)).index(k2).load()
  s = simplify(sink(out.index(i * K + k2).store(res).end(i, k2)))
  xs = np.random.default_rng(7).integers(-50, 50, (R, C)).astype(np.int32)
  o = np.zeros(R * K, np.int32)
  src = run_kernel(s, {0: xs.ravel(), 1: o}, "hist")
  want = np.stack([np.bincount(row % K, minlength=K) for row in xs]).astype(np.int32)
  np.testing.assert_array_equal(o.reshape(R, K), want)
  assert dict(loop_nest(src))[f"int32_t acc0[{K}];"] == ("ridx0",)


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 2, 0)])
def test_gemm_with_any_range_numbering(order):
  # the loop structure follows the graph, not the RANGE numbers: the reduce range may have the lowest number
  N = 5
  A, B, C = buf(0, N * N), buf(1, N * N), buf(2, N * N)
  i, j = range_(N, order[0]), range_(N, order[1])
  k = range_(N, order[2], AxisType.REDUCE)
  a0, upd = reduce_loop(acc(0), (i, j), k, UOp.const(0.0), lambda x, v: x + v,
                        A.index(i * N + k).load() * B.index(k * N + j).load())
  s = simplify(sink(C.index(i * N + j).store(a0.after(upd.end(k)).index(0).load()).end(i, j)))
  rng = np.random.default_rng(8)
  a, b = rng.standard_normal((N, N), dtype=np.float32), rng.standard_normal((N, N), dtype=np.float32)
  c = np.zeros(N * N, np.float32)
  src = run_kernel(s, {0: a.ravel(), 1: b.ravel(), 2: c}, "gemm_perm")
  np.testing.assert_allclose(c.reshape(N, N), a @ b, rtol=1e-5, atol=1e-5)
  nest = loop_nest(src)
  kl = next(s for ln, s in nest if ln.startswith(f"for (int ridx{order[2]} "))
  assert set(kl) == {f"ridx{order[0]}", f"ridx{order[1]}"}, src
  assert [s for ln, s in nest if ln == "acc0 = 0.0f;"][0] == kl


@pytest.mark.parametrize("swap", [False, True])
def test_reduce_over_two_axes(swap):
  # sum over the last two axes of a (3, 4, 5) tensor: one END closes both reduce loops
  P, Q, S = 3, 4, 5
  x, out = buf(0, P * Q * S), buf(1, P)
  i, r1, r2 = range_(P, 0), range_(Q, 1, AxisType.REDUCE), range_(S, 2, AxisType.REDUCE)
  a0 = acc(0).after(i)
  init = a0.index(0).store(UOp.const(0.0))
  al = a0.after(init, r1, r2)
  upd = al.index(0).store(al.index(0).load() + x.index(i * (Q * S) + r1 * S + r2).load())
  end = upd.end(r2, r1) if swap else upd.end(r1, r2)
  s = simplify(sink(out.index(i).store(a0.after(end).index(0).load()).end(i)))
  xs = np.random.default_rng(9).standard_normal((P, Q, S)).astype(np.float32)
  o = np.zeros(P, np.float32)
  src = run_kernel(s, {0: xs.ravel(), 1: o}, "sum2")
  np.testing.assert_allclose(o, xs.sum((1, 2)), rtol=1e-5)
  nest = loop_nest(src)
  assert next(s for ln, s in nest if ln.startswith("for (int ridx2")) == ("ridx0", "ridx1")
  assert dict(nest)["acc0 = 0.0f;"] == ("ridx0",)
