"""Fused attention (backend/attention.py): softmax(Q K^T) V composed of ordinary operations is found in the graph
and run as one kernel with an online softmax; its values equal NumPy's composition, and near misses keep the
ordinary lowering (and equal NumPy too)."""
import math
import subprocess
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
from minitensor import nn
from minitensor.backend import attention, keys
from minitensor.backend.attention import Attention
from minitensor.backend.realize import scheduled
from minitensor.backend.render_c import PRELUDE
from strict_c import CC


@pytest.fixture
def concrete(monkeypatch):
  """Every graph keyed with its sizes (as large ones are), so small test shapes take the fused path too."""
  monkeypatch.setattr(keys, "SYMBOLIC_MAX", 0)


def _softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def sdpa_np(q, k, v, mask=None, causal=False, scale=None):
  """NumPy's composition, as nn.scaled_dot_product_attention composes it."""
  s = (q @ np.swapaxes(k, -1, -2)) * q.dtype.type(scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
  if causal: s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
  if mask is not None: s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
  with np.errstate(invalid="ignore"): return _softmax(s) @ v


def fused_kernels(t) -> list:
  """The fused attention kernels of t's schedule."""
  sched, _ = scheduled([t.uop])
  return [k for k in sched.kernels if k.program.kind == "attention"]


def compile_strict(src: str) -> None:
  """The source compiles with warnings as errors (with OpenMP, whose pragmas the fused kernel uses)."""
  p = subprocess.run([CC, "-Wall", "-Werror", "-fopenmp", "-std=gnu99", "-x", "c", "-c", "-", "-o", "/dev/null"],
                     input=src, capture_output=True, text=True)
  assert p.returncode == 0, p.stderr


def tol(dt):
  return dict(rtol=2e-4, atol=2e-5) if dt == np.float32 else dict(rtol=1e-10, atol=1e-12)


@st.composite
def problems(draw):
  batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
  L, S = draw(st.integers(2, 40)), draw(st.integers(2, 40))
  d, dv = draw(st.integers(2, 19)), draw(st.integers(2, 21))
  dt = draw(st.sampled_from([np.float32, np.float64]))
  mask = draw(st.sampled_from([None, "bool", "additive"]))
  causal = draw(st.booleans())
  scale = draw(st.sampled_from([None, 0.125, 3.0, 40.0]))
  seed = draw(st.integers(0, 2 ** 16))
  return batch, L, S, d, dv, dt, mask, causal, scale, seed


@given(problems(), st.sampled_from([1, 2, 3, 6]), st.sampled_from([4, 8, 16]), st.integers(1, 3), st.integers(1, 3))
def test_fused_equals_numpy(p, tr, tw, rows, cols):
  """Random problems on random blocks and register tiles (several row and key blocks, partial last ones)."""
  with pytest.MonkeyPatch.context() as mp:
    mp.setattr(keys, "SYMBOLIC_MAX", 0)
    mp.setattr(attention, "blocks", lambda m: (tr * rows, tw * cols, tr, tw))
    check_problem(*p)


@given(problems(), st.booleans())
def test_key_tiles_staged_once_or_per_row_block(p, staged):
  """K^T's tiles made once before the row blocks (from STAGED_K_BLOCKS row blocks on) or by each row block: both
  give NumPy's values, over batches, masks and partial last blocks."""
  with pytest.MonkeyPatch.context() as mp:
    mp.setattr(keys, "SYMBOLIC_MAX", 0)
    mp.setattr(attention, "STAGED_K_BLOCKS", 1 if staged else 1 << 62)
    mp.setattr(attention, "blocks", lambda m: (2, 4, 1, 4))
    check_problem(*p)


@pytest.mark.parametrize("staged", [True, False])
def test_key_tiles_both_ways_compile_strictly_and_check(staged, concrete, monkeypatch):
  """Both ways of making K^T's tiles compile with warnings as errors, checked or not, and run under
  MINITENSOR_CHECK=1 with NumPy's values."""
  monkeypatch.setattr(attention, "STAGED_K_BLOCKS", 1 if staged else 1 << 62)
  rng = np.random.default_rng(5)
  q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((2, 70, 16), (2, 45, 16), (2, 45, 8)))
  out = nn.scaled_dot_product_attention(q, k, v)
  (kern,) = fused_kernels(out)
  for checked in (True, False):
    src = kern.program.render("k", checked=checked)
    assert ("kraw" in src) == staged
    compile_strict(PRELUDE + src)
  monkeypatch.setenv("MINITENSOR_CHECK", "1")
  out = nn.scaled_dot_product_attention(q, k, v)
  np.testing.assert_allclose(out.numpy(), sdpa_np(q, k, v), **tol(np.float32))


def check_problem(batch, L, S, d, dv, dt, mkind, causal, scale, seed):
  rng = np.random.default_rng(seed)
  q, k, v = (rng.standard_normal(batch + s).astype(dt) for s in ((L, d), (S, d), (S, dv)))
  mask = None
  if mkind == "bool":
    mask = rng.random((L, S)) < 0.7
    mask[rng.integers(L)] = False                  # a fully masked row: NaN, as NumPy's composition gives
  elif mkind == "additive": mask = (rng.standard_normal(batch[-1:] + (L, S)) * 4).astype(dt)
  out = nn.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=causal, scale=scale)
  assert len(fused_kernels(out)) == 1
  np.testing.assert_allclose(out.numpy(), sdpa_np(q, k, v, mask, causal, scale), **tol(dt))


@pytest.mark.parametrize("tier", ["0", "1"])
@pytest.mark.parametrize("L,S,d,dv,scale", [(200, 131, 64, 64, 8), (97, 301, 33, 7, 1)])
def test_composition_is_one_kernel_without_scores(tier, L, S, d, dv, scale, monkeypatch):
  """The benchmark's spelling (and one without a scale), at sizes no block divides, at both compiler tiers: one
  kernel, no L x S buffer."""
  monkeypatch.setenv("MINITENSOR_TIER", tier)
  rng = np.random.default_rng(L)
  q, k, v = (rng.standard_normal(s, dtype=np.float32) for s in ((L, d), (S, d), (S, dv)))
  s = mt.asarray(q) @ mt.asarray(k).T
  out = nn.softmax(s / 8 if scale == 8 else s, axis=-1) @ mt.asarray(v)
  sched, _ = scheduled([out.uop])
  assert len(sched.kernels) == 1 and isinstance(sched.kernels[0].program.plan, Attention)
  assert [n for n, _ in sched.buffers] == [L * dv]            # the output is the only buffer written
  np.testing.assert_allclose(out.numpy(), _softmax(q @ k.T / scale) @ v, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("vb,regs", [(64, 32), (16, 16)])
def test_other_vector_widths_compute_the_same(vb, regs, monkeypatch, concrete):
  """The register tiles written for AVX-512 or SSE-width vectors (compiled here whatever the CPU: GCC splits wider
  vector types) give NumPy's values, partial blocks included."""
  from minitensor.backend.machine import Machine
  monkeypatch.setattr(attention, "machine", lambda: Machine(vb, regs, True, 32 << 10, 512 << 10, 8 << 20, 2, True))
  for dt in (np.float32, np.float64):
    (_, _, tr, tw), = {attention.blocks(k.program.plan.m) for k in fused_kernels(
      nn.scaled_dot_product_attention(*(np.ones((5, 3), dt),) * 3))}
    assert tw == 2 * vb // np.dtype(dt).itemsize and tr == min(6, (regs - 3) // 2)
    check_problem((2,), 37, 45, 19, 21, dt, "additive", True, None, 3)


def test_large_logits_and_masked_rows(concrete):
  """Logits near 1e4 (exp would overflow without the running max) and rows masked entirely (NaN, as NumPy)."""
  rng = np.random.default_rng(1)
  q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((2, 50, 16), (2, 70, 16), (2, 70, 8)))
  mask = rng.random((2, 50, 70)) < 0.5
  mask[:, 3] = False
  mask[1, 7, :65] = False                        # only the last key block is left
  out = nn.scaled_dot_product_attention(q, k, v, mask=mask, scale=2000.0)
  ref = sdpa_np(q, k, v, mask, scale=2000.0)
  assert np.isnan(ref[:, 3]).all() and np.isfinite(ref[1, 7]).all()
  assert len(fused_kernels(out)) == 1
  np.testing.assert_allclose(out.numpy(), ref, rtol=2e-4, atol=2e-5)


def test_heads_and_computed_operands(concrete):
  """Q, K, V split into heads by views (strided reads) and computed by matmuls (staged first): one fused kernel."""
  rng = np.random.default_rng(2)
  x, wq = rng.standard_normal((2, 33, 24), dtype=np.float32), rng.standard_normal((24, 24), dtype=np.float32)
  tx = mt.asarray(x)
  heads = lambda t: t.reshape(2, 33, 4, 6).transpose(0, 2, 1, 3)        # noqa: E731
  q, k, v = heads(tx @ mt.asarray(wq)), heads(tx), heads(tx * 2)
  out = nn.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(0, 2, 1, 3).reshape(2, 33, 24)
  hx = lambda a: a.reshape(2, 33, 4, 6).transpose(0, 2, 1, 3)            # noqa: E731
  ref = sdpa_np(hx(x @ wq), hx(x), hx(x * 2), causal=True).transpose(0, 2, 1, 3).reshape(2, 33, 24)
  assert len(fused_kernels(out)) == 1
  np.testing.assert_allclose(out.numpy(), ref, rtol=2e-4, atol=2e-5)


NEAR_MISSES = {
  "softmax over the other axis": lambda s, v: _sm_axis(s, -2) @ v,
  "sum where the max is": lambda s, v: _sm_custom(s, lambda e: e.sum(-1, keepdims=True), "sum") @ v,
  "max in the denominator": lambda s, v: _sm_custom(s, lambda e: e.max(-1, keepdims=True), "den") @ v,
  "scores sliced after the softmax": lambda s, v: _sm_axis(s, -1)[..., :-1] @ v[..., :-1, :],
  "log instead of exp": lambda s, v: _sm_custom(s, None, "log") @ v,
  "values that depend on the query row": lambda s, v: _ns(s).einsum("ij,ijd->id", _sm_axis(s, -1),
                                                                    v * _ns(s).asarray(ROWS)),
}
ROWS = np.arange(1, 41, dtype=np.float32)[:, None, None]


def _ns(x): return mt if isinstance(x, mt.Tensor) else np


def _sm_axis(s, axis):
  m = _ns(s)
  e = m.exp(s - s.max(axis=axis, keepdims=True))
  return e / e.sum(axis=axis, keepdims=True)


def _sm_custom(s, fn, kind):
  m = _ns(s)
  if kind == "sum": e = m.exp(s - fn(s))
  elif kind == "log": e = m.log(m.abs(s - s.max(axis=-1, keepdims=True)) + 1)
  else: e = m.exp(s - s.max(axis=-1, keepdims=True))
  return e / (fn(e) if kind == "den" else e.sum(axis=-1, keepdims=True))


@pytest.mark.parametrize("name", NEAR_MISSES)
def test_near_misses_are_not_fused(concrete, name):
  rng = np.random.default_rng(3)
  q, k, v = (rng.standard_normal(s, dtype=np.float32) for s in ((40, 8), (40, 8), (40, 5)))
  fn = NEAR_MISSES[name]
  out = fn(mt.asarray(q) @ mt.asarray(k).T * 0.25, mt.asarray(v))
  assert fused_kernels(out) == []
  np.testing.assert_allclose(out.numpy(), fn(q @ k.T * np.float32(0.25), v), rtol=2e-4, atol=2e-5)


def test_checked_mode(concrete, monkeypatch):
  """MINITENSOR_CHECK=1: the fused kernel's reads and stores are guarded, and its values do not change."""
  rng = np.random.default_rng(4)
  q, k, v = (rng.standard_normal(s).astype(np.float64) for s in ((3, 30, 5), (3, 21, 5), (3, 21, 6)))
  mask = rng.standard_normal((30, 21))
  out = nn.scaled_dot_product_attention(q, k, v, mask=mask)
  (kern,) = fused_kernels(out)
  src = kern.program.render("k", checked=True)
  assert src.count("mt_oob") >= 5
  for c in (src, kern.program.render("k")): compile_strict(PRELUDE + c)
  monkeypatch.setenv("MINITENSOR_CHECK", "1")
  out = nn.scaled_dot_product_attention(q, k, v, mask=mask)
  np.testing.assert_allclose(out.numpy(), sdpa_np(q, k, v, mask), **tol(np.float64))


SPELLINGS = {
  "fill as the true branch": lambda s, m, v: _sm_axis(_ns(s).where(~m, np.float32(-np.inf), s), -1) @ v,
  "scale on the left, mask added on the left": lambda s, m, v: _sm_axis(m.astype(np.float32) + 0.125 * s, -1) @ v,
  "values first (V^T P^T)^T": lambda s, m, v: _t(_t(v) @ _t(_sm_axis(s / 3, -1))),
  "two masks": lambda s, m, v: _sm_axis(_ns(s).where(m, s + m.astype(np.float32), np.float32(-np.inf)), -1) @ v,
}


def _t(x): return _ns(x).swapaxes(x, -1, -2)


@pytest.mark.parametrize("name", SPELLINGS)
def test_other_spellings_are_fused(concrete, name):
  rng = np.random.default_rng(5)
  q, k, v = (rng.standard_normal(s, dtype=np.float32) for s in ((3, 37, 8), (3, 45, 8), (3, 45, 6)))
  mask = rng.random((37, 45)) < 0.8
  fn = SPELLINGS[name]
  out = fn(mt.asarray(q) @ _t(mt.asarray(k)), mt.asarray(mask), mt.asarray(v))
  assert len(fused_kernels(out)) == 1
  with np.errstate(invalid="ignore"):
    np.testing.assert_allclose(out.numpy(), fn(q @ _t(k), mask, v), rtol=2e-4, atol=2e-5)
