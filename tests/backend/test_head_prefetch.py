"""The row-head prefetch (prefetch.heads_to_prefetch, emitted by render_c): a reduce loop whose VECTOR loop reads a
block of each row (a column sum) fetches the first lines of the block HEAD_AHEAD iterations ahead, at concrete and
at symbolic sizes. It is a hint: the values are NumPy's, compiled by gcc or tcc."""
import re
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from minitensor.backend import tiers
from minitensor.backend.debug import run_c, run_shaped
from minitensor.backend.dtype import dtypes
from minitensor.backend.linearize import linearize
from minitensor.backend.prefetch import HEAD_AHEAD, accessed, heads_to_prefetch
from minitensor.backend.rangeify import Ctx, Opts, lower
from minitensor.backend.realize import LARGE_MAX
from minitensor.backend.render_c import PRELUDE, render_function
from minitensor.backend.runtime import compile_c
from minitensor.backend.sizes import Sizes, extend
from minitensor.backend.symbolic import simplify
from minitensor.backend.uop import AxisType, Ops, UOp, buf, prod

HEAD = re.compile(r"mt_prefetch\(&data(\d+)\[[^;]*\], 0\); mt_prefetch\(&data\d+\[[^;]* \+ (\d+)\], 0\);")


def column_sum(rows: int, cols: int, d=dtypes.float32) -> UOp:
  x = buf(0, rows * cols, d).reshape((rows, cols)).permute((1, 0))
  acc = dtypes.float64 if d is dtypes.float32 else d
  return x.cast(acc).reduce(Ops.ADD, 1).cast(d)


def lowered(root: UOp, opts: Opts) -> UOp: return lower(root, buf(1, prod(root.shape), root.dtype), Ctx(opts=opts))


@pytest.mark.parametrize("symbolic", [False, True], ids=["concrete", "symbolic"])
@pytest.mark.parametrize("opts", [Opts(vector={0: 256}), Opts(vector={0: 128}, jam=4), Opts(vector={0: 256}, jam=4,
                                                                                            thread=0)], ids=repr)
def test_each_head_is_the_row_the_loop_reads_ahead(opts, symbolic):
  """Every head is the address of a load of the VECTOR loop at lane 0 HEAD_AHEAD iterations of its reduce loop later
  (the other loops where they are, the sizes at the lowered shape's), and every buffer load of such a loop has its
  row's head."""
  root, sizes = column_sum(64, 1024), Sizes((64, 1024), LARGE_MAX) if symbolic else None
  prog = linearize(sink := lower(root, buf(1, 1024, root.dtype), Ctx(sizes=sizes, opts=opts)))
  heads = heads_to_prefetch(prog)
  stack, reads = [], {}              # reduce loop -> [(its VECTOR loop, a load's address)]
  for s in prog:
    if s.kind == "open": stack.append(s.u)
    elif s.kind == "close": stack.pop()
    elif s.u.op is Ops.LOAD and stack[-1].arg.kind is AxisType.VECTOR and stack[-2].arg.kind is AxisType.REDUCE and \
        accessed(s.u).op is Ops.BUFFER:
      reads.setdefault(stack[-2], []).append((stack[-1], s.u.src[0].src[1]))
  assert heads and set(heads) == set(reads)
  loops = {u for u in sink.toposort() if u.op is Ops.RANGE}
  values = extend((64, 1024), sizes.table()) if symbolic else ()
  var = {u: UOp.const(values[u.arg.idx], u.dtype) for u in sink.toposort() if u.op is Ops.VAR}
  assert bool(var) == symbolic
  for r, hs in heads.items():
    at = {x: UOp.const(x.arg.size // 2, x.dtype) for x in loops if x is not r and x.arg.kind is not AxisType.VECTOR}
    at.update(var)
    for i in range(r.arg.size):
      want = {simplify(a.substitute({**at, lane: UOp.const(0, lane.dtype), r: UOp.const(i + HEAD_AHEAD, r.dtype)})).arg
              for lane, a in reads[r]}
      got = {simplify(h.substitute({**at, r: UOp.const(i, r.dtype)})).arg for _, h, _ in hs}
      assert got == want, (i, got, want)


@pytest.mark.parametrize("rows,cols,opts", [(64, 1024, Opts(vector={0: 256}, jam=4)), (40, 1536, Opts(vector={0: 256})),
                                            (36, 1024, Opts(vector={0: 512}, jam=4, thread=0))])
def test_a_column_sum_fetches_heads_and_computes_numpys_sum(rows, cols, opts):
  root = column_sum(rows, cols)
  src = render_function(lowered(root, opts), "kernel")
  assert {b for b, _ in HEAD.findall(src)} == {"0"} and {int(o) for _, o in HEAD.findall(src)} == {16}  # next line
  a = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
  np.testing.assert_allclose(run_shaped(root, [a.ravel()], opts), a.astype(np.float64).sum(0), rtol=1e-5, atol=1e-4)


def test_no_heads_where_rows_share_a_page_or_blocks_are_short():
  """Rows of 256 bytes (a page holds 16 of them: the hardware streams them already), blocks of 32 bytes, a row
  sum (its lanes run along the reduce loop) and an elementwise copy fetch no heads; a loop that fetches its whole
  next row (rows_to_prefetch: one block of half a row or more an iteration) fetches no head too."""
  whole = render_function(lowered(column_sum(33, 1024), Opts(vector={0: 512}, thread=0)), "kernel")
  assert "mt_p" in whole and not HEAD.findall(whole)
  assert not HEAD.findall(render_function(lowered(column_sum(512, 64), Opts(vector={0: 64})), "kernel"))
  assert not HEAD.findall(render_function(lowered(column_sum(512, 1024), Opts(vector={0: 8})), "kernel"))
  rows = buf(0, 64 * 1024, dtypes.float32).reshape((64, 1024)).cast(dtypes.float64).reduce(Ops.ADD, 1)
  assert not HEAD.findall(render_function(lowered(rows, Opts(unroll=16)), "kernel"))
  flat = buf(0, 1 << 16, dtypes.float32)
  assert not HEAD.findall(render_function(lowered(flat * flat.const_like(2.0), Opts(vector={0: 256})), "kernel"))


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(2, 300), cols=st.integers(2, 1100), dtype=st.sampled_from([dtypes.float32, dtypes.float64]),
       jam=st.sampled_from([1, 4]))
def test_symbolic_column_sums_fetch_heads_and_match_numpy(rows, cols, dtype, jam):
  """A column sum lowered once with symbolic sizes (as realize's program for graphs over SYMBOLIC_MAX elements, first
  seen at (1200, 1024)) fetches row heads whose step is a size, and gives NumPy's sums at every shape it runs at."""
  root = column_sum(1200, 1024, dtype)
  sizes = Sizes((1200, 1024), LARGE_MAX)
  sink = lower(root, buf(1, 1024, dtype), Ctx(sizes=sizes, opts=Opts(vector={0: 512}, jam=jam, thread=0)))
  src = render_function(sink, "kernel")
  assert HEAD.search(src) and re.search(r"mt_prefetch\(&data0\[[^;]*\bs\d+\b", src), src
  x = np.random.default_rng(rows * cols).standard_normal((rows, cols)).astype(dtype.np)
  # (buffers as large as the lowered shape's, NaN past the data: a load outside it shows in the sums)
  flat = np.full(max(x.size, 1200 * 1024) + 8, np.nan, dtype.np)
  flat[:x.size] = x.ravel()
  res = np.full(max(cols, 1024) + 8, -7.0, dtype.np)
  run_c(sink, {0: flat, 1: res}, sizes=extend((rows, cols), sizes.table()))
  assert (res[cols:] == -7.0).all(), "a store outside the output"
  tol = dict(rtol=1e-5, atol=1e-4) if dtype is dtypes.float32 else dict(rtol=1e-12, atol=1e-10)
  np.testing.assert_allclose(res[:cols], x.astype(np.float64).sum(0), **tol)


def test_tier0_compilers_build_a_kernel_with_heads():
  src = render_function(lowered(column_sum(64, 1024), Opts(vector={0: 256}, jam=4)), "kernel")
  assert HEAD.search(src)
  for tier in (0, 1):
    cc, flags = tiers.toolchain(tier, False)
    assert "kernel" in compile_c(PRELUDE + src, flags, cc, {"kernel": ("void*", "void*")})
