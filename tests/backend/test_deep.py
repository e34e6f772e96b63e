"""Deep graphs: every walk is iterative or bounded, so chains far deeper than Python's stack realize.

Each graph is compared with NumPy doing the same operations one by one, under the default recursion limit;
one script runs with the limit lowered to 200 (in a subprocess) to prove that no stage recurses with depth.
"""
from __future__ import annotations
import os
import subprocess
import sys
import textwrap
from pathlib import Path
import numpy as np
import minitensor as mt
from minitensor.backend import kernelize

ROOT = Path(__file__).resolve().parents[2]


def _check(t, want) -> None:
  got = t.numpy()
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_allclose(got, want, rtol=1e-12 if want.dtype == np.float64 else 1e-5)


def test_500_adds():
  a = np.linspace(-1, 1, 7)
  x, e = mt.asarray(a), a
  for _ in range(500): x, e = x + 1, e + 1
  _check(x, e)


def test_300_alternating_exp_transpose():
  a = np.arange(12.0).reshape(3, 4) / 100
  x, e = mt.asarray(a), a
  for _ in range(300): x, e = mt.exp(x).T * 0.01, np.exp(e).T * 0.01
  _check(x, e)


def test_1000_setitems():
  t, e = mt.zeros(1000, dtype=np.int64), np.zeros(1000, np.int64)
  for i in range(1000): t[i], e[i] = i * 3 - 7, i * 3 - 7
  _check(t, e)


def test_sum_of_500_tensors():
  arrays = [np.full(3, float(k)) + np.arange(3) / 7 for k in range(500)]
  _check(sum(mt.asarray(a) for a in arrays), sum(arrays))


def test_deep_chain_is_cut_into_kernels_no_deeper_than_the_bound():
  a = np.linspace(0, 1, 5, dtype=np.float32)
  x, e = mt.asarray(a), a
  for k in range(600):
    x, e = (x * np.float32(1.001), e * np.float32(1.001)) if k % 2 else (x + 0.5, e + np.float32(0.5))
  ex = mt.explain(x)
  assert len(ex.kernels) == -(-600 // kernelize.MAX_DEPTH)
  assert "void k0(" in str(ex)
  assert mt.to_dot(x).count("->") >= 1200
  _check(x, e)


def test_100000_op_chain():
  a = np.linspace(-3, 3, 11)
  x, e = mt.asarray(a), a
  for _ in range(100_000): x, e = x + 0.25, e + 0.25
  _check(x, e)


def test_freeing_a_100000_node_chain_does_not_overflow_the_c_stack():
  # a crash here would kill the process, so the chain is freed in a child
  code = """
    import gc, numpy as np, minitensor as mt
    from minitensor.backend.uop import _CONS
    x = mt.asarray(np.arange(4.0))
    for _ in range(100_000): x = x * 1.5
    before = len(_CONS)
    del x
    gc.collect()
    print(before, len(_CONS))
  """
  p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600,
                     cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
  assert p.returncode == 0, p.stderr[-2000:]
  before, after = map(int, p.stdout.split())
  assert before >= 100_000 and after < 10


def test_no_stage_recurses_with_depth():
  """Chains of elementwise, movement, reduce, setitem and concatenate steps realize and are explained with the
  recursion limit at 200 (a walk that recursed once per node would need thousands of frames)."""
  code = """
    import sys, numpy as np, minitensor as mt
    a = np.arange(24.0).reshape(4, 6) / 24
    x, e = mt.asarray(a), a
    sys.setrecursionlimit(200)
    for k in range(60):
      if k % 5 == 0: x, e = mt.tanh(x.T).T * 0.5, np.tanh(e.T).T * 0.5
      elif k % 5 == 1: x, e = x[:, ::-1] - 0.25, e[:, ::-1] - 0.25
      elif k % 5 == 2:
        x, e = mt.concatenate([x, mt.ones((4, 1))], axis=1)[:, 1:], np.concatenate([e, np.ones((4, 1))], axis=1)[:, 1:]
      elif k % 5 == 3: x, e = x - x.mean(axis=1, keepdims=True), e - e.mean(axis=1, keepdims=True)
      else:
        x[1, 2] = k; e[1, 2] = k
    np.testing.assert_allclose(x.numpy(), e, rtol=1e-9, atol=1e-12)
    y, f = x, e
    for k in range(1000): y, f = y[::-1, :].T.T * 0.999 + 1, f[::-1, :] * 0.999 + 1
    assert len(mt.explain(y).kernels) > 1 and mt.to_dot(y)
    for _ in range(5_000): y, f = y + 1, f + 1
    np.testing.assert_allclose(y.numpy(), f, rtol=1e-9)
    print("ok")
  """
  p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600,
                     cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
  assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-3000:]


def test_concatenate_of_many_pieces_is_grouped_into_small_kernels():
  from minitensor.manipulation import CONCAT_FUSED
  rng = np.random.default_rng(0)
  for n, dts in [(300, [np.float64]), (600, [np.float32, np.int32, np.float64])]:
    arrays = [(rng.random(2) * 100).astype(dts[k % len(dts)]) for k in range(n)]
    lazy = [mt.asarray(a) * 2 if k % 3 else mt.asarray(a) for k, a in enumerate(arrays)]
    t = mt.concatenate(lazy)
    ex = mt.explain(t)
    # counted, not timed: no kernel reads more than CONCAT_FUSED pieces, so none grows with n (the constant 2 of
    # each dtype is a one-element argument, not a piece)
    pieces = lambda k: [r for r in k.reads if r >= len(ex.inputs) or ex.inputs[r][0] != (1,)]
    assert max(len(pieces(k)) for k in ex.kernels) <= CONCAT_FUSED
    assert len(ex.kernels) <= 2 * n // CONCAT_FUSED + 2
    _check(t, np.concatenate([a * 2 if k % 3 else a for k, a in enumerate(arrays)]))
  few = mt.concatenate([mt.asarray(np.arange(3.0)) + 1, mt.asarray(np.ones(2))])
  assert len(mt.explain(few).kernels) == 1      # a few pieces stay one fused kernel
  _check(few, np.concatenate([np.arange(3.0) + 1, np.ones(2)]))
