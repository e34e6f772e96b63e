"""opt.py's actions at symbolic sizes: a kernel lowered at one shape with the actions the heuristic would choose there
(or any others that apply) runs at other shapes, whose sizes the factors divide or not (the split loops' tails), and
stores what the plain lowering stores: the same bits for the actions that keep the operation order (opt.EXACT), the
same values within rounding for UNROLL (and for transcendentals, which gcc may vectorize in one lowering's loop and
not in the other's). Buffers are padded with NaN past the run's elements, so a load outside them
shows in the result, and the output's padding must stay as it was (no store outside)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from minitensor.backend.debug import run_c
from minitensor.backend.dtype import dtypes
from minitensor.backend.opt import EXACT, KernelInfo, Opt, OptOps, OptRefused, build, heuristic
from minitensor.backend.rangeify import Ctx, Opts, lower
from minitensor.backend.realize import LARGE_MAX
from minitensor.backend.sizes import Sizes, extend
from minitensor.backend.uop import Ops, UOp, buf, prod

U, V, L, T, B, J, LO, TH = (OptOps.UPCAST, OptOps.VECTOR, OptOps.UNROLL, OptOps.TILE, OptOps.BLOCK, OptOps.JAM,
                            OptOps.LOCAL, OptOps.THREAD)


def _row_sum(a): return a.cast(dtypes.float64).reduce(Ops.ADD, 1)
def _row_max(a): return (a * 2.0).reduce(Ops.MAX, 1)
def _col_sum(a): return a.permute((1, 0)).cast(dtypes.float64).reduce(Ops.ADD, 1)
def _transpose(a): return a.permute((1, 0)) + 1.0
def _softmax_rows(a):
  e = (a - a.reduce(Ops.MAX, 1).reshape((a.shape[0], 1)).expand(a.shape)).alu(Ops.EXP)
  return e / e.reduce(Ops.ADD, 1).reshape((a.shape[0], 1)).expand(a.shape)


def _matmul(a, b):
  (m, k), n = a.shape, b.shape[1]
  rows, cols = a.reshape((m, 1, k)).expand((m, n, k)), b.permute((1, 0)).reshape((1, n, k)).expand((m, n, k))
  return (rows * cols).reduce(Ops.ADD, 1)


# family -> (graph of its operands, the number of operands, the action lists to try: (op, axis) and a factor slot)
FAMILIES = {
  "row sum": (_row_sum, 1, [[(L, 0)], [(LO, 0)], [(TH, 0)], [(L, 0), (TH, 0)], [(U, 0), (L, 0)]]),
  "row max": (_row_max, 1, [[(L, 0)], [(L, 0), (TH, 0)], [(LO, 0), (TH, 0)]]),
  "column sum": (_col_sum, 1, [[(V, 0)], [(V, 0), (J, 0)], [(V, 0), (TH, 0)], [(V, 0), (LO, 0)], [(U, 0)]]),
  "transpose": (_transpose, 1, [[(T, 0), (T, 1)], [(T, 0), (T, 1), (B, 0), (B, 1)], [(T, 1), (TH, 0)],
                                [(U, 0)], [(V, 1), (TH, 0)], [(U, 0), (U, 1)]]),
  "softmax": (_softmax_rows, 1, [[(L, 0)], [(L, 0), (TH, 0)], [(U, 0)]]),
  "matmul": (_matmul, 2, [[(U, 0), (V, 1)], [(V, 1)], [(U, 0), (V, 1), (TH, 0)], [(L, 0)], [(U, 1)]]),
}


def _operands(name: str, shape: tuple[int, ...]):
  """The operand shapes of a family's graph over (rows, cols[, inner])."""
  if name == "matmul": return [(shape[0], shape[2]), (shape[2], shape[1])]
  return [shape[:2]]


def _sizes_of(shapes) -> tuple[int, ...]:
  return tuple(dict.fromkeys(n for s in shapes for n in s if n >= 2))


def _run(root: UOp, opts: Opts, order: tuple[int, ...], values: tuple[int, ...], reps, arrays: list[np.ndarray],
         run_shape) -> np.ndarray:
  """root lowered with opts at its shape, with symbolic sizes (`order`: the graph's sizes), run at run_shape on
  arrays (padded with NaN) with the sizes `values`."""
  sizes = Sizes(order, LARGE_MAX)
  out = buf(len(arrays), prod(root.shape), root.dtype)
  sink = lower(root, out, Ctx(sizes=sizes, opts=opts))
  bufs = {}
  for k, a in enumerate(arrays):
    flat = np.full(max(a.size, prod(s for s in reps[k])) + 8, np.nan, a.dtype)
    flat[:a.size] = a.reshape(-1)
    bufs[k] = flat
  n = prod(run_shape)
  res = np.full(max(n, prod(root.shape)) + 8, -7.0, root.dtype.np)
  run_c(sink, {**bufs, len(arrays): res}, sizes=extend(values, sizes.table()))
  assert (res[n:] == -7.0).all(), "a store outside the output"
  return res[:n].reshape(run_shape)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_actions_at_symbolic_sizes_store_what_the_plain_lowering_stores(data):
  name = data.draw(st.sampled_from(sorted(FAMILIES)), "family")
  graph, n_ops, choices = FAMILIES[name]
  dims = 3 if name == "matmul" else 2
  rep = tuple(data.draw(st.lists(st.integers(2, 70), min_size=dims, max_size=dims, unique=True), "at"))
  reps = _operands(name, rep)
  order = _sizes_of(reps)
  # the run's sizes: multiples of 64 (every factor below divides them) or any, each in [2, 150]
  run_of = {n: data.draw(st.one_of(st.sampled_from([64, 128]), st.integers(2, 150)), f"size {n}") for n in order}
  shape_of = lambda s: tuple(run_of.get(n, n) for n in s)
  leaves = [buf(k, prod(s), dtypes.float32).reshape(s) for k, s in enumerate(reps)]
  root = graph(*leaves)
  info = KernelInfo.of(root, True)
  picked = data.draw(st.sampled_from(choices), "actions")
  acts = [Opt(op, ax, 0 if op is TH else data.draw(st.sampled_from([2, 3, 4, 8, 16]), f"{op.name} factor"))
          for op, ax in picked]
  if any(a.op is B for a in acts):                     # a block is a larger multiple of its axis's tile
    tiles = {a.axis: a.arg for a in acts if a.op is T}
    acts = [Opt(B, a.axis, tiles[a.axis] * data.draw(st.sampled_from([2, 4]), "block")) if a.op is B else a
            for a in acts]
  try: opts = build(acts, info)
  except OptRefused: reject()
  rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16), "seed"))
  arrays = [rng.standard_normal(shape_of(s)).astype(np.float32) for s in reps]
  values = tuple(run_of[n] for n in order)
  run_shape = shape_of(root.shape)
  plain = _run(root, Opts(), order, values, reps, arrays, run_shape)
  got = _run(root, opts, order, values, reps, arrays, run_shape)
  assert not np.isnan(plain).any()
  # (a transcendental may be vectorized in one lowering's loop and not in the other's: libmvec is within 4 ulp)
  if all(a.op in EXACT for a in acts) and name != "softmax": np.testing.assert_array_equal(got, plain)
  else: np.testing.assert_allclose(got, plain, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_heuristic_proposes_actions_at_symbolic_sizes(name):
  """At symbolic sizes the heuristic chooses as it would at the sizes it sees (factors need not divide them), and
  what it chooses runs at sizes none of its factors divide."""
  graph, _, _ = FAMILIES[name]
  rep = (1000, 520, 300) if name == "matmul" else (2048, 1024)
  reps = _operands(name, rep)
  order = _sizes_of(reps)
  root = graph(*[buf(k, prod(s), dtypes.float32).reshape(s) for k, s in enumerate(reps)])
  info = KernelInfo.of(root, True)
  acts = heuristic(root, info)
  assert acts, name
  run_of = dict(zip(order, (1001, 523, 301) if name == "matmul" else (1037, 517)))
  shape_of = lambda s: tuple(run_of.get(n, n) for n in s)
  rng = np.random.default_rng(0)
  arrays = [rng.standard_normal(shape_of(s)).astype(np.float32) for s in reps]
  values = tuple(run_of[n] for n in order)
  got = _run(root, build(acts, info), order, values, reps, arrays, shape_of(root.shape))
  plain = _run(root, Opts(), order, values, reps, arrays, shape_of(root.shape))
  np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cols", [1030, 1056, 1024, 997, 5])
def test_a_threaded_column_block_at_a_symbolic_size_splits_equal_stretches(cols):
  """A VECTOR axis shared by threads at a symbolic size runs one stretch of ceil(n / cores) columns per thread
  (Ctx.stretches), however n divides into blocks: (70, 1030) in blocks of 512 is 515 columns a thread, not two
  blocks for one thread and six columns for the other. The sums are NumPy's, at sizes other than the lowered ones."""
  from minitensor.backend.machine import machine
  from minitensor.backend.render_c import SIZED_THREAD_MIN, render_function
  cores = machine().cores
  if cores < 2: pytest.skip("one core: no thread loop")
  reps = [(64, 1024)]
  order = _sizes_of(reps)
  root = _col_sum(buf(0, prod(reps[0]), dtypes.float32).reshape(reps[0]))
  opts = build([Opt(V, 0, 512), Opt(TH, 0, 0)], KernelInfo.of(root, True))
  sink = lower(root, buf(1, 1024, dtypes.float64), Ctx(sizes=Sizes(order, LARGE_MAX), opts=opts))
  threads = [u for u in sink.toposort() if u.op is Ops.RANGE and u.arg.kind.name == "THREAD"]
  assert [(t.arg.size, t.arg.var) for t in threads] == [(cores, None)]       # (not ceil(n / 512) blocks)
  # (a symbolic program also serves small sizes: the threads start only for enough work, counted at run time)
  assert f">= {SIZED_THREAD_MIN})" in render_function(sink, "k").split("#pragma omp parallel", 1)[1].split("\n")[0]
  x = np.random.default_rng(cols).standard_normal((70, cols)).astype(np.float32)
  got = _run(root, opts, order, (70, cols), reps, [x], (cols,))
  np.testing.assert_allclose(got, x.astype(np.float64).sum(0), rtol=1e-12, atol=1e-12)
