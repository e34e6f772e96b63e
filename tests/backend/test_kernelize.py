"""kernelize: where the graph is cut into kernels, measured by work and by kernel counts, with NumPy the oracle.

Two measures of a schedule's work, both from the lowered kernels:

    iters   the sum of the Programs' `iterations`: loop iterations, the kernelizer's own cost model
    flops   arithmetic statements executed (non-index ALU nodes, each weighted by the trip counts of the loops
            around it). Unlike iters it counts the lanes of an upcast register tile, which are unrolled
            statements rather than loops, so it is the work actually done.

Each is compared with an eager evaluation (every op computed once into its own array).
"""
from __future__ import annotations
import math
import re
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import minitensor as mt
import minitensor.nn as nn
from minitensor.backend import kernelize, lowerings
from minitensor.backend.dtype import dtypes
from minitensor.backend.kernelize import Schedule
from minitensor.backend.linearize import linearize
from minitensor.backend.realize import normalize
from minitensor.backend.reduce_rule import F32_SUM_BOUND
from minitensor.backend.render_c import render_function
from minitensor.backend.uop import ALU, Ops, prod


# ---------------------------------------------------------------------- helpers
class NoTermination(AssertionError):
  """schedule() was asked to stage a node it had already staged: it would loop forever."""


@pytest.fixture(autouse=True)
def watchdog(monkeypatch):
  """A terminating schedule stages each node at most once: a second request for the same node is an endless
  loop, which this turns into a failure (every schedule of this module, realize's included, goes through it)."""
  recomputed, calls = lowerings._recomputed, []
  def guarded(*args):
    new = recomputed(*args)
    if new is not None:
      calls.append(new)
      if calls.count(new) > 1: raise NoTermination(f"schedule: {new.op} {new.shape} asked to be staged again")
    return new
  def fresh(*args, **kw):
    calls.clear()
    return schedule(*args, **kw)
  schedule = kernelize.schedule
  monkeypatch.setattr(lowerings, "_recomputed", guarded)
  monkeypatch.setattr(kernelize, "schedule", fresh)      # (realize imports it from kernelize at each compile)


def sched(*ts: mt.Tensor, optimize: bool = True) -> Schedule:
  norm, arrays = normalize([t.uop for t in ts])
  return kernelize.schedule(list(norm), len(arrays), optimize=optimize)


def iters(s: Schedule) -> int: return sum(k.program.iterations for k in s.kernels)


def evaluated(s: Schedule, counts) -> int:
  """How many times the schedule's loops evaluate the nodes `counts(u)` says to count."""
  total = 0
  for k in s.kernels:
    trips = [1]
    for st_ in linearize(k.sink):
      if st_.kind == "open": trips.append(trips[-1] * st_.u.arg.size)
      elif st_.kind == "close": trips.pop()
      elif counts(st_.u): total += trips[-1]
  return total


def flops(s: Schedule) -> int: return evaluated(s, lambda u: u.op in ALU and u.dtype is not dtypes.index)


def rand(*shape, dtype=np.float32, seed=0) -> np.ndarray:
  return np.random.default_rng(seed + 7 * len(shape) + sum(shape)).standard_normal(shape).astype(dtype)


def close(t: mt.Tensor, want: np.ndarray, rtol=1e-4, atol=1e-5) -> None:
  """t equals NumPy's `want` (same shape and dtype); atol is relative to the largest |want| (float32 sums of
  products cancel)."""
  got = t.numpy()
  assert got.shape == want.shape and got.dtype == want.dtype
  np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * max(1.0, float(np.abs(want).max(initial=0))))


# ---------------------------------------------------------------------- work bounds against NumPy
N = 64


def test_matmul_of_a_matmul_work_within_3x_eager():
  a, b, c = rand(N, N, seed=1), rand(N, N, seed=2), rand(N, N, seed=3)
  t = (mt.asarray(a) @ mt.asarray(b)) @ mt.asarray(c)
  s, eager = sched(t), 2 * N**3
  assert iters(s) <= 3 * eager and flops(s) <= 3 * 2 * eager          # 2 flops per multiply-add
  close(t, (a @ b) @ c)


def test_matmul_chain_of_four_work_within_3x_eager():
  ms = [rand(N, N, seed=k) for k in range(4)]
  A, B, C, D = (mt.asarray(m) for m in ms)
  t = A @ B @ C @ D
  s, eager = sched(t), 3 * N**3
  assert iters(s) <= 3 * eager and flops(s) <= 3 * 2 * eager
  close(t, ms[0] @ ms[1] @ ms[2] @ ms[3], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [32, 128, 256])
def test_matmul_of_a_matmul_flops_do_not_grow_with_n(n):
  """Scheduled only (no compile): the work of (A@B)@C must stay a constant factor of 2 N^3 at every N."""
  A, B, C = (mt.asarray(rand(n, n, seed=k)) for k in range(3))
  assert flops(sched((A @ B) @ C)) <= 3 * 2 * (2 * n**3)


@pytest.mark.parametrize("L, d", [(64, 16), (128, 64)])
def test_attention_work_bounded_by_constant_times_LLd(L, d):
  """Values checked at L=64, d=16; (128, 64) is scheduled only: with d wider than one vector the exponentials
  would be recomputed per block of V's columns if the scores were not materialized."""
  q, k, v = rand(L, d, seed=4), rand(L, d, seed=5), rand(L, d, seed=6)
  t = nn.softmax(mt.asarray(q) @ mt.asarray(k).T / 8) @ mt.asarray(v)
  s = sched(t)
  assert iters(s) <= 4 * L * L * d and flops(s) <= 12 * L * L * d        # eager: 2 L*L*d MACs (4 L*L*d flops)
  if L == 64:
    sc = q @ k.T / 8
    e = np.exp(sc - sc.max(axis=-1, keepdims=True))
    close(t, (e / e.sum(axis=-1, keepdims=True)) @ v)


def _conv_np(x: np.ndarray, w: np.ndarray) -> np.ndarray:
  """Valid 2-D cross-correlation, NCHW / OIHW, from NumPy's sliding windows."""
  win = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))        # N C Ho Wo KH KW
  return np.einsum("nchwij,ocij->nohw", win, w)


def test_conv_relu_conv_work_bounded_by_the_two_convolutions():
  x, w1, w2 = rand(2, 3, 10, 10, seed=7), rand(4, 3, 3, 3, seed=8), rand(5, 4, 3, 3, seed=9)
  t = nn.conv2d(nn.relu(nn.conv2d(mt.asarray(x), mt.asarray(w1))), mt.asarray(w2))
  macs = 2 * 4 * 8 * 8 * 3 * 9 + 2 * 5 * 6 * 6 * 4 * 9
  s = sched(t)
  assert iters(s) <= 3 * macs and flops(s) <= 3 * 2 * macs
  close(t, _conv_np(np.maximum(_conv_np(x, w1), 0), w2), rtol=1e-4, atol=1e-4)


def test_centering_work_within_3x_eager():
  x = rand(32, 24)
  t = mt.asarray(x) - mt.asarray(x).mean(0)
  s = sched(t)
  eager = 2 * x.size + x.shape[1]                                          # sum, subtract; divide of the mean
  assert iters(s) <= 3 * eager and flops(s) <= 3 * eager
  close(t, x - x.mean(0))


def test_sum_of_matmul_work_within_3x_eager():
  a, b = rand(N, N, seed=10), rand(N, N, seed=11)
  t = (mt.asarray(a) @ mt.asarray(b)).sum()
  s = sched(t)
  eager = N**3 + N**2
  assert iters(s) <= 3 * eager and flops(s) <= 3 * 2 * eager
  close(t, (a.astype(np.float64) @ b).sum().astype(np.float32), rtol=1e-4, atol=1e-5)


def test_max_of_row_sums_work_within_3x_eager():
  x = rand(40, 30)
  t = mt.asarray(x).sum(1).max()
  s = sched(t)
  eager = x.size + x.shape[0]
  assert iters(s) <= 3 * eager and flops(s) <= 3 * 2 * eager            # float32 sums accumulate in float64: casts
  close(t, x.astype(np.float64).sum(1).astype(np.float32).max())


def test_one_value_feeding_two_different_reductions():
  """y.sum(0) is indexed by the column, y.sum(1) by the row: fused into one loop nest one of them would be
  recomputed for every element of the other axis."""
  x = rand(64, 64, dtype=np.float64)
  y = mt.exp(mt.asarray(x))
  t = y.sum(0) + y.sum(1)[:, None]
  s = sched(t)
  eager = 4 * x.size                                                      # exp, two sums, the add
  assert iters(s) <= 3 * eager and flops(s) <= 3 * eager
  e = np.exp(x)
  close(t, e.sum(0) + e.sum(1)[:, None], rtol=1e-12, atol=0)


# ---------------------------------------------------------------------- kernel counts
def test_elementwise_chain_is_one_kernel():
  a, b = rand(16, 32, seed=1), rand(32, seed=2)
  t = mt.maximum(mt.exp(mt.asarray(a) * 2 + mt.asarray(b)) - mt.asarray(a), 0.5) * 3
  assert len(sched(t).kernels) == 1
  close(t, np.maximum(np.exp(a * 2 + b) - a, np.float32(0.5)) * 3)


def test_softmax_last_axis_is_one_kernel():
  x = rand(32, 48)
  t = nn.softmax(mt.asarray(x))
  assert len(sched(t).kernels) == 1
  e = np.exp(x - x.max(-1, keepdims=True))
  close(t, e / e.sum(-1, keepdims=True))


def test_layer_norm_is_one_kernel():
  x = rand(16, 40)
  t = nn.layer_norm(mt.asarray(x), 40)
  assert len(sched(t).kernels) == 1
  m = x.mean(-1, keepdims=True)
  close(t, (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5), rtol=1e-4, atol=1e-4)


def test_matmul_of_a_matmul_is_two_kernels():
  A, B, C = (mt.asarray(rand(N, N, seed=k)) for k in range(3))
  assert len(sched((A @ B) @ C).kernels) == 2


def test_matmul_of_a_matmul_is_two_kernels_without_opts():
  A, B, C = (mt.asarray(rand(N, N, seed=k)) for k in range(3))
  assert len(sched((A @ B) @ C, optimize=False).kernels) == 2


def test_matmul_bias_relu_is_one_kernel():
  a, b, bias = rand(N, 32, seed=1), rand(32, 48, seed=2), rand(48, seed=3)
  t = nn.relu(mt.asarray(a) @ mt.asarray(b) + mt.asarray(bias))
  assert len(sched(t).kernels) == 1
  close(t, np.maximum(a @ b + bias, 0))


# ---------------------------------------------------------------------- several outputs, realized intermediates
def _has_accumulator(sink) -> bool: return any(u.op is Ops.ALLOC for u in sink.toposort())


def test_realize_two_outputs_sharing_a_reduce_does_it_once(monkeypatch):
  x = rand(24, 40, dtype=np.float64)
  X = mt.asarray(x)
  s = X.sum(axis=1, keepdims=True)
  a, b = X - s, X * s
  joint = sched(a, b)
  assert sum(_has_accumulator(k.sink) for k in joint.kernels) == 1                 # one kernel reduces
  assert flops(joint) <= flops(sched(a)) + flops(sched(b)) - x.size                # one whole reduction saved
  assert iters(joint) <= 2 * 3 * x.size                                             # eager: sum once, two elementwise
  ra, rb = mt.realize(a, b)
  np.testing.assert_allclose(ra, x - x.sum(1, keepdims=True), rtol=1e-12)
  np.testing.assert_allclose(rb, x * x.sum(1, keepdims=True), rtol=1e-12)
  assert a._realized() is not None and b._realized() is not None                  # both keep their result




def test_column_standardization():
  """x.mean(0) and x.std(0) are broadcast back over the rows, so both must be materialized; the variance
  reads the materialized mean."""
  a = rand(64, 64, dtype=np.float64)
  x = mt.asarray(a)
  close((x - x.mean(0)) / x.std(0), (a - a.mean(0)) / a.std(0), rtol=1e-12, atol=0)


def test_a_reduce_read_twice_inside_short_reductions_is_cut():
  """y (8, 3) is read by the max and by the sum over its 3 columns: materialized, not computed twice. The cost
  model counts a reduction of fewer elements than its lanes, whose elements all run in the split's tail loop (cost.py;
  rangeify's ordered reduces at symbolic sizes), as work too."""
  rng = np.random.default_rng(0)
  a, w = rng.standard_normal((8, 64)), rng.standard_normal((3, 64))
  y = (mt.asarray(a)[:, None, :] * mt.asarray(w)[None]).sum(-1)
  loss = mt.log(mt.exp(y - y.max(1, keepdims=True)).sum(1)).sum()
  assert [k.shape for k in mt.explain(loss).kernels] == [(8, 3), ()]
  ya = (a[:, None, :] * w[None]).sum(-1)
  np.testing.assert_allclose(float(loss), np.log(np.exp(ya - ya.max(1, keepdims=True)).sum(1)).sum(), rtol=1e-12)


def test_reduce_of_another_output_needing_its_own_kernel():
  """y is an output of the same realize, and y.sum(0), broadcast back over y's rows, must be materialized."""
  a = rand(64, 64, dtype=np.float64)
  y = mt.asarray(a) * 2
  t = y + y.sum(axis=0)
  rt, ry = mt.realize(t, y)
  # (a sum's rounding is relative to its terms' magnitudes, not to its value: a column may cancel to near zero)
  np.testing.assert_allclose(rt, 2 * a + (2 * a).sum(axis=0), rtol=1e-12, atol=1e-14 * np.abs(2 * a).sum(axis=0).max())
  np.testing.assert_array_equal(ry, 2 * a)


def test_realized_intermediate_is_loaded_not_recomputed():
  a, b, c = rand(N, N, seed=1), rand(N, N, seed=2), rand(N, N, seed=3)
  y = mt.asarray(a) @ mt.asarray(b)
  y.realize()
  assert y._realized() is not None
  z = y @ mt.asarray(c)
  assert sum(u.op is Ops.REDUCE for u in z.uop.toposort()) == 1          # y's graph became a BUFFER
  s = sched(z)
  assert s.n_inputs == 2 and len(s.kernels) == 1 and flops(s) <= 1.1 * 2 * N**3
  close(z, (a @ b) @ c, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------- loop structure in the generated C
_FOR = re.compile(r"^\s*for \((?:int|int64_t) (ridx\d+) = 0; \w+ < (\d+);")


def _loop_tree(src: str) -> list[dict]:
  """The for-loops of a C function as a tree: each {size, body (its lines, nested ones included), kids}."""
  roots: list[dict] = []
  stack: list[tuple[dict, int]] = []
  depth = 0
  for line in src.splitlines():
    if m := _FOR.match(line):
      node = {"size": int(m.group(2)), "body": [], "kids": []}
      (stack[-1][0]["kids"] if stack else roots).append(node)
      stack.append((node, depth))
    for n, _ in stack: n["body"].append(line)
    depth += line.count("{") - line.count("}")
    while stack and depth <= stack[-1][1]: stack.pop()
  return roots


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_reductions_are_siblings_of_the_column_loop_inside_the_row_loop(dtype):
  """One row loop; inside it the max loop, then the sum-of-exp loop, then the output column loop, as siblings
  (each reduction runs once per row, not once per output element). The sum loop stores each exp into the output
  (rangeify's stash), and the column loop divides what it reads back: exp is computed once per element."""
  x = rand(32, 48, dtype=dtype)
  t = nn.softmax(mt.asarray(x))
  (k,) = sched(t).kernels
  src = render_function(k.sink, k.name)
  (row,) = _loop_tree(src)
  assert row["size"] == 32, src
  kids = ["\n".join(kid["body"]) for kid in row["kids"]]
  find = lambda pred: [i for i, b in enumerate(kids) if pred(b)]
  maxl = find(lambda b: "max_f" in b)
  suml = find(lambda b: "exp" in b and re.search(r"acc\d+(\[\w+\])? = \(", b))
  outl = find(lambda b: re.search(r"data1\[.*\] = ", b) and "exp" not in b)
  assert len(maxl) == len(suml) == len(outl) == 1, src
  assert maxl[0] < suml[0] < outl[0], src
  assert "acc" not in kids[outl[0]], src                             # the column loop only reads the two results
  assert re.search(r"data1\[\w+\] = \w+;", kids[suml[0]]) and len(re.findall(r"\bexpf?\(", src)) == 1, src
  assert re.search(r"= data1\[", kids[outl[0]]), src
  close(t, np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))


# ---------------------------------------------------------------------- random DAGs
# A schedule may take at most FACTOR times the loop iterations of an eager evaluation (every op once, into its
# own array, plus the copy of each output), and execute at most FLOPS_FACTOR times its arithmetic (two per
# reduced element: a multiply and an add). Measured worst cases here: about 1.6 and 2.2.
FACTOR, FLOPS_FACTOR = 8, 4


class _Node:
  def __init__(self, t: mt.Tensor, a: np.ndarray, cost: int, parents: tuple = ()):
    self.t, self.a, self.cost, self.parents = t, a, cost, parents


def _reachable_cost(outs: list[_Node]) -> int:
  seen: set[int] = set()
  todo, total = list(outs), 0
  while todo:
    n = todo.pop()
    if id(n) in seen: continue
    seen.add(id(n))
    total += n.cost
    todo.extend(n.parents)
  return total


def _broadcasts(*shapes) -> bool:
  try: np.broadcast_shapes(*shapes)
  except ValueError: return False
  return True


def _step(draw, pool: list[_Node], x: _Node | None = None, y: _Node | None = None) -> _Node:
  """One op on nodes of the pool (an elementwise one of x and y when they are given)."""
  x = x or pool[draw(st.integers(0, len(pool) - 1))]
  kinds = ["add", "mul", "maximum"] + ([] if y else ["exp", "sum", "max", "transpose", "reshape", "matmul"])
  kind = draw(st.sampled_from(kinds))
  if kind in ("add", "mul", "maximum"):
    y = y or draw(st.sampled_from([y for y in pool if _broadcasts(x.a.shape, y.a.shape)]))     # x itself: shared
    t = {"add": lambda: x.t + y.t, "mul": lambda: x.t * y.t, "maximum": lambda: mt.maximum(x.t, y.t)}[kind]()
    a = {"add": np.add, "mul": np.multiply, "maximum": np.maximum}[kind](x.a, y.a)
    return _Node(t, a, a.size, (x, y))
  if kind == "exp": return _Node(mt.exp(x.t), np.exp(x.a), x.a.size, (x,))
  if kind in ("sum", "max"):
    if x.a.ndim == 0: return x
    axes = tuple(sorted(set(draw(st.lists(st.integers(0, x.a.ndim - 1), min_size=1, max_size=max(x.a.ndim - 1, 1))))))
    keep = draw(st.booleans())
    return _Node(getattr(x.t, kind)(axis=axes, keepdims=keep), getattr(x.a, kind)(axis=axes, keepdims=keep), x.a.size,
                 (x,))
  if kind == "transpose":
    perm = tuple(draw(st.permutations(range(x.a.ndim))))
    return _Node(x.t.transpose(perm), x.a.transpose(perm), 0, (x,))
  if kind == "reshape":
    shp = draw(st.sampled_from([(x.a.size,), x.a.shape[::-1], (1,) + x.a.shape,
                                (x.a.shape[:1] + (-1,)) if x.a.ndim else ()]))
    a = x.a.reshape(shp)
    return _Node(x.t.reshape(shp), a, 0, (x,))
  if x.a.ndim < 2: return x
  cands = [y for y in pool if y.a.ndim >= 2 and y.a.shape[-2] == x.a.shape[-1]]
  cands = [y for y in cands if _broadcasts(x.a.shape[:-2], y.a.shape[:-2])]
  y = draw(st.sampled_from(cands)) if cands else None
  if y is None:
    y = _Node(x.t.swapaxes(-1, -2), x.a.swapaxes(-1, -2), 0, (x,))         # x @ x^T: x used twice
  a = x.a @ y.a
  return _Node(x.t @ y.t, a, a.size * x.a.shape[-1], (x, y))


def _dag(draw, dims: st.SearchStrategy) -> tuple[list[_Node], int, float]:
  """A random DAG (1-3 inputs, 3-9 ops), its outputs (the last node, sometimes one more), the eager cost of the
  outputs (every op reachable from them once, plus the copy of each output) and the largest finite magnitude
  of any value. The inputs' shapes are one base shape with some axes set to 1 (one in three) or dropped in
  front, so that most pairs broadcast; reductions keep at least one axis of a matrix; the last op combines the
  last value with another that broadcasts with it (a reduction meets its own input: where fusing recomputes)."""
  base = draw(st.lists(dims, min_size=2, max_size=3))
  pool = []
  for k in range(draw(st.integers(1, 3))):
    ones = draw(st.lists(st.sampled_from([False, False, True]), min_size=len(base), max_size=len(base)))
    shape = tuple(1 if o else b for o, b in zip(ones, base))[draw(st.integers(0, len(base) - 1)):]
    a = np.random.default_rng(k).uniform(-1, 1, shape)
    pool.append(_Node(mt.asarray(a), a, 0))
  for _ in range(draw(st.integers(2, 8))): pool.append(_step(draw, pool))
  big = [n for n in pool if _broadcasts(n.a.shape, pool[-1].a.shape)]
  pool.append(_step(draw, pool, x=pool[-1], y=draw(st.sampled_from(big))))      # the last value meets another
  outs = [pool[-1]] + ([pool[draw(st.integers(0, len(pool) - 2))]] if draw(st.booleans()) else [])
  scale = max(float(np.abs(n.a[np.isfinite(n.a)]).max(initial=1.0)) for n in pool)
  return outs, _reachable_cost(outs) + sum(o.a.size for o in outs), scale


def _scheduled_within_factor(outs: list[_Node], eager: int) -> None:
  s = sched(*(o.t for o in outs))            # the watchdog fails a schedule that stages a node twice
  assert iters(s) <= FACTOR * eager, (iters(s), eager)
  assert flops(s) <= FLOPS_FACTOR * 2 * eager, (flops(s), eager)


_WITH_FIXTURE = [*settings().suppress_health_check, HealthCheck.function_scoped_fixture]      # the watchdog


@settings(max_examples=max(settings().max_examples // 2, 10), suppress_health_check=_WITH_FIXTURE)
@given(st.data())
def test_random_dags_match_numpy_within_constant_factor_of_eager_work(data):
  """Float64 on axes of 1-4: values as NumPy's (atol relative to the largest intermediate, since sums cancel),
  work within the factors of eager."""
  outs, eager, scale = _dag(data.draw, st.sampled_from([4, 3, 2]))
  _scheduled_within_factor(outs, eager)
  got = mt.realize(*(o.t for o in outs))
  for g, o in zip(got, outs):
    assert g.shape == o.a.shape and g.dtype == o.a.dtype
    np.testing.assert_allclose(g, o.a, rtol=1e-9, atol=1e-12 * scale)


@settings(suppress_health_check=_WITH_FIXTURE)
@given(st.data())
def test_random_dags_on_larger_shapes_schedule_within_constant_factor_of_eager_work(data):
  """Scheduled only (nothing compiled or run): on axes of 16 and 64 the Opts' vector lanes and register tiles
  come into play, and a cut the cost model misses recomputes work by a factor that grows with the size."""
  outs, eager, _ = _dag(data.draw, st.sampled_from([64, 16, 3]))
  _scheduled_within_factor(outs, eager)


# ---------------------------------------------------------------------- size-generic (flat) kernels
# over SYMBOLIC_MAX elements (smaller graphs have symbolic sizes); the last is threaded (n >= SIZED_THREAD_MIN)
SHAPES = [(70_001,), (300, 250), (2, 1, 40_000), (20, 20, 20, 20), (1, 300_001)]


def test_flat_elementwise_kernels_compile_once_for_every_shape(monkeypatch):
  """Large elementwise kernels over whole operands are rendered with the size as an argument: one compile serves
  every shape and rank (values checked against NumPy, including a threaded size). One tier: under load, tier 0's
  run time could pass tiers.HOT_SECONDS and add a tier-1 compile, which is not a new shape's."""
  monkeypatch.setenv("MINITENSOR_CHECK", "0")
  monkeypatch.setenv("MINITENSOR_TIER", "0")
  from minitensor.backend.runtime import stats
  rng = np.random.default_rng(3)
  before = None
  for shape in SHAPES:
    a, b = rng.standard_normal(shape).astype(np.float32), rng.integers(-9, 9, shape).astype(np.int16)
    got = np.tanh(mt.asarray(a)) * 3 - mt.asarray(b) / 2.5
    np.testing.assert_allclose(np.asarray(got), np.tanh(a) * 3 - b / 2.5, rtol=1e-6, atol=1e-6)
    if before is None: before = stats.compiles
  assert stats.compiles == before


@pytest.mark.parametrize("shape", [(3, 5), (2, 2, 2)])
def test_flat_kernel_source_does_not_mention_the_size(shape):
  x = mt.asarray(np.ones(shape, np.float64))
  s = sched((x * 2 + 1).astype(np.float32))
  (k,) = s.kernels
  assert k.program.sizes == (prod(shape),)
  src = render_function(k.sink, k.name, sized=True)
  assert "int64_t n0)" in src and set(re.findall(r"ridx0 < (\w+);", src)) <= {"n0", "mt_a"}
  (other,) = sched((mt.asarray(np.ones((7, 11, 13))) * 2 + 1).astype(np.float32)).kernels
  assert render_function(other.sink, other.name, sized=True) == src        # the same C for every size


BROADCAST_CONSTANTS = {"zeros": lambda m, s: m.zeros(s), "ones": lambda m, s: m.ones(s, np.float32),
                       "full": lambda m, s: m.full(s, 7, np.int16),
                       "empty": lambda m, s: m.zeros(s) if m is np else m.empty(s),
                       "zeros_like": lambda m, s: m.zeros_like(m.asarray(np.ones(s))),
                       "full_like": lambda m, s: m.full_like(m.asarray(np.ones(s, np.int8)), 3),
                       "broadcast_to": lambda m, s: m.broadcast_to(m.asarray([2.5]), s),
                       "broadcast_to_nd": lambda m, s: m.broadcast_to(m.asarray(np.full((1,) * len(s), 4)), s)}


@pytest.mark.parametrize("shape", [(3,), (2, 5)])
def test_a_broadcast_constant_realized_with_an_elementwise_result(shape):
  """A broadcast constant realized together with an elementwise result of it (one flat key for both): the constant
  is a flat kernel of its own, a constant stored n times (it was an AttributeError in lowering)."""
  ts = [t for f in BROADCAST_CONSTANTS.values() for z in [f(mt, shape)] for t in (z, z + 1)]
  got = mt.realize(*ts)
  for (name, f), a, b in zip(BROADCAST_CONSTANTS.items(), got[::2], got[1::2]):
    want = f(np, shape)
    for g, w in ((a, want), (b, want + 1)):
      assert g.shape == w.shape and g.dtype == w.dtype, name
      np.testing.assert_array_equal(g, w, err_msg=name)


MOVERS = [lambda x: x * 2 + x.T, lambda x: x[1:, ::-1] + x[:-1, :1],
          lambda x: x + np.arange(x.shape[-1], dtype=np.float32),
          lambda x: mt.exp(x[:, 1:]) if isinstance(x, mt.Tensor) else np.exp(x[:, 1:])]


@pytest.mark.parametrize("make", MOVERS)
def test_elementwise_kernels_over_strided_views_compile_once_for_every_shape(make, monkeypatch):
  """A transpose, a strided or reversed slice, a broadcast operand: symbolic sizes; the same function over new
  shapes calls no compiler (values as NumPy's)."""
  monkeypatch.setenv("MINITENSOR_CHECK", "0")
  from minitensor.backend.runtime import stats
  before = None
  for n in (4, 6, 9, 16):
    x = np.random.default_rng(n).standard_normal((n, n)).astype(np.float32)
    t = make(mt.asarray(x))
    np.testing.assert_allclose(np.asarray(t), make(x), rtol=1e-6)
    if before is None: before = stats.compiles
  assert stats.compiles == before


REDUCERS = [lambda x: x.sum(axis=1), lambda x: x.T.max(axis=0, keepdims=True) * 2, lambda x: (x[::-1] * x).sum(),
            lambda x: (x.astype(np.float64).T[1:] + 1).prod(axis=-1)]


@pytest.mark.parametrize("make", REDUCERS)
def test_one_reduce_over_strided_views_compiles_once_for_every_shape(make, monkeypatch):
  """One reduction of an elementwise value of strided views: the output loop and the reduce loop both take their
  sizes as arguments (values as NumPy's)."""
  from minitensor.backend.runtime import stats
  monkeypatch.setenv("MINITENSOR_CHECK", "0")
  before = None
  for n in (3, 5, 8, 13):
    x = np.random.default_rng(n).standard_normal((n, n + 2)).astype(np.float32)
    t = make(mt.asarray(x))
    np.testing.assert_allclose(np.asarray(t), make(x), rtol=1e-5)
    if before is None: before = stats.compiles
  assert stats.compiles == before


def test_large_kernels_other_than_flat_ones_are_lowered_for_their_shape():
  x = mt.asarray(np.ones((300, 300), np.float32))
  assert all(not k.program.sizes and not k.program.vars for k in sched(x.sum(axis=1, keepdims=True) + x).kernels)
  assert not sched(x.T * 2).kernels[0].program.sizes


# ---------------------------------------------------------------------- reductions to one value, split
@pytest.mark.parametrize("n", [1 << 17, 3 * (1 << 16), (1 << 17) + 1])     # at least THREAD_WORK
@pytest.mark.parametrize("fn", ["sum", "max", "min", "any", "mean"])
def test_large_reductions_to_one_value_split_across_threads(n, fn):
  """Over SPLIT_MIN elements or more, a full reduction is SPLIT_PARTS partials in a threaded kernel, then one
  reduction of the partials (a size with no power-of-two divisor stays one loop); values as NumPy's."""
  x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
  t = getattr(mt.asarray(x).reshape(-1, 1) if n % 2 == 0 else mt.asarray(x), fn)()
  s = sched(t)
  threaded = [k for k in s.kernels if any(r.op is Ops.RANGE and r.arg.kind.name == "THREAD" for r in k.sink.toposort())]
  assert (len(s.kernels), len(threaded)) == ((2, 1) if n % 2 == 0 else (1, 0))
  want = getattr(x.astype(np.float64), fn)()
  np.testing.assert_allclose(np.asarray(t), want, rtol=1e-6, atol=1e-6 * np.abs(x).sum() / n)


@pytest.mark.parametrize("n, parts", [(10**6, 50), (1 << 20, 64), (10**5, 50), (3 * (1 << 16), 64), (999_999, 1),
                                      (1 << 17, 64), (2 * 3**11, 2)])
def test_reductions_to_one_value_take_partials_the_lanes_divide(n, parts, monkeypatch):
  """The partials of a reduction to one value (kernelize._parts): the most, up to SPLIT_PARTS, whose length 16
  divides, so each reduces in vector lanes (UNROLL in its kernel's actions); else a power of two dividing n (none:
  one loop). Values as NumPy's; a float64 sum of 0.1s within 1e-12 of exact where there are lanes (many partials
  keep each lane's chain of adds short), 1e-10 where a partial (or the whole) is one chain."""
  from collections import OrderedDict
  from minitensor.backend import realize
  monkeypatch.setattr(realize, "_first_shape", OrderedDict())   # (each size the first of its structure: its own
  monkeypatch.setattr(realize, "_served", OrderedDict())        # program, not the symbolic one of another size)
  assert kernelize._parts(n) == parts
  x = np.random.default_rng(n).standard_normal(n)
  for fn in ("sum", "max"):
    t = getattr(mt.asarray(x), fn)()
    (first, *rest) = mt.explain(t).kernels
    if lanes := (n // parts) % kernelize.PART_LANES == 0:
      assert first.shape == (parts,) and "Opt(UNROLL" in str(mt.explain(t)), str(mt.explain(t))
    np.testing.assert_allclose(np.asarray(t), getattr(x, fn)(), rtol=1e-12)
  c = np.full(n, 0.1)
  np.testing.assert_allclose(np.asarray(mt.asarray(c).sum()), math.fsum(c), rtol=1e-12 if lanes else 1e-10)


@pytest.mark.parametrize("shape, axis, fn, dtype, parts", [
  ((2048, 512), 0, "sum", np.float32, 16), ((1000, 1050), 0, "max", np.float64, 8),
  ((3, 1024, 512), 1, "sum", np.int32, 16), ((4096, 257), 0, "mean", np.float32, 16),
  ((1031, 1024), 0, "sum", np.float32, 1),           # a prime number of rows: one loop, not split
  ((512, 2048), 1, "sum", np.float32, 1),            # along the rows: streamed already, not split
])
def test_large_column_reductions_run_in_blocks_of_rows(shape, axis, fn, dtype, parts):
  """A reduction down the columns of at least COLUMN_MIN elements is COLUMN_PARTS (or a smaller power of two that
  divides the rows) partials over blocks of consecutive rows, the blocks the threaded outermost axis and the
  columns one wide vector loop, then one reduction of the partials; values as NumPy's (float32 in float64, in
  float32 blocks: README's F32_SUM_BOUND)."""
  x = (np.random.default_rng(1).standard_normal(shape) * 100).astype(dtype)
  t = getattr(mt.asarray(x), fn)(axis)
  s = sched(t)
  if parts == 1: assert len(s.kernels) == 1
  else:
    first, last = s.kernels
    assert first.ast.shape == (parts,) + t.shape and last.ast.shape == t.shape
    src = render_function(first.sink, first.name)
    assert re.search(rf"omp parallel for.*\n\s*for \(int ridx0 = 0; ridx0 < {parts};", src), src
    assert f"acc0[{shape[-1]}]" in src, src                               # one block of all the columns
    # a float32 sum's partials add float32 blocks into their float64 lanes, as an unsplit one does
    assert (re.search(rf"float acc\d+\[{shape[-1]}\]", src) is not None) == (dtype is np.float32), src
  wide = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)
  want = getattr(wide, fn)(axis).astype(t.dtype)
  # (a float32 sum along the rows adds float32 blocks: README's bound, relative to the sum of magnitudes)
  atol = F32_SUM_BOUND * np.abs(wide).sum(axis) / (shape[axis] if fn == "mean" else 1) if dtype is np.float32 else 1e-9
  got = np.asarray(t)
  assert np.all(np.abs(got.astype(np.float64) - want) <= atol + 1e-6 * np.abs(want)), np.abs(got - want).max()


# ---------------------------------------------------------------------- transcendentals computed once
def evaluations(s: Schedule, op: Ops) -> int:
  """How many times the schedule's loops evaluate `op`."""
  return evaluated(s, lambda u: u.op is op)


def _forces(pos: mt.Tensor, mass: mt.Tensor) -> tuple:
  x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
  dx, dy, dz = x.T - x, y.T - y, z.T - z
  r = mt.where(dx * dx + dy * dy + dz * dz > 0, dx * dx + dy * dy + dz * dz + 0.01, 1.0) ** -1.5
  return (dx * r) @ mass, (dy * r) @ mass, (dz * r) @ mass


@pytest.mark.parametrize("n", [7, 50])
def test_a_power_read_by_sibling_reductions_is_computed_once(n):
  """One kernel with three sibling reductions over r ** -1.5 would evaluate the power three times per element
  (HEAVY_LIMIT is 2): it is materialized, computed once per element."""
  pos, mass = rand(n, 3, dtype=np.float64), np.abs(rand(n, 1, dtype=np.float64)) + 0.5
  f = mt.hstack(_forces(mt.asarray(pos), mt.asarray(mass)))
  assert evaluations(sched(f), Ops.POW) == n * n
  x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
  dx, dy, dz = x.T - x, y.T - y, z.T - z
  r = (dx * dx + dy * dy + dz * dz + 0.01) ** -1.5
  close(f, np.hstack(((dx * r) @ mass, (dy * r) @ mass, (dz * r) @ mass)), rtol=1e-12, atol=1e-13)


def test_a_power_shared_by_kernels_is_computed_once():
  """Outputs that each reduce r ** -1.5 are kernels of their own (a REDUCE reached from two outputs is staged):
  the power they share is materialized (_shared_heavy), not computed by each; exp(x) - 1 read by two outputs of
  other shapes too."""
  pos, mass = rand(40, 3, dtype=np.float64), np.abs(rand(40, 1, dtype=np.float64)) + 0.5
  a, b, c = _forces(mt.asarray(pos), mt.asarray(mass))
  assert evaluations(sched(a, b, c), Ops.POW) == 40 * 40
  want = [(np.asarray(t)) for t in _forces(mt.asarray(pos), mt.asarray(mass))]
  for t, w in zip(mt.realize(a, b, c), want): np.testing.assert_allclose(t, w, rtol=1e-12)
  x = rand(30, 20, dtype=np.float64)
  e = mt.exp(mt.asarray(x)) - 1
  s0, s1 = e.sum(axis=0), e.max(axis=1)
  assert evaluations(sched(s0, s1), Ops.EXP2) + evaluations(sched(s0, s1), Ops.EXP) <= 30 * 20
  close(s0, (np.exp(x) - 1).sum(axis=0), rtol=1e-12)
  close(s1, (np.exp(x) - 1).max(axis=1), rtol=1e-12)


@pytest.mark.parametrize("n", [40, 300])          # (symbolic sizes; concrete sizes above SYMBOLIC_MAX)
def test_elementwise_ops_over_flattened_values_are_computed_in_their_own_shape(n):
  """r[m] with a mask that holds everywhere is r flattened: its powers are computed in r's own shape (loops over
  rows and columns, no division of a flat index by the row length). Values against NumPy."""
  rng = np.random.default_rng(5)
  a, c = rng.standard_normal((n, 1)), rng.standard_normal((n, 1))
  def step(xp, a, c):
    d = a.T - a
    r = d * d + 0.5
    r[r > 0] = r[r > 0] ** -1.5
    return xp.hstack(((d * r) @ c, (r * r) @ c, (d * d * r) @ c))
  x, w = mt.asarray(a), mt.asarray(c)
  t = step(mt, x, w)
  for k in mt.explain(t).kernels: assert not re.search(r"ridx\d+\)? ?[/%]", k.source), k.source
  np.testing.assert_allclose(np.asarray(t), step(np, a, c), rtol=1e-12)
  flat = (x.T - x).reshape(-1) + mt.arange(n * n, dtype=np.float64)      # (one source not reshaped: as built)
  np.testing.assert_allclose(np.asarray(flat), (a.T - a).reshape(-1) + np.arange(n * n), rtol=1e-15)


def test_unmerged_rewrites_only_elementwise_ops_over_reshapes_from_one_wider_shape():
  """kernelize.unmerged: an ALU over two values reshaped from the same (4, 6) shape becomes that ALU in (4, 6)
  reshaped; reshapes of one shape into another chain into one; sources reshaped from different shapes, or from a
  shape of fewer axes (a leaf's flat buffer), stay."""
  from minitensor.backend.uop import UOp, buf
  exp = lambda x: UOp(Ops.EXP, (x,))
  a, b = exp(buf(0, 24, dtypes.float64).reshape((4, 6))), buf(1, 24, dtypes.float64)
  (u,) = kernelize.unmerged([a.reshape((24,)) * 2.0 + b])
  assert u.op is Ops.RESHAPE and u.src[0].op is Ops.ADD and u.src[0].shape == (4, 6)
  assert u.src[0].src[1].op is Ops.RESHAPE and u.src[0].src[1].src[0] is b          # (the flat buffer, read in 2-D)
  assert kernelize.unmerged([a.reshape((6, 4)).reshape((3, 8))])[0] is a.reshape((3, 8))
  mixed = a.reshape((24,)) + exp(buf(2, 24, dtypes.float64).reshape((2, 12))).reshape((24,))
  assert kernelize.unmerged([mixed])[0] is mixed
  flat = exp(buf(0, 24, dtypes.float64)) * b
  assert kernelize.unmerged([flat])[0] is flat
