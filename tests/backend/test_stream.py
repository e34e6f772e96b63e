"""render_c's streaming loop (`_stream`): a flat elementwise kernel whose loop touches half of L3 or more stores
its output with non-temporal vector stores. Its values are the plain loop's, bit for bit, at every alignment of the
output and every length (the scalar prologue and epilogue), in both compiler tiers (tcc compiles the plain loop)."""
import numpy as np
import pytest
from minitensor.backend import render_c, tiers
from minitensor.backend.dtype import dtypes
from minitensor.backend.machine import Machine
from minitensor.backend.rangeify import Ctx, Opts, lower
from minitensor.backend.render_c import PRELUDE, render_function
from minitensor.backend.runtime import compile_c, native
from minitensor.backend.uop import buf

rng = np.random.default_rng(11)
SMALL_L3 = Machine(32, 16, True, 32 << 10, 512 << 10, 96 << 10, 2, True)     # streams from 4,096 float32 elements


def chain(n: int, d=dtypes.float32, checked: bool = False) -> str:
  """The C of W3's chain a*2 + b*3 - a*b over n elements as the flat kernel is rendered (a sized THREAD loop)."""
  a, b = buf(0, n, d), buf(1, n, d)
  root = a * a.const_like(2.0) + b * b.const_like(3.0) - a * b
  return render_function(lower(root, buf(2, n, d), Ctx(opts=Opts(thread=0))), "kernel", checked=checked, sized=True)


def run(src: str, tier: int, arrays: list[np.ndarray], n: int) -> None:
  cc, flags = tiers.toolchain(tier, False)        # (a loop kernel of a real dtype: tcc compiles it)
  k = compile_c(PRELUDE + src, flags, cc, {"kernel": ("void*",) * len(arrays) + ("int64_t",)})["kernel"]
  k.fn(*[native().from_buffer(x) for x in arrays], n)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [5000, 10007])
def test_streamed_values_are_the_plain_loops_at_every_alignment(dtype, n, monkeypatch):
  monkeypatch.setattr(render_c, "machine", lambda: SMALL_L3)
  d = dtypes.float32 if dtype == np.float32 else dtypes.float64
  src = chain(n, d)
  assert ("__builtin_ia32_movntps256" if d is dtypes.float32 else "__builtin_ia32_movntpd256") in src
  a, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
  want = a * 2 + b * 3 - a * b
  for tier in (1, 0):
    for offset in range(5):                         # the output starts 0..4 elements past a 32-byte boundary
      space = np.full(n + 16, np.nan, dtype)
      lead = (-space.ctypes.data % 32) // space.itemsize + offset
      out = space[lead:lead + n]
      run(src, tier, [a, b, out], n)
      np.testing.assert_array_equal(out, want)
      assert np.isnan(space[:lead]).all() and np.isnan(space[lead + n:]).all()      # nothing written outside


def test_short_loops_run_the_plain_loop(monkeypatch):
  monkeypatch.setattr(render_c, "machine", lambda: SMALL_L3)
  src = chain(100)
  threshold = int(src.split("if (n0 >= ")[1].split(" ")[0])
  assert threshold == -(-(SMALL_L3.l3 // 2) // 12)                  # half of L3 over 3 x 4 bytes per element
  for n in (1, 7, 100, threshold - 1, threshold, threshold + 9):
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    run(src, 1, [a, b, out], n)
    np.testing.assert_array_equal(out, a * 2 + b * 3 - a * b)


@pytest.mark.parametrize("vb,builtin", [(16, "__builtin_ia32_movntps,"), (64, "__builtin_ia32_movntps512")])
def test_other_vector_widths(vb, builtin, monkeypatch):
  """The SSE and AVX-512 forms: each guarded by its ISA macro (AVX-512 is compiled out on a CPU without it)."""
  monkeypatch.setattr(render_c, "machine", lambda: Machine(vb, 16, True, 32 << 10, 512 << 10, 96 << 10, 2, True))
  n = 9001
  src = chain(n)
  assert builtin in src and f"defined({render_c.STREAM_ISA[vb]})" in src and f"mt_t[{vb // 4}]" in src
  a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
  out = np.zeros(n, np.float32)
  run(src, 1, [a, b, out], n)
  np.testing.assert_array_equal(out, a * 2 + b * 3 - a * b)


def test_kernels_that_do_not_stream(monkeypatch):
  monkeypatch.setattr(render_c, "machine", lambda: SMALL_L3)
  assert "movnt" not in chain(5000, checked=True)                     # checked mode: the guarded plain loop
  i = buf(0, 5000, dtypes.int32)
  assert "movnt" not in render_function(lower(i + i, buf(1, 5000, dtypes.int32), Ctx(opts=Opts(thread=0))),
                                        sized=True)                                        # not a float
  x = buf(0, 64 * 64).reshape((64, 64))
  assert "movnt" not in render_function(lower(x.permute((1, 0)) * x, buf(1, 64 * 64), Ctx(opts=Opts(thread=0))))
  monkeypatch.setattr(render_c, "machine", lambda: Machine(16, 32, True, 64 << 10, 1 << 20, 96 << 10, 2, False))
  assert "movnt" not in chain(5000)                                   # not an x86 CPU
