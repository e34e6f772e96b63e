"""Tiered compilation (backend/tiers.py): which compiler a schedule starts with, the background move to -O3 and the
swap under threads, and the same results from both tiers."""
from __future__ import annotations
import os
import re
import shutil
import sys
import threading
import numpy as np
import pytest
from hypothesis import given, settings
import minitensor as mt
from minitensor import nn
from minitensor.backend import keys, runtime, tiers
from minitensor.backend import realize as realize_mod

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "fuzz"))
from test_fuzz_programs import INEXACT, programs  # noqa: E402

TCC = shutil.which("tcc")


@pytest.fixture
def compilers(monkeypatch):
  """The compiler of every build this test makes, in order (not tcc's preprocessing of the headers, which a
  process's first tcc build starts on a thread of its own and may end after a later build)."""
  seen: list[str] = []
  run = runtime._run_compiler
  def spy(cmd, cwd):
    if any(a.endswith("kernel.c") for a in cmd): seen.append(os.path.basename(cmd[0]))
    return run(cmd, cwd)
  monkeypatch.setattr(runtime, "_run_compiler", spy)
  return seen


def _compiled(t: mt.Tensor) -> realize_mod.Compiled:
  """Realize t (a new structure) and return the compiled schedule that ran."""
  before = set(map(id, realize_mod._cache.values()))
  np.asarray(t)
  (c,) = [c for c in realize_mod._cache.values() if id(c) not in before]
  return c


def _fresh(shape, seed=0, dtype=np.float32):
  return mt.asarray(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def test_forced_tiers(cache, monkeypatch, compilers):
  monkeypatch.setenv("MINITENSOR_TIER", "0")
  assert _compiled(nn.softmax(_fresh((7, 9)), axis=-1)).tier == 0
  monkeypatch.setenv("MINITENSOR_TIER", "1")
  x = _fresh((7, 9))
  c = _compiled(nn.softmax(x, axis=-1))
  assert c.tier == 1 and compilers[-1] == os.path.basename(runtime.compiler())
  np.testing.assert_allclose(np.asarray(nn.softmax(x, axis=-1)), np.asarray(nn.softmax(x.numpy(), axis=-1)), rtol=1e-6)
  monkeypatch.setenv("MINITENSOR_TIER", "2")
  with pytest.raises(ValueError, match="MINITENSOR_TIER"): np.asarray(_fresh((3,)) + 1)


@pytest.mark.skipif(TCC is None, reason="tcc is not installed (CI installs it)")
def test_tier0_uses_tcc_when_installed(cache, monkeypatch, compilers):
  monkeypatch.setenv("MINITENSOR_TIER", "0")
  monkeypatch.delenv("MINITENSOR_FAST_CC", raising=False)
  _compiled(_fresh((5, 6)) * 2 + 1)
  assert compilers[-1] == "tcc"
  _compiled(_fresh((5, 6), dtype=np.float16) * 2)          # tcc has no _Float16: the C compiler at -O1
  assert compilers[-1] == os.path.basename(runtime.compiler())


def test_tier0_without_tcc_is_the_c_compiler_at_O1(cache, monkeypatch, tmp_path, compilers):
  monkeypatch.setenv("MINITENSOR_TIER", "0")
  monkeypatch.delenv("MINITENSOR_FAST_CC", raising=False)
  bindir = tmp_path / "bin"                                   # a PATH with the C toolchain and without tcc
  bindir.mkdir()
  for tool in ("cc", "as", "ld"): (bindir / tool).symlink_to(shutil.which(tool))
  monkeypatch.setenv("PATH", str(bindir))
  monkeypatch.delenv("MINITENSOR_CC", raising=False)
  assert tiers.fast_compiler() is None and tiers.toolchain(0, False) == (str(bindir / "cc"), tiers.TIER0_FLAGS)
  x = _fresh((4, 5))
  assert _compiled(x * 3 - 1).tier == 0 and compilers[-1] == "cc"
  np.testing.assert_array_equal(np.asarray(x * 3 - 1), x.numpy() * 3 - 1)


def test_auto_runs_large_work_at_tier0_while_its_tier1_compile_starts_at_once(cache, monkeypatch):
  """Every new schedule runs first at tier 0; one of large predicted work starts its tier-1 compile with its first
  call (it does not wait to be hot), and only work past FOREGROUND_WORK waits for -O3 before it runs."""
  monkeypatch.setenv("MINITENSOR_TIER", "auto")
  small = _compiled(_fresh((8, 8)) + 1)
  assert small.tier == 0 and small.upgrade is None
  big = _fresh((256, 256))
  c = _compiled(big @ big)                                    # ~1.1e8 statements: LARGE_WORK <= work < FOREGROUND_WORK
  assert tiers.LARGE_WORK <= c.work < tiers.FOREGROUND_WORK
  assert c.tier == 0 and c.upgrade is not None and c.runs == 1
  c.upgrade.join(120)
  assert c.tier == 1
  np.testing.assert_allclose(np.asarray(big @ big), big.numpy() @ big.numpy(), rtol=1e-4, atol=1e-3)
  huge = _fresh((512, 512))
  h = _compiled(huge @ huge)                                  # ~8.7e8 statements: past FOREGROUND_WORK
  assert h.tier == 1 and h.upgrade is None
  assert [tiers.choose(w) for w in (0, tiers.LARGE_WORK, tiers.FOREGROUND_WORK)] == [0, 0, 1]
  assert [tiers.eager(w) for w in (tiers.LARGE_WORK - 1, tiers.LARGE_WORK)] == [False, True]
  monkeypatch.setenv("MINITENSOR_TIER", "0")
  assert not tiers.eager(tiers.FOREGROUND_WORK) and tiers.choose(tiers.FOREGROUND_WORK) == 0


def test_hot_schedule_moves_to_tier1_in_the_background_under_8_threads(cache, monkeypatch):
  monkeypatch.setenv("MINITENSOR_TIER", "auto")
  monkeypatch.setattr(tiers, "HOT_SECONDS", 0.0)
  monkeypatch.setattr(tiers, "MAX_SPECIAL", 0)          # (tier 1 of this program, not its specialization)
  f = lambda a, b: (a * b + 1).sum(axis=-1)
  inputs = [np.random.default_rng(k).standard_normal((2, 64, 33)).astype(np.float32) for k in range(16)]
  c = _compiled(f(mt.asarray(inputs[0][0]), mt.asarray(inputs[0][1])))
  errors: list = []
  def worker(k: int) -> None:
    try:
      for j in range(30):
        a, b = inputs[(k + j) % 16]
        got = np.asarray(f(mt.asarray(a), mt.asarray(b)))
        np.testing.assert_allclose(got, f(a, b), rtol=1e-5)
    except Exception as e: errors.append(e)
  threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
  for t in threads: t.start()
  for t in threads: t.join()
  assert not errors, errors[0]
  assert c.upgrade is not None
  c.upgrade.join(timeout=120)
  assert c.tier == 1
  a, b = inputs[3]
  np.testing.assert_allclose(np.asarray(f(mt.asarray(a), mt.asarray(b))), f(a, b), rtol=1e-5)


def test_hot_is_the_time_rule_or_the_count_rule():
  assert not tiers.hot(1, 0.0) and not tiers.hot(tiers.HOT_RUNS - 1, tiers.HOT_SECONDS)
  assert tiers.hot(1, tiers.HOT_SECONDS * 1.01)                                  # one long run
  assert tiers.hot(tiers.HOT_RUNS, tiers.WARM_SECONDS)                           # a loop of costly runs
  assert not tiers.hot(10 ** 6, tiers.WARM_SECONDS / 2)                          # a loop of free ones


def test_a_loop_moves_to_tier1_after_hot_runs(cache, monkeypatch):
  """The count rule on a real program: HOT_RUNS - 1 runs stay at tier 0, the next starts the tier-1 compile (the
  time rule is out of reach), and the values stay NumPy's."""
  monkeypatch.setenv("MINITENSOR_TIER", "auto")
  monkeypatch.setattr(tiers, "HOT_SECONDS", float("inf"))
  monkeypatch.setattr(tiers, "WARM_SECONDS", 0.0)
  monkeypatch.setattr(tiers, "MAX_SPECIAL", 0)
  x = np.random.default_rng(5).standard_normal((40, 17))
  f = lambda t: (t - t.mean(axis=0)) / (t.std(axis=0) + 1)
  c = _compiled(f(mt.asarray(x)))
  assert c.tier == 0 and c.runs == 1
  for _ in range(tiers.HOT_RUNS - 2): np.asarray(f(mt.asarray(x)))
  assert c.upgrade is None and c.runs == tiers.HOT_RUNS - 1
  np.asarray(f(mt.asarray(x)))
  assert c.upgrade is not None
  c.upgrade.join(timeout=120)
  assert c.tier == 1
  np.testing.assert_allclose(np.asarray(f(mt.asarray(x))), f(x), rtol=1e-12)


def _run_at(tier: str, prog, monkeypatch) -> list[np.ndarray]:
  monkeypatch.setenv("MINITENSOR_TIER", tier)
  outs = prog(*[mt.asarray(x) for x in prog.inputs])       # new buffers: nothing realized before is reused
  return [np.asarray(o) for o in mt.realize(*outs)] if outs else []


@settings(max_examples=max(5, settings.default.max_examples // 4))
@given(prog=programs())
def test_fuzz_programs_give_the_same_bits_in_both_tiers(prog):
  with pytest.MonkeyPatch.context() as mp:
    # (`x ** 0.5` of integers and `x ** 3` are pow: within the tiers' ulps, as the named transcendentals)
    exact = not any(name in text or re.search(r"\*\* (0\.5|3)$", text) for kind, op in prog.ops if kind == "op"
                    for text in [op.text] for name in INEXACT)
    try: zero, one = _run_at("0", prog, mp), _run_at("1", prog, mp)
    except AssertionError: return        # a program NumPy rejects: the fuzz tests check its errors
  for a, b in zip(zero, one):
    assert a.dtype == b.dtype and a.shape == b.shape
    if exact or a.dtype.kind != "f": assert a.tobytes() == b.tobytes(), (prog, a, b)
    else: np.testing.assert_array_max_ulp(a[np.isfinite(a)], b[np.isfinite(a)], maxulp=64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", ["exp", "log", "sin", "cos", "tan", "tanh", "arctan", "arcsin", "log1p", "expm1", "exp2",
                                "log2", "log10", "sinh", "cosh", "sqrt"])
def test_transcendentals_within_4_ulp_across_tiers(fn, dtype, monkeypatch):
  """Tier 0 calls glibc's scalar libm, tier 1 its vector library where gcc vectorizes: they differ by at most 4 ulp
  (measured on 100,000 arguments: 1-4 ulp per function; tiers.py). sqrt is correctly rounded in both."""
  lo, hi = (-0.99, 0.99) if fn == "arcsin" else (0.01, 10)
  x = np.random.default_rng(1).uniform(lo, hi, 4096).astype(dtype)
  got = {}
  for tier in ("0", "1"):
    monkeypatch.setenv("MINITENSOR_TIER", tier)
    got[tier] = np.asarray(getattr(mt, fn)(mt.asarray(x)))
  np.testing.assert_array_max_ulp(got["0"], got["1"], maxulp=0 if fn == "sqrt" else 4)


@pytest.mark.parametrize("tier", ["0", "1"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_negative_flips_the_sign_bit_of_nan_in_every_tier(tier, dtype, monkeypatch):
  """np.negative flips the sign bit, a NaN's too (tcc computed x * -1.0 as 0 - x there, which keeps it)."""
  monkeypatch.setenv("MINITENSOR_TIER", tier)
  nan = np.array(np.nan, dtype)
  a = np.array([nan, -nan, 0.0, -0.0, 1.5, -np.inf] * 3, dtype) + (0 if dtype is not np.complex128 else -nan * 1j)
  for x in (a, a[0]):
    got, want = np.asarray(-mt.asarray(x)), -x
    assert got.tobytes() == np.asarray(want).tobytes(), (got, want)


@pytest.fixture
def levels(monkeypatch):
  """The optimization level (-O1, -O2, -O3; None for tcc) of every build this test makes, in order (not tcc's
  preprocessing of the headers, on a thread of its own)."""
  seen: list[str | None] = []
  run = runtime._run_compiler
  def spy(cmd, cwd):
    if any(a.endswith("kernel.c") for a in cmd): seen.append(next((f for f in cmd if re.fullmatch(r"-O\d", f)), None))
    return run(cmd, cwd)
  monkeypatch.setattr(runtime, "_run_compiler", spy)
  return seen


def test_hand_vectorized_schedules_build_at_O2_at_tier1(cache, monkeypatch, levels):
  """A schedule whose work is in GEMM or attention kernels (C written in vector types by hand) and that starts at
  tier 1 is built at -O2, the rest at -O3 (tiers.HAND_FLAGS); the plan says which, and every result matches NumPy."""
  monkeypatch.setenv("MINITENSOR_TIER", "1")
  rng = np.random.default_rng(0)
  f32 = lambda *s: rng.standard_normal(s).astype(np.float32)     # noqa: E731
  a, b, x = f32(128, 128), f32(128, 128), f32(64, 256)
  q, k, v = f32(128, 64), f32(128, 64), f32(128, 64)
  img, w = f32(2, 16, 20, 20), f32(8, 16, 3, 3)
  def softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)
  windows = np.lib.stride_tricks.sliding_window_view(np.pad(img, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), (2, 3))
  cases = [(mt.asarray(a) @ mt.asarray(b), a.astype(np.float64) @ b, True),
           (nn.softmax(mt.asarray(q) @ mt.asarray(k).T / 8, axis=-1) @ mt.asarray(v),
            softmax(q.astype(np.float64) @ k.T / 8) @ v, True),
           (nn.conv2d(mt.asarray(img), mt.asarray(w), padding=1),                 # (a pad kernel beside the GEMM)
            np.einsum("bchwij,ocij->bohw", windows.astype(np.float64), w), True),
           (nn.softmax(mt.asarray(x), axis=-1), softmax(x.astype(np.float64)), False)]
  for t, want, hand in cases:
    prog = _compiled(t)
    assert prog.plan.hand is hand and levels[-1] == ("-O2" if hand else "-O3"), (prog.plan.calls, levels)
    np.testing.assert_allclose(np.asarray(t), want, rtol=2e-4, atol=2e-4)
  assert tiers.hand_written(100, 90) and not tiers.hand_written(100, 89) and not tiers.hand_written(0, 0)
  monkeypatch.setenv("MINITENSOR_TIER", "auto")         # (a small GEMM starts at tier 0: its tier 1 keeps -O3)
  prog = _compiled(mt.asarray(a[:64, :64]) @ mt.asarray(b[:64, :64]))
  assert prog.tier == 0 and not prog.plan.hand


def _gcc() -> bool:
  """Whether the C compiler is GCC (runtime._tuned adds GCC's own flags to its -O3 builds)."""
  return runtime._tuned(("-O3",), runtime.compiler()) != ("-O3",)


def test_the_loop_kernels_of_a_hand_vectorized_schedule_keep_O3s_vectorizer(cache, monkeypatch, tmp_path):
  """In an -O2 build of hand-vectorized kernels (tiers.HAND_FLAGS), the loop kernels beside them (conv2d's padding
  copy) are marked MT_LOOPS and GCC vectorizes them as at -O3: a loop of unknown trip count, which -O2's cost
  model leaves scalar. The mark changes nothing elsewhere (other compilers, other builds)."""
  monkeypatch.setenv("MINITENSOR_TIER", "1")
  rng = np.random.default_rng(2)
  img, w = (rng.standard_normal(s).astype(np.float32) for s in ((2, 16, 20, 20), (8, 16, 3, 3)))
  prog = _compiled(nn.conv2d(mt.asarray(img), mt.asarray(w), padding=1))
  assert prog.plan.hand and runtime.LOOPS_O3 in tiers.HAND_FLAGS
  assert re.search(r"^MT_LOOPS void k\d+\(", prog.plan.src, re.M), prog.plan.src[:2000]
  if not _gcc(): pytest.skip("MT_LOOPS asks -O3 of GCC only (its optimize attribute)")
  from minitensor.backend.prelude import PRELUDE
  src = tmp_path / "loop.c"
  src.write_text(PRELUDE + "MT_LOOPS void scale(const float* restrict x, float* restrict y, long n) {\n"
                 "  for (long i = 0; i < n; i++) y[i] = x[i] * 3.0f + 1.0f;\n}\n")
  def vectorized(flags):
    cmd = [runtime.compiler(), *flags, "-Werror=attributes", "-fopt-info-vec-optimized", "-c", str(src), "-o",
           str(tmp_path / "loop.o")]
    p = runtime._run_compiler(cmd, str(tmp_path))
    assert p.returncode == 0, p.stderr
    return "loop vectorized" in p.stderr
  plain_o2 = tuple(f for f in tiers.HAND_FLAGS if f != runtime.LOOPS_O3)
  assert vectorized(tiers.HAND_FLAGS) and not vectorized(plain_o2)


def test_a_hand_written_plan_runs_the_same_bits_as_its_O3_build(cache, monkeypatch, levels):
  """The same GEMM source built at -O2 (tier 1 of a hand-vectorized plan) and at -O3 gives the same bits: neither
  contracts nor reassociates."""
  monkeypatch.setenv("MINITENSOR_TIER", "1")
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((160, 96)).astype(np.float32), rng.standard_normal((96, 144)).astype(np.float32)
  got = np.asarray(mt.asarray(a) @ mt.asarray(b))
  monkeypatch.setattr(tiers, "HAND_FLAGS", runtime.FLAGS)
  monkeypatch.setattr(runtime, "_loaded", {})
  monkeypatch.setattr(realize_mod, "_cache", type(realize_mod._cache)())
  monkeypatch.setattr(keys, "_programs", {})
  monkeypatch.setenv("MINITENSOR_CACHE_DIR", str(cache) + "-O3")
  again = np.asarray(mt.asarray(a.copy()) @ mt.asarray(b.copy()))
  assert levels == ["-O2", "-O3"] and got.tobytes() == again.tobytes()
  np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
