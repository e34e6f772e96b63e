"""Tiered compilation: a new kernel runs from a fast compile; hot and large kernels get -O3 in the background.

    tier 0   tcc ($MINITENSOR_FAST_CC, else tcc on PATH unless $MINITENSOR_CC names the C compiler) with
             TCC_FLAGS; without it (and for kernels with float16 or complex, which tcc does not have) the C
             compiler at TIER0_FLAGS: -O1, chosen by measurement
    tier 1   the C compiler at runtime.FLAGS (-O3 -march=native, OpenMP); at HAND_FLAGS (-O2) when a schedule
             whose work is in kernels written in vector types by hand (lowerings.HAND_WRITTEN: GEMM, attention)
             starts at tier 1, in the foreground (its loop kernels at -O3 still: PRELUDE's MT_LOOPS)

Both tiers compile the same C source: tcc ignores the OpenMP pragmas (tier 0 runs on one thread) and the
prelude leaves out, for tcc, only the libmvec vector declarations and the float16 helpers (complex helpers come
with the kernels that use them). The order of every operation is fixed by the source and neither tier contracts or
reassociates, so +, -, *, /, sqrt, comparisons, casts and every reduction give the same bits in both tiers;
transcendental functions come from glibc's scalar libm in tier 0 and from its vector library (libmvec) where gcc
vectorizes in tier 1. Those two
differ in the last places: measured on 100,000 random arguments, 1-4 ulp (float32 log 4, tan and arcsin 3, most
others 2; float64 exp, sin, cos, tan, tanh, sinh 3), within the 4 ulp glibc documents for libmvec
(tests/backend/test_tiers.py checks 4).

MINITENSOR_TIER=0|1|auto (default auto). In auto, a new schedule starts at tier 0 and, once its accumulated run
time passes HOT_SECONDS (about what an -O3 compile of a small kernel costs), or once it has run HOT_RUNS times for
at least WARM_SECONDS in all (a loop: the compile runs beside it, on the other core, and the loop's steady state
arrives within about a second instead of after thousands of calls), is compiled at tier 1 on a background thread
and swapped in by one assignment (a call in flight finishes on the functions it started with). A schedule whose
predicted work (statements executed) reaches LARGE_WORK starts that compile at once (`eager`), beside its first
tier-0 runs; only from FOREGROUND_WORK, where one tier-0 call would cost about as much as the -O3 compile, is it
compiled at tier 1 before it runs (`choose`).
"""
from __future__ import annotations
import os
from minitensor.backend.runtime import FLAGS, LOOPS_O3, compiler, which

TCC_FLAGS = ("-shared", "-fPIC")
# Measured (AMD EPYC Zen 3, gcc 12, first calls in a new process): -O1 111 ms for softmax (100, 100) where
# -O3 takes 976 ms, 87 / 104 ms for a + b; -O1 is the cheap level
TIER0_FLAGS = ("-O1",) + FLAGS[1:]
# Measured (AMD EPYC Zen 4, gcc 12, a new process, empty cache): the large schedules that start at tier 1 run as
# fast from -O2 as from -O3 when their work is in hand-vectorized kernels (GEMM N=1024 11.6 / 12.0 ms, conv2d W6
# 14.6-14.9 / 14.3-15.1 ms, attention L=2048 7.7 / 8.0 ms) and compile 20-40 ms sooner (first calls 240 / 277,
# 299 / 322, 235 / 274 ms). Smaller ones start at tier 0 and keep -O3 for tier 1: attention at L=512 runs 5% slower
# from -O2 (0.64-0.76 / 0.61-0.62 ms), its loops around the vector code left to -O3's vectorizer. The loop kernels
# beside them (conv2d's padding copy) still get -O3 (LOOPS_O3): at -O2 W6 ran 3-4% slower, with the same compile time
HAND_FLAGS = ("-O2", LOOPS_O3) + FLAGS[1:]
HAND_SHARE = 0.9          # the share of a schedule's predicted work in hand-written kernels from which it takes them
# Measured (AMD EPYC Zen 3): tier-0 code costs 0.5-1.2 ns more per statement executed than tier 1 (a 1M-element
# add, softmax (512, 512), a column sum, GEMM 128), and an -O3 compile ~90 ms more than tcc's for one small kernel:
# from LARGE_WORK a tier-0 call costs ~30 ms more than a tier-1 one, and the -O3 compile starts with the first call.
# A schedule of many kernels takes far longer at -O3 (the jitted training step of benchmarks/bench_loops.py, 30
# kernels: 677 ms, AMD EPYC Zen 5), so it waits in the foreground only from FOREGROUND_WORK (a tier-0 call then
# costs ~0.5 s more)
LARGE_WORK = 1 << 25
FOREGROUND_WORK = 1 << 29
HOT_SECONDS = 0.1         # accumulated tier-0 run time after which the tier-1 compile starts
# ...or after HOT_RUNS runs costing WARM_SECONDS in all: scikit-learn's StandardScaler on a 2000 x 20 Tensor runs 7
# programs of 50-500 us at tier 0, 4-5x their tier-1 time (AMD EPYC Zen 5, tcc), and passed HOT_SECONDS only after
# about 300 fits; programs of a few microseconds (where the compile would never pay) stay at tier 0
HOT_RUNS = 8
WARM_SECONDS = 1e-3
MAX_SPECIAL = 4           # specializations of one symbolic program at most (a loop cycling through many sizes)


def hot(runs: int, elapsed: float) -> bool:
  """Whether a tier-0 program that has run `runs` times for `elapsed` seconds in all is compiled at tier 1."""
  return elapsed > HOT_SECONDS or (runs >= HOT_RUNS and elapsed >= WARM_SECONDS)


def mode() -> str:
  """MINITENSOR_TIER: '0', '1' or 'auto'; ValueError for another value."""
  m = os.environ.get("MINITENSOR_TIER", "auto") or "auto"
  if m not in ("0", "1", "auto"): raise ValueError(f"MINITENSOR_TIER must be 0, 1 or auto, got {m!r}")
  return m


def fast_compiler() -> str | None:
  """Tier 0's compiler: $MINITENSOR_FAST_CC, else tcc on PATH unless $MINITENSOR_CC chose the C compiler (then it
  serves tier 0 too, at TIER0_FLAGS), else None."""
  if fast := os.environ.get("MINITENSOR_FAST_CC"): return fast
  return None if os.environ.get("MINITENSOR_CC") else which("tcc")


def choose(work: int) -> int:
  """The tier a new schedule of this predicted work (statements executed) starts at."""
  m = mode()
  if m != "auto": return int(m)
  return 1 if work >= FOREGROUND_WORK else 0


def hand_written(work: int, hand_work: int) -> bool:
  """Whether a schedule of predicted `work`, `hand_work` of it in hand-vectorized kernels, compiles at HAND_FLAGS."""
  return work > 0 and hand_work >= HAND_SHARE * work


def eager(work: int) -> bool:
  """Whether a new tier-0 schedule of this predicted work starts its tier-1 compile at once, beside its runs."""
  return work >= LARGE_WORK and mode() == "auto"


NEEDS = frozenset({"vector", "complex", "float16"})    # what a kernel may need of the C compiler (lowerings.Program)


def tcc_lacks(needs) -> bool:
  """Whether kernels that need these (GCC vector types, _Complex, _Float16: a Program's `needs`) are beyond tcc."""
  return bool(NEEDS & set(needs))


def toolchain(tier: int, needs_cc: bool, hand: bool = False) -> tuple[str, tuple[str, ...]]:
  """(compiler, flags) of a tier; needs_cc: the kernels use a type tcc lacks (tcc_lacks); hand: a foreground tier-1
  build of a schedule whose work is in hand-vectorized kernels (`hand_written`: Plan.hand), made with HAND_FLAGS."""
  if tier == 1: return compiler(), HAND_FLAGS if hand else FLAGS
  fast = fast_compiler()
  if fast is not None and not needs_cc: return fast, TCC_FLAGS
  return compiler(), TIER0_FLAGS
