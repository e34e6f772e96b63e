"""Checked mode (MINITENSOR_CHECK=1): every kernel tests its indices; an out-of-bounds access is reported (kernel,
buffer, index) instead of made. These tests pass with or without MINITENSOR_CHECK set in the environment: each
sets the mode it needs."""
import numpy as np
import pytest
import minitensor as mt
import minitensor.testing as mtt
from minitensor.backend import fpstatus, tiers
from minitensor.backend import realize as R
from minitensor.backend.dtype import dtypes
from minitensor.backend.render_c import PRELUDE, render_c, render_function
from minitensor.backend.runtime import Kernel, compile_c
from minitensor.backend.uop import buf, range_, sink

rng = np.random.default_rng(7)
A = rng.standard_normal((5, 6)).astype(np.float32)
B = rng.integers(-50, 50, (5, 6)).astype(np.int32)

def ns(x): return mt if isinstance(x, mt.Tensor) else np


GRAPHS = {
  "elementwise": (lambda a, b: ns(a).exp(a) * 2 - b, (A, B)),
  "reductions": (lambda a, b: (a.sum(axis=0), b.max(axis=1, keepdims=True), a.mean(), (a * b).var(axis=(0, 1))),
                 (A, B)),
  "gather": (lambda a, b: (a[[4, 0, -1, 2]], a[np.array([[0, 1], [4, 4]]), 2:], b[:, [5, 0, 3]] + 1), (A, B)),
  "pad_concat": (lambda a, b: ns(a).concatenate([ns(a).pad(a, ((1, 2), (0, 3)), constant_values=-1.5)[::-1, 1:],
                                                  ns(a).pad(b[::-2].astype(np.float32), ((0, 0), (2, 0)))],
                                                 axis=0) * 3, (A, B)),
  "matmul": (lambda a, b: a @ b.T.astype(np.float32), (A, B)),
}


def run(fn, arrays):
  out = fn(*(mt.asarray(x) for x in arrays))
  outs = out if isinstance(out, tuple) else (out,)
  mt.realize(*outs)
  return [o.numpy() for o in outs]


@pytest.mark.parametrize("name", GRAPHS)
def test_checked_results_are_identical(name, monkeypatch):
  fn, arrays = GRAPHS[name]
  monkeypatch.setenv("MINITENSOR_CHECK", "0")
  plain = run(fn, arrays)
  monkeypatch.setenv("MINITENSOR_CHECK", "1")
  checked = run(fn, arrays)
  for p, c in zip(plain, checked):
    assert p.dtype == c.dtype and p.shape == c.shape
    if name == "elementwise":
      # the plain loop is vectorized, so exp comes from the vector math library; the guards of checked mode
      # keep its loop scalar (glibc's expf): the two may round the float32 exponential 1 ulp apart
      np.testing.assert_allclose(c, p, rtol=2 * np.finfo(np.float32).eps)
    else: assert p.tobytes() == c.tobytes()
  mtt.assert_matches_numpy(fn, *arrays)      # checked mode is still set


def test_checked_mode_compiles_checked_kernels(monkeypatch):
  monkeypatch.setenv("MINITENSOR_CHECK", "1")
  y = mt.asarray(A) * 3 + 1
  skey, leaves, sizes = R.structure(R.canonical_graph([y.uop]))
  key = R.ProgramKey(skey, R.Mode(True, tiers.mode()), (sizes, tuple(b.shape for b in leaves)))   # kept apart
  y.numpy()
  prog = R._cache[key]
  assert prog.checked and all("mt_err" in k.src and "mt_oob" in k.src for k, *_ in prog.fns)


def kernel(sink_uop, name="oob") -> Kernel:
  return compile_c(render_c(sink_uop, name, checked=True))[name]


def call(k: Kernel, *arrays: np.ndarray) -> np.ndarray:
  err = np.zeros(3, np.int64)
  k.fn(*(R._from_buffer(a) for a in arrays), R._from_buffer(err))
  return err


def test_out_of_bounds_load_is_reported_not_made():
  r = range_(8, 0)
  prog = sink(buf(1, 8).index(r).store(buf(0, 4).index(r).load() + 1.0).end(r))
  src = render_c(prog, "oob", checked=True)
  assert "mt_oob(mt_err, 0," in src
  data = np.array([1, 2, 3, 4, 99, 99, 99, 99], np.float32)
  out = np.full(8, -7.0, np.float32)
  err = call(kernel(prog), data, out)          # data0 is declared with 4 elements: 4..7 are out of bounds
  assert err.tolist() == [1, 0, 4]             # the first violation: buffer slot 0, index 4
  assert out[:4].tolist() == [2, 3, 4, 5]
  assert 100 not in out                        # the elements past the declared size were never read


def test_out_of_bounds_store_is_reported_not_made():
  r = range_(6, 0)
  prog = sink(buf(1, 3, dtypes.int32).index(r * 2 - 1).store(buf(0, 6, dtypes.int32).index(r).load()).end(r))
  data = np.arange(10, 16, dtype=np.int32)
  out = np.full(12, -1, np.int32)               # 3 declared elements, then a sentinel region
  err = call(kernel(prog, "oob_store"), data, out)
  assert err.tolist() == [1, 1, -1]            # r = 0 writes index -1 of data1
  assert out.tolist() == [-1, 11, -1] + [-1] * 9  # only index 1 (r = 1) is in bounds; nothing past 3 is written


def test_in_bounds_kernel_reports_nothing():
  r = range_(4, 0)
  prog = sink(buf(1, 4).index(r).store(buf(0, 4).index(3 - r).load()).end(r))
  out = np.zeros(4, np.float32)
  assert call(kernel(prog, "ok"), np.arange(4, dtype=np.float32), out).tolist() == [0, 0, 0]
  assert out.tolist() == [3, 2, 1, 0]


def test_violation_raises_index_error_naming_kernel_buffer_and_index():
  r = range_(8, 0)
  s = sink(buf(1, 8).index(r).store(buf(0, 4).index(r).load()).end(r))
  k = compile_c(PRELUDE + fpstatus.instrument(render_function(s, "k_oob", checked=True), "k_oob", s))["k_oob"]
  plan = R.Plan("", 1, (R.Call("k_oob", (0, 1), (), (8,), "float32"),), ((8, (), "float32"),), (1,))
  prog = R.Compiled(plan, 1, [(k, (0, 1), (), ())], checked=True)
  with pytest.raises(IndexError, match=r"kernel k_oob computing \(8,\) float32 accessed index 4 of buffer data0 "
                                       r"\(schedule buffer 0, size 4\)"):
    prog([np.zeros(4, np.float32)])
