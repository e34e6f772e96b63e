"""The row prefetch (prefetch.rows_to_prefetch, emitted by render_c): a loop whose body reads a dense row of a
buffer in inner loops fetches the next iteration's row at its top. It is a hint: values never change, with or
without it, compiled by gcc or tcc."""
import re
import numpy as np
import pytest
from minitensor.backend import tiers
from minitensor.backend.debug import run_shaped
from minitensor.backend.dtype import dtypes
from minitensor.backend.prefetch import ROW_PREFETCH
from minitensor.backend.rangeify import Ctx, Opts, lower
from minitensor.backend.render_c import PRELUDE, render_function
from minitensor.backend.runtime import compile_c
from minitensor.backend.uop import Ops, UOp, buf, prod

OPTS = [Opts(), Opts(thread=0), Opts(unroll=4, thread=0), Opts(local=2)]


def layernorm(shape, d=dtypes.float32, x=None):
  """(x - mean) / sqrt(mean((x - mean)^2) + 1e-5) over the last axis: three passes over each row of data0."""
  x = buf(0, prod(shape), d).reshape(shape) if x is None else x
  n = shape[-1]
  def mean(v):
    return (v.cast(dtypes.float64).reduce(Ops.ADD, 1) * (1.0 / n)).cast(d).reshape(shape[:-1] + (1,)).expand(shape)
  c = x - mean(x)
  return c / UOp(Ops.SQRT, (mean(c * c) + c.const_like(1e-5),))


def softmax(shape, d=dtypes.float32):
  """exp(x - max) / sum(exp(x - max)): the sum's loop stores exp into the output, the last pass reads it back."""
  x = buf(0, prod(shape), d).reshape(shape)
  e = UOp(Ops.EXP, (x - x.reduce(Ops.MAX, 1).reshape(shape[:-1] + (1,)).expand(shape),))
  return e / e.cast(dtypes.float64).reduce(Ops.ADD, 1).cast(d).reshape(shape[:-1] + (1,)).expand(shape)


def source(root: UOp, opts: Opts) -> str:
  return render_function(lower(root, buf(1, prod(root.shape), root.dtype), Ctx(opts=opts)), "kernel")


def prefetches(src: str) -> list[tuple[str, int, int, int, int]]:
  """(buffer, first offset, end, step, write) of each row prefetch in the C."""
  pat = r"for \(\w+ mt_p = (\d+); mt_p < (\d+); mt_p \+= (\d+)\) mt_prefetch\(&(data\d+)\[[^;]*\+ mt_p\], (\d)\);"
  return [(b, int(lo), int(hi), int(step), int(w)) for lo, hi, step, b, w in re.findall(pat, src)]


def _np_layernorm(x):
  m = x.astype(np.float64).mean(-1, keepdims=True).astype(x.dtype)
  c = x - m
  return c / np.sqrt((c * c).astype(np.float64).mean(-1, keepdims=True).astype(x.dtype) + np.float32(1e-5))


def _np_softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.astype(np.float64).sum(-1, keepdims=True).astype(x.dtype)


@pytest.mark.parametrize("opts", OPTS, ids=repr)
@pytest.mark.parametrize("make,ref", [(layernorm, _np_layernorm), (softmax, _np_softmax)], ids=["layernorm", "softmax"])
def test_multi_pass_rows_fetch_the_next_row_and_compute_the_same(make, ref, opts):
  shape = (9, 256)                                   # (the last row's prefetch is skipped: no row after it)
  root = make(shape)
  found = {b: (lo, hi, step, w) for b, lo, hi, step, w in prefetches(source(root, opts))}
  assert found.get("data0") == (256, 512, 16, 0)     # the next row of the input, a line (16 floats) at a time
  assert found.get("data1") == (256, 512, 16, 1)     # the output row it stores: for writing
  x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
  np.testing.assert_allclose(run_shaped(root, [x.ravel()], opts), ref(x), rtol=2e-5, atol=2e-6)


def test_the_softmax_output_row_read_back_is_fetched_for_writing():
  assert ("data1", 256, 512, 16, 1) in prefetches(source(softmax((9, 256)), Opts()))


def test_a_stored_row_alone_is_not_fetched():
  """A loop that stores rows but fetches none it reads (a broadcast fill of each row) is no row pass."""
  col = buf(0, 64, dtypes.float32).reshape((64, 1)).expand((64, 256))
  assert prefetches(source(col * col.const_like(2.0), Opts())) == []


@pytest.mark.parametrize("opts", OPTS, ids=repr)
def test_a_row_sum_fetches_the_next_row(opts):
  x = buf(0, 64 * 256, dtypes.float32).reshape((64, 256))
  root = x.cast(dtypes.float64).reduce(Ops.ADD, 1).cast(dtypes.float32)
  assert ("data0", 256, 512, 16, 0) in prefetches(source(root, opts))
  a = np.random.default_rng(2).standard_normal((64, 256)).astype(np.float32)
  np.testing.assert_allclose(run_shaped(root, [a.ravel()], opts), a.sum(1), rtol=1e-5, atol=1e-5)


def test_no_prefetch_without_dense_rows():
  flat = buf(0, 64 * 256, dtypes.float32)
  assert prefetches(source(flat * flat.const_like(2.0), Opts())) == []                  # one loop: no rows
  short = ROW_PREFETCH[0] // 4 // 2                                                     # rows of half the minimum
  assert prefetches(source(layernorm((64, short)), Opts())) == []
  t = buf(0, 256 * 64, dtypes.float32).reshape((256, 64)).permute((1, 0))             # rows that are columns
  e = UOp(Ops.EXP, (t,))
  col = e / e.reduce(Ops.ADD, 1).reshape((64, 1)).expand((64, 256))
  assert not [p for p in prefetches(source(col, Opts())) if p[0] == "data0"]
  big = buf(0, 512 * 512, dtypes.float32).reshape((512, 512)).permute((1, 0))         # a tiled transpose:
  assert prefetches(source(big, Opts(tile={0: 8, 1: 8}, thread=0))) == []               # 8 x 8 of 8 rows' span


def test_a_row_read_with_a_stride_fetches_the_whole_next_row():
  full = buf(0, 9 * 512, dtypes.float32).reshape((9, 256, 2))
  x = full.shrink(((0, 9), (0, 256), (0, 1))).reshape((9, 256))                     # x[:, ::2] of a (9, 512)
  root = layernorm((9, 256), x=x)
  assert ("data0", 512, 1024, 16, 0) in prefetches(source(root, Opts()))
  a = np.random.default_rng(1).standard_normal((9, 512)).astype(np.float32)
  np.testing.assert_allclose(run_shaped(root, [a.ravel()]), _np_layernorm(a[:, ::2]), rtol=2e-5, atol=2e-6)


def test_tier0_compilers_build_a_kernel_with_prefetches():
  src = source(layernorm((4, 512)), Opts())
  assert prefetches(src)
  for tier in (0, 1):
    cc, flags = tiers.toolchain(tier, False)
    assert "kernel" in compile_c(PRELUDE + src, flags, cc, {"kernel": ("void*", "void*")})
