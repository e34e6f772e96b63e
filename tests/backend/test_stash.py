"""lower()'s stash: out = f(e, reduce(e)) with e an expensive elementwise value (softmax's exp(x - max)) computes e
once per element: the reduce's loop stores e into the output buffer and the store pass reads it back. Every graph
is compared with NumPy under many Opts (the stash applies under some, not others: both must be right), and the C
says when the stash happened (one exp call, the output read back) and when it must not (a cheap value, a different
dtype, a register tile)."""
import re
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from minitensor.backend.debug import run_shaped
from minitensor.backend.dtype import dtypes
from minitensor.backend.rangeify import Ctx, Opts, lower
from minitensor.backend.render_c import render_function
from minitensor.backend.uop import Ops, UOp, buf, prod

FUNCS = {"exp": (Ops.EXP, np.exp), "sin": (Ops.SIN, np.sin), "tanh": (Ops.TANH, np.tanh)}
OPTS = [Opts(), Opts(unroll=2), Opts(unroll=4, thread=0), Opts(thread=0), Opts(local=2), Opts(local=3, thread=0),
        Opts(upcast={0: 2}), Opts(vector={0: 2}), Opts(thread=0, tile={0: 2})]


def graph(shape, dtype, fn: str, rop: Ops, widen: bool):
  """(root, reference function): e = fn(x - 1) over x of shape, r = rop over e's last axis (accumulated in float64
  when widen), out = e / r (ADD) or e - r (MAX), r broadcast back along the last axis."""
  d = dtypes.from_numpy(np.dtype(dtype))
  x = buf(0, prod(shape), d).reshape(shape)
  e = UOp(FUNCS[fn][0], (x + x.const_like(-1.0),))
  acc = e.cast(dtypes.float64) if widen else e
  r = acc.reduce(rop, 1).cast(d).reshape(shape[:-1] + (1,)).expand(shape)
  root = e / r if rop is Ops.ADD else e - r
  def ref(a):
    ev = FUNCS[fn][1](a - dtype(1))
    rv = (ev.astype(np.float64) if widen else ev)
    rv = (rv.sum(-1, keepdims=True) if rop is Ops.ADD else rv.max(-1, keepdims=True)).astype(dtype)
    return ev / rv if rop is Ops.ADD else ev - rv
  return root, ref


def source(root: UOp, opts: Opts) -> str:
  return render_function(lower(root, buf(1, prod(root.shape), root.dtype), Ctx(opts=opts)), "kernel")


def calls(src: str, fn: str) -> int:
  return len(re.findall(rf"\b{fn}f?\(", src))


@settings(max_examples=40, deadline=None)      # (each example compiles its kernel at -O3)
@given(st.sampled_from([(7,), (5, 9), (3, 4, 6), (2, 16), (4, 1, 5)]), st.sampled_from([np.float32, np.float64]),
       st.sampled_from(sorted(FUNCS)), st.sampled_from([Ops.ADD, Ops.MAX]), st.booleans(),
       st.sampled_from(range(len(OPTS))), st.integers(0, 2 ** 16))
def test_stashed_values_equal_numpy(shape, dtype, fn, rop, widen, k, seed):
  root, ref = graph(shape, dtype, fn, rop, widen)
  x = np.random.default_rng(seed).uniform(0.2, 3, shape).astype(dtype)
  tol = 2e-5 if dtype == np.float32 else 1e-12
  np.testing.assert_allclose(run_shaped(root, [x.ravel()], OPTS[k]), ref(x), rtol=tol, atol=tol)


@pytest.mark.parametrize("opts", [Opts(), Opts(unroll=4, thread=0), Opts(local=2)], ids=repr)
def test_the_reduce_loop_stores_the_value_and_the_store_pass_reads_it(opts):
  root, _ = graph((6, 8), np.float32, "exp", Ops.ADD, True)
  src = source(root, opts)
  assert calls(src, "exp") == 1, src                                 # computed once, in the reduce's loop
  assert re.search(r"data1\[\w+\] = alu\d+;", src), src              # ... stored into the output there
  assert re.search(r"= data1\[", src), src                           # ... and read back by the store pass


@pytest.mark.parametrize("opts", [Opts(upcast={0: 2}), Opts(vector={0: 2}), Opts(thread=1)], ids=repr)
def test_no_stash_where_the_row_is_not_one_threads_inner_loop(opts):
  root, ref = graph((4, 8), np.float64, "exp", Ops.ADD, False)
  src = source(root, opts)
  assert "= data1[" not in src and calls(src, "exp") >= 2, src
  x = np.linspace(0.5, 2, 32).reshape(4, 8)
  np.testing.assert_allclose(run_shaped(root, [x.ravel()], opts), ref(x), rtol=1e-12)


def test_no_stash_for_a_cheap_value_or_another_dtype():
  d = dtypes.float32
  x = buf(0, 24, d).reshape((4, 6))
  e = x * x                                                  # cheap: reading x again costs no more than the stash
  cheap = e / e.reduce(Ops.ADD, 1).reshape((4, 1)).expand((4, 6))
  assert "= data1[" not in source(cheap, Opts())
  f = UOp(Ops.EXP, (x,))                                     # the output is float64, e float32: no room for e
  wide = f.cast(dtypes.float64) / f.reduce(Ops.ADD, 1).reshape((4, 1)).expand((4, 6)).cast(dtypes.float64)
  src = source(wide, Opts())
  assert "= data1[" not in src and calls(src, "exp") == 2, src


def test_a_transposed_use_is_computed_where_it_is_used():
  # out[i, j] = e[j, i] / r[j]: the store pass of row i reads column i of e, which no reduce loop of row i visits
  d = dtypes.float64
  x = buf(0, 36, d).reshape((6, 6))
  e = UOp(Ops.EXP, (x,))
  root = (e / e.reduce(Ops.ADD, 1).reshape((6, 1)).expand((6, 6))).permute((1, 0))
  a = np.linspace(-1, 1, 36).reshape(6, 6)
  ev = np.exp(a)
  np.testing.assert_allclose(run_shaped(root, [a.ravel()], Opts(thread=0)), (ev / ev.sum(1, keepdims=True)).T,
                             rtol=1e-12)
