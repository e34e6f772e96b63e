"""Opts as actions (opt.py) and the beam search over them (search.py).

Every action, on random graphs of every family (elementwise, reductions over each axis, contractions, transposes)
with sizes the factors do not divide, is either refused with a reason or lowers to a kernel whose values equal the
default lowering's and NumPy's (integer-valued float data: every sum is exact, so the comparisons are exact too).
The search's winner computes the default's values, a candidate that does not is dropped, and tuning records are
used only on the CPU (and code) they were made for, never when damaged.
"""
import os
import re
import subprocess
import sys
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend import machine as machine_module
from minitensor.backend import plans, runtime, search, tiers
from minitensor.backend.dtype import dtypes
from minitensor.backend.machine import machine
from minitensor.backend.opt import KernelInfo, Opt, OptOps, OptRefused, apply_opt, build, choose_opts, heuristic
from minitensor.backend.rangeify import Ctx, Opts, lower
from minitensor.backend.render_c import PRELUDE, render_function
from minitensor.backend.uop import Ops, UOp, buf, prod
from cache_files import CACHE_ENV, REPO


# ---------------------------------------------------------------- graphs and a runner
def elementwise(M: int, N: int) -> tuple[UOp, list[tuple[int, ...]], object]:
  a, b = buf(0, M * N).reshape((M, N)), buf(1, M * N).reshape((M, N))
  return a * b + a, [(M, N), (M, N)], lambda x, y: x * y + x


def reduction(shape: tuple[int, ...], axis: int, rop: Ops) -> tuple[UOp, list[tuple[int, ...]], object]:
  perm = tuple(k for k in range(len(shape)) if k != axis) + (axis,)
  u = buf(0, prod(shape)).reshape(shape).permute(perm).reduce(rop, 1)
  return u, [shape], lambda x: x.sum(axis) if rop is Ops.ADD else x.max(axis)


def contraction(M: int, N: int, K: int) -> tuple[UOp, list[tuple[int, ...]], object]:
  a = buf(0, M * K).reshape((M, 1, K)).expand((M, N, K))
  b = buf(1, K * N).reshape((K, N)).permute((1, 0)).reshape((1, N, K)).expand((M, N, K))
  return (a * b).reduce(Ops.ADD, 1), [(M, K), (K, N)], lambda x, y: x @ y


def transpose(M: int, N: int, P: int) -> tuple[UOp, list[tuple[int, ...]], object]:
  return buf(0, M * N * P).reshape((M, N, P)).permute((2, 0, 1)), [(M, N, P)], lambda x: x.transpose(2, 0, 1)


def run_all(root: UOp, inputs: list[np.ndarray], opts: list[Opts]) -> list[np.ndarray]:
  """root lowered with each Opts, all compiled in one translation unit (the C compiler at tier 0's -O1, OpenMP
  on), each run on the inputs."""
  n = prod(root.shape)
  out = buf(len(inputs), n, root.dtype)
  sinks = [lower(root, out, Ctx(opts=o)) for o in opts]
  slots = [sorted({u.arg.slot for u in s.toposort() if u.op is Ops.BUFFER}) for s in sinks]
  src = "\n".join(render_function(s, f"k{i}") for i, s in enumerate(sinks))
  cc, flags = tiers.toolchain(0, True)
  lib = runtime.compile_c(PRELUDE + src, flags, cc, {f"k{i}": ("void*",) * len(sl) for i, sl in enumerate(slots)})
  res = []
  for i, sl in enumerate(slots):
    bufs = [np.ascontiguousarray(a).ravel() for a in inputs] + [np.full(n, np.nan, root.dtype.np)]
    runtime.call(lib[f"k{i}"], [bufs[s] for s in sl])
    res.append(bufs[-1].reshape(root.shape))
  return res


def data(shape: tuple[int, ...], seed: int) -> np.ndarray:
  return np.random.default_rng(seed).integers(-4, 5, shape).astype(np.float32)


def check(root: UOp, shapes: list[tuple[int, ...]], ref, opts: list[Opts], seed: int = 0) -> None:
  """Every Opts gives the default lowering's values, which are NumPy's (exactly: integer-valued data)."""
  xs = [data(s, seed + k) for k, s in enumerate(shapes)]
  want = ref(*xs)
  got = run_all(root, xs, [Opts()] + opts)
  np.testing.assert_array_equal(got[0], want)
  for o, g in zip(opts, got[1:]): np.testing.assert_array_equal(g, got[0], err_msg=repr(o))


sizes = st.integers(3, 24)


@st.composite
def graphs(draw):
  kind = draw(st.sampled_from(["elementwise", "reduction", "contraction", "transpose"]))
  if kind == "elementwise": return elementwise(draw(sizes), draw(sizes))
  if kind == "contraction": return contraction(draw(sizes), draw(sizes), draw(sizes))
  if kind == "transpose": return transpose(draw(sizes), draw(sizes), draw(st.integers(2, 9)))
  shape = tuple(draw(st.lists(sizes, min_size=2, max_size=3)))
  return reduction(shape, draw(st.integers(0, len(shape) - 1)), draw(st.sampled_from([Ops.ADD, Ops.MAX])))


@st.composite
def actions_for(draw, info: KernelInfo) -> Opt:
  """An action for a kernel: any kind, mostly an axis it has and a factor dividing it (UNROLL, LOCAL: the reduce),
  sometimes an axis it lacks or a factor that mostly does not divide."""
  op = draw(st.sampled_from(list(OptOps)))
  red = op in (OptOps.UNROLL, OptOps.LOCAL)
  axes = [0] if red else list(range(len(info.shape)))
  ax = draw(st.sampled_from(axes * 3 + [len(info.shape)]))
  n = (info.reduce_inner or (1,))[0] if red else info.shape[ax] if ax < len(info.shape) else 1
  fits = [f for f in range(2, n + 1) if n % f == 0] or [2]
  return Opt(op, ax, 0 if op is OptOps.THREAD else draw(st.sampled_from(fits * 3 + [0, 3, 8])))


# ---------------------------------------------------------------- actions
@settings(max_examples=40)
@given(graphs(), st.data(), st.integers(0, 1 << 16))
def test_every_action_is_refused_with_a_reason_or_keeps_the_values(g, d, seed):
  root, shapes, ref = g
  info = KernelInfo.of(root)
  o = Opts()
  for a in d.draw(st.lists(actions_for(info), min_size=1, max_size=4)):
    try: o = apply_opt(o, a, info)
    except OptRefused as e:
      assert e.opt is a and e.reason and e.reason in str(e)
  check(root, shapes, ref, [o], seed)


@pytest.mark.parametrize("g", [elementwise(24, 40), reduction((24, 40, 18), 0, Ops.ADD),
                               reduction((24, 40, 18), 1, Ops.MAX), reduction((24, 40, 32), 2, Ops.ADD),
                               contraction(24, 64, 18), transpose(16, 40, 8)],
                         ids=["elementwise", "sum0", "max1", "sum2", "contraction", "transpose"])
def test_the_search_space_keeps_the_values(g):
  # every action the search tries, alone and after the heuristic's (as its first round does)
  root, shapes, ref = g
  info = KernelInfo.of(root)
  heur = build(heuristic(root), info)
  opts = []
  for a in search.actions(info):
    for base in (Opts(), heur):
      try: opts.append(apply_opt(base, a, info))
      except OptRefused: pass
  assert len(opts) >= 10
  check(root, shapes, ref, opts)


def test_refusals_name_the_reason():
  info = KernelInfo.of(contraction(12, 40, 18)[0])
  assert info == KernelInfo((12, 40), (18,), 4)
  cases = [(Opts(), Opt(OptOps.UPCAST, 0, 8), "does not divide axis 0"),
           (Opts(), Opt(OptOps.UPCAST, 2, 2), "not an output axis"),
           (Opts(upcast={0: 4}), Opt(OptOps.UPCAST, 0, 2), "upcast already"),
           (Opts(upcast={0: 4}), Opt(OptOps.VECTOR, 0, 4), "upcast"),
           (Opts(vector={1: 8}), Opt(OptOps.TILE, 1, 8), "VECTOR axis"),
           (Opts(), Opt(OptOps.TILE, 0, 12), "not smaller"),
           (Opts(), Opt(OptOps.UNROLL, 0, 4), "does not split"),
           (Opts(), Opt(OptOps.UNROLL, 1, 2), r"only \(axis 0\)"),
           (Opts(thread=0), Opt(OptOps.THREAD, 1, 0), "threaded already"),
           (Opts(unroll=2), Opt(OptOps.LOCAL, 0, 3), "unrolled already"),
           (Opts(local=3), Opt(OptOps.UNROLL, 0, 2), r"blocked already \(LOCAL\)"),
           (Opts(), Opt(OptOps.THREAD, 0, 4), "no factor"),
           (Opts(), Opt(OptOps.BLOCK, 1, 8), "not tiled"),
           (Opts(tile={1: 4}, block={1: 8}), Opt(OptOps.BLOCK, 1, 20), "blocked already"),
           (Opts(tile={1: 4}), Opt(OptOps.BLOCK, 1, 40), "not smaller"),
           (Opts(tile={1: 4}), Opt(OptOps.BLOCK, 1, 10), "not a larger multiple of the tile 4"),
           (Opts(tile={1: 4}), Opt(OptOps.BLOCK, 1, 4), "not a larger multiple"),
           (Opts(), Opt(OptOps.JAM, 0, 2), "VECTOR first"),
           (Opts(vector={1: 8}, jam=2), Opt(OptOps.JAM, 0, 3), r"jammed already \(JAM\)"),
           (Opts(vector={1: 8}), Opt(OptOps.JAM, 0, 4), "does not split"),
           (Opts(jam=2), Opt(OptOps.VECTOR, 1, 8), "JAM comes after VECTOR"),
           (Opts(jam=2), Opt(OptOps.UNROLL, 0, 2), "jammed already")]
  for o, a, why in cases:
    with pytest.raises(OptRefused, match=why): apply_opt(o, a, info)
  with pytest.raises(OptRefused, match="no reduce"): apply_opt(Opts(), Opt(OptOps.UNROLL, 0, 2), KernelInfo((8, 8)))
  # a register tile larger than the machine's registers: 8 vectors per row, rows to fill twice the registers
  big = KernelInfo((64, 4096), (64,), 4)
  o = apply_opt(Opts(), Opt(OptOps.VECTOR, 1, 8 * machine().lanes(4)), big)
  with pytest.raises(OptRefused, match="vector registers"):
    apply_opt(o, Opt(OptOps.UPCAST, 0, machine().registers // 4), big)


def test_local_blocks_the_reduce_inside_the_output_loops():
  root, shapes, ref = contraction(8, 16, 12)
  o = apply_opt(Opts(), Opt(OptOps.LOCAL, 0, 4), KernelInfo.of(root))
  src = render_function(lower(root, buf(2, 128), Ctx(opts=o)))
  # k = outer * 4 + inner: an outer loop of 3 and an inner one of 4 iterations, inside the two output loops
  assert "ridx2 < 3;" in src and "ridx3 < 4;" in src and "(ridx2*4)" in src and "(ridx3*16)" in src, src
  check(root, shapes, ref, [o])


@pytest.mark.parametrize("jam", [2, 3, 6])
def test_a_jammed_reduce_combines_its_steps_in_order(jam):
  # a column sum of (18, 40): 18 rows, jam rows per pass over the 40 lanes, each added to the accumulator in turn
  root = buf(0, 18 * 40).reshape((18, 40)).permute((1, 0)).reduce(Ops.ADD, 1)
  info = KernelInfo.of(root)
  o = build([Opt(OptOps.VECTOR, 0, 8), Opt(OptOps.JAM, 0, jam)], info)
  src = render_function(lower(root, buf(1, 40), Ctx(opts=o)))
  assert f"< {18 // jam};" in src and len(re.findall(r"data0\[", src)) == jam, src
  x = np.random.default_rng(jam).standard_normal((18, 40)).astype(np.float32)
  plain, jammed = run_all(root, [x.ravel()], [build([Opt(OptOps.VECTOR, 0, 8)], info), o])
  np.testing.assert_array_equal(jammed, plain)                           # the same terms in the same order
  np.testing.assert_allclose(jammed, x.sum(0), rtol=1e-5, atol=1e-5)


def test_blocks_of_tiles_nest_outside_the_tiles(monkeypatch):
  root, shapes, ref = transpose(1, 96, 256)                    # out (256, 1, 96): x.T of a (96, 256)
  info = KernelInfo.of(root)
  o = build([Opt(OptOps.TILE, 2, 8), Opt(OptOps.TILE, 0, 8), Opt(OptOps.BLOCK, 2, 32), Opt(OptOps.BLOCK, 0, 64),
             Opt(OptOps.THREAD, 0, 0)], info)
  src = render_function(lower(root, buf(1, prod(root.shape)), Ctx(opts=o)))
  # the block loops (4 over axis 0 threaded, 3 over axis 2), the tiles inside a block (8, 4), then a tile's 8 x 8
  extents = [int(n) for n in re.findall(r"ridx\d+ < (\d+);", src)]
  assert extents == [4, 3, 8, 4, 8, 8] and "omp parallel for" in src.split("ridx1")[0], src
  check(root, shapes, ref, [o, build([Opt(OptOps.TILE, 2, 8), Opt(OptOps.BLOCK, 2, 48)], info)])
  # the heuristic blocks a transpose larger than L2 in squares whose two sides fill half of it (128 with 512 KiB)
  monkeypatch.setattr(machine_module, "_machine", [machine_module.Machine(32, 16, True, 32 << 10, 512 << 10, 32 << 20,
                                                                          2, True)])
  big = buf(0, 4096 * 1024).reshape((4096, 1024)).permute((1, 0))
  assert heuristic(big) == [Opt(OptOps.TILE, 1, 8), Opt(OptOps.TILE, 0, 8), Opt(OptOps.BLOCK, 1, 128),
                            Opt(OptOps.BLOCK, 0, 128), Opt(OptOps.THREAD, 0, 0)]


def test_the_heuristic_is_a_list_of_actions_that_builds_its_opts(monkeypatch):
  # a machine whose L2 (512 KiB) the 1 MiB transpose exceeds, whatever CPU runs the test
  monkeypatch.setattr(machine_module, "_machine", [machine_module.Machine(32, 16, True, 32 << 10, 512 << 10, 32 << 20,
                                                                          2, True)])
  root = contraction(64, 64, 64)[0]
  acts = heuristic(root)
  assert acts and all(isinstance(a, Opt) for a in acts)
  assert {a.op for a in acts} >= {OptOps.VECTOR, OptOps.UPCAST}
  assert choose_opts(root) == build(acts, KernelInfo.of(root))
  assert [a.op for a in heuristic(reduction((64, 512), 1, Ops.ADD)[0])] == [OptOps.UNROLL]
  assert [a.op for a in heuristic(transpose(64, 64, 64)[0])] == [OptOps.TILE, OptOps.TILE, OptOps.THREAD]
  # a float32 row sum accumulates in float64: 4 independent chains of 4 double lanes
  row = buf(0, 4096 * 1024).reshape((4096, 1024)).cast(dtypes.float64).reduce(Ops.ADD, 1)
  assert heuristic(row) == [Opt(OptOps.UNROLL, 0, 16), Opt(OptOps.THREAD, 0, 0)]
  # ... but short rows keep at least 8 steps of the loop: one vector of float32 lanes
  short = buf(0, 1 << 16).reshape((1 << 11, 32)).cast(dtypes.float64).reduce(Ops.ADD, 1)
  assert heuristic(short)[0] == Opt(OptOps.UNROLL, 0, 8)
  # rows of 100 terms, which no factor of the lanes divides, 4 at a time (4 scalar chains in one pass); so are the
  # rows of a kernel that keeps its plain order of additions (exact: an UNROLL would reorder them)
  mv = (buf(0, 100 * 100).reshape((100, 100)) * buf(1, 100).reshape((1, 100)).expand((100, 100))).reduce(Ops.ADD, 1)
  assert heuristic(mv) == [Opt(OptOps.UPCAST, 0, 4)]
  assert heuristic(reduction((64, 512), 1, Ops.ADD)[0], exact=True) == [Opt(OptOps.UPCAST, 0, 8)]
  assert search.opts_for(reduction((64, 512), 1, Ops.ADD)[0], exact=True).upcast == {0: 8}
  # a column sum: one block of columns per core (2 x 512), its float64 accumulators in half the 32 KiB L1, 4 rows
  # combined per pass over them ...
  col = buf(0, 4096 * 1024).reshape((4096, 1024)).permute((1, 0)).cast(dtypes.float64).reduce(Ops.ADD, 1)
  assert heuristic(col) == [Opt(OptOps.VECTOR, 0, 512), Opt(OptOps.JAM, 0, 4), Opt(OptOps.THREAD, 0, 0)]
  # ... and at most that (2048 float64 accumulators) when the rows are wider
  wide = buf(0, 64 * 65536).reshape((64, 65536)).permute((1, 0)).cast(dtypes.float64).reduce(Ops.ADD, 1)
  assert heuristic(wide) == [Opt(OptOps.VECTOR, 0, 2048), Opt(OptOps.JAM, 0, 4), Opt(OptOps.THREAD, 0, 0)]


# ---------------------------------------------------------------- the search
def test_same_uses_dtype_tolerances():
  a = np.linspace(-100, 100, 50, dtype=np.float32)
  assert search.same(a * np.float32(1 + 1e-6), a) and not search.same(a + 1, a)
  assert search.same(np.array([np.nan, np.inf]), np.array([np.nan, np.inf]))
  assert not search.same(np.array([3], np.int32), np.array([4], np.int32))


def _few_actions(monkeypatch):
  monkeypatch.setattr(search, "actions", lambda info: [Opt(OptOps.UPCAST, 0, 2), Opt(OptOps.UNROLL, 0, 4),
                                                        Opt(OptOps.VECTOR, 1, 8), Opt(OptOps.THREAD, 0, 0)])


def test_the_winner_computes_the_default_values(cache, monkeypatch):
  _few_actions(monkeypatch)
  root, shapes, ref = contraction(24, 40, 20)
  info = KernelInfo.of(root)
  found = search.beam_search(root, info, heuristic(root), 2, 60.0)
  assert found is not None
  acts, before, after = found
  assert 0 < after <= before
  win = build(list(acts), info)
  check(root, shapes, ref, [win])


def test_a_candidate_with_other_values_is_dropped(cache, monkeypatch):
  _few_actions(monkeypatch)
  root = contraction(24, 40, 20)[0]
  calls = []
  def same(got, want):                       # only the first two candidates (heuristic, none) agree
    calls.append(1)
    return len(calls) <= 2
  monkeypatch.setattr(search, "same", same)
  heur = tuple(heuristic(root))
  acts, _, _ = search.beam_search(root, KernelInfo.of(root), list(heur), 2, 60.0)
  assert len(calls) > 2 and acts in (heur, ())


def _body():
  """A kernel lowered for its concrete sizes (over 64K elements: realize.SYMBOLIC_MAX) and its input."""
  x = np.random.default_rng(0).integers(-4, 5, (300, 256)).astype(np.float32)
  return x, reduction((300, 256), 0, Ops.ADD)[0]


def test_search_through_realize_stores_a_record_the_next_lowering_uses(cache, monkeypatch):
  _few_actions(monkeypatch)
  monkeypatch.setattr(search, "tuned", [])
  bodies, beam = [], search.beam_search
  monkeypatch.setattr(search, "beam_search", lambda body, *a: bodies.append(body) or beam(body, *a))
  monkeypatch.setenv("MINITENSOR_SEARCH", "1")
  monkeypatch.setenv("MINITENSOR_SEARCH_BUDGET", "30")
  monkeypatch.setenv("MINITENSOR_CHECK", "0")          # (checked kernels are never searched)
  x, _ = _body()
  np.testing.assert_array_equal(np.asarray(mt.asarray(x).sum(0)), x.sum(0))
  assert [t.searched for t in search.tuned] == [True] and len(bodies) == 1
  assert len(list(cache.rglob("*.tune"))) == 1
  monkeypatch.delenv("MINITENSOR_SEARCH")
  assert search.opts_for(bodies[0]) == build(list(search.tuned[0].actions), KernelInfo.of(bodies[0]))
  assert [t.searched for t in search.tuned] == [True, False] and len(bodies) == 1


def _store(body, actions) -> str:
  key = plans.tune_key(search.kernel_key(body))
  plans.store(key, {"format": plans.TUNE_FORMAT, "what": "test", "before": 2.0, "after": 1.0,
                    "actions": actions}, ".tune")
  return key


def test_a_record_is_used_on_its_cpu_only(cache, monkeypatch):
  _, body = _body()
  heur = choose_opts(body)
  mine = build([Opt(OptOps.UPCAST, 0, 2), Opt(OptOps.THREAD, 0, 0)], KernelInfo.of(body))
  assert (mine.upcast, mine.thread) == ({0: 2}, 0)
  assert heur != mine
  _store(body, [["UPCAST", 0, 2], ["THREAD", 0, 0]])
  assert search.opts_for(body) == mine
  monkeypatch.setattr(runtime, "_cpu", ["model name=another CPU;flags=sse2"])
  assert search.opts_for(body) == heur


@pytest.mark.parametrize("text", [b"{not json", b"[1, 2]", b'{"format": "tune-0", "actions": []}',
                                  b'{"format": "tune-2", "before": 1, "after": 1, "actions": [["SPIN", 0, 2]]}',
                                  b'{"format": "tune-2", "before": 1, "after": 1, "actions": [["UPCAST", 0, 7]]}',
                                  b'{"format": "tune-2", "before": 1, "after": 1, "actions": [["UPCAST", "0", 2]]}',
                                  b'{"format": "tune-2", "actions": [["UPCAST", 0, 2]]}'])
def test_a_damaged_record_is_ignored(cache, text):
  _, body = _body()
  key = _store(body, [["UPCAST", 0, 2]])
  path = os.path.join(runtime.entry_dir(key), key + ".tune")
  with open(path, "wb") as f: f.write(text)
  assert search.opts_for(body) == choose_opts(body)


def test_stored_plans_are_not_used_while_searching(cache, monkeypatch):
  plans.store("ab" * 16, {"src": ""})
  assert plans.load("ab" * 16) == {"src": ""}
  monkeypatch.setenv("MINITENSOR_SEARCH", "2")
  assert plans.load("ab" * 16) is None
  monkeypatch.setenv("MINITENSOR_SEARCH", "wide")
  with pytest.raises(ValueError, match="MINITENSOR_SEARCH"): plans.search_width()
  monkeypatch.setenv("MINITENSOR_SEARCH_BUDGET", "-1")
  with pytest.raises(ValueError, match="MINITENSOR_SEARCH_BUDGET"): search.budget()


def test_tune_command_runs_a_script_and_lists_its_kernels(tmp_path):
  script = tmp_path / "script.py"
  script.write_text("import sys, numpy as np, minitensor as mt\n"
                    "x = np.ones((300, int(sys.argv[1])), np.float32)\n"
                    "assert (np.asarray(mt.asarray(x).sum(0)) == 300).all()\n")
  env = {k: v for k, v in os.environ.items() if k not in CACHE_ENV}
  env.update(MINITENSOR_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=REPO + os.pathsep + env.get("PYTHONPATH", ""))
  run = lambda: subprocess.run([sys.executable, "-m", "minitensor", "tune", "--beam", "1", "--budget", "3", str(script),
                                "256"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
  p = run()
  assert p.returncode == 0, p.stderr
  assert "1 kernel(s) searched, 0 from tuning records" in p.stdout and "(256,) float32, reduce 300" in p.stdout
  p = run()
  assert p.returncode == 0 and "0 kernel(s) searched, 1 from tuning records" in p.stdout, p.stdout + p.stderr
