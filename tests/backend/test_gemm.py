"""The blocked GEMM (backend/gemm.py): matmul, batched matmul, einsum-like contractions and conv2d through it equal
NumPy within the error bound of a sum of K products; the path taken is read from the schedule and the C source."""
import contextlib
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor import nn
from minitensor.backend import gemm, keys
from minitensor.backend.machine import Machine, machine
from minitensor.backend.realize import scheduled

rng = np.random.default_rng(16)
SIZES = st.one_of(st.integers(1, 48), st.sampled_from([1, 2, 5, 7, 13, 17, 31, 37, 61, 97]))


@contextlib.contextmanager
def min_work(n: int):
  """Every contraction of concrete sizes takes the blocked path (hypothesis runs examples without fixtures)."""
  old, gemm.MIN_WORK = gemm.MIN_WORK, n
  try: yield
  finally: gemm.MIN_WORK = old


def blocked(t: mt.Tensor) -> bool:
  """Whether realizing t runs a kernel rendered as a blocked GEMM."""
  return any(k.program.kind == "gemm" for k in scheduled([t.uop])[0].kernels)


def check_product(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
  """got == a @ b within the rounding bound of a K-term sum of products in a's dtype (both orders of summation):
  |got - exact| <= 2 K eps (|a| @ |b|), exact taken in float64 (float32) or as NumPy's result (float64)."""
  k, eps = a.shape[-1], np.finfo(a.dtype).eps
  want = np.matmul(a.astype(np.float64), b.astype(np.float64))
  bound = 2 * max(k, 1) * eps * np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64)) + 1e-300
  assert got.shape == want.shape and got.dtype == a.dtype
  assert np.all(np.abs(got - want) <= bound), np.max(np.abs(got - want) / bound)


def operand(shape: tuple[int, ...], dtype, transposed: bool) -> tuple[np.ndarray, mt.Tensor]:
  """A random array of `shape` and the same values as a Tensor, read through a transpose when asked."""
  x = rng.standard_normal(shape).astype(dtype)
  if not transposed: return x, mt.asarray(x)
  xt = np.ascontiguousarray(np.swapaxes(x, -1, -2))
  return x, mt.asarray(xt).swapaxes(-1, -2) if x.ndim > 1 else mt.asarray(x)


@settings(max_examples=25)
@given(m=SIZES, n=SIZES, k=st.one_of(SIZES, st.integers(100, 700)), dtype=st.sampled_from([np.float32, np.float64]),
       ta=st.booleans(), tb=st.booleans(), batch=st.sampled_from([((), ()), ((3,), (3,)), ((2, 1), (3,))]))
def test_matmul_matches_numpy(m, n, k, dtype, ta, tb, batch):
  a, ta_ = operand(batch[0] + (m, k), dtype, ta)
  b, tb_ = operand(batch[1] + (k, n), dtype, tb)
  with min_work(1):
    t = ta_ @ tb_
    concrete = np.prod(np.broadcast_shapes(batch[0], batch[1]) + (m, n, k)) > (1 << 16)
    if concrete and min(m, n) >= gemm.MIN_SIDE and k >= 2: assert blocked(t)
    check_product(np.asarray(t), a, b)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(gemm.MIN_SIDE, 130), n=st.integers(gemm.MIN_SIDE, 90), k=st.integers(2, 300),
       dtype=st.sampled_from([np.float32, np.float64]), ta=st.booleans(), tb=st.booleans())
def test_matmul_blocked_at_every_row_count(m, n, k, dtype, ta, tb):
  """Every example through the blocked path (sizes concrete), so each M meets its row tile (row_tile: MR lowered
  for some M, the last sliver partly filled for most) and A's and B's packing of every layout."""
  a, ta_ = operand((m, k), dtype, ta)
  b, tb_ = operand((k, n), dtype, tb)
  with min_work(1), pytest.MonkeyPatch.context() as mp:
    mp.setattr(keys, "SYMBOLIC_MAX", 0)
    t = ta_ @ tb_
    (g,) = [k.program.plan for k in scheduled([t.uop])[0].kernels if k.program.kind == "gemm"]
    assert g.tile == gemm.row_tile(m, gemm.tile_sizes(machine(), np.dtype(dtype).itemsize))
    check_product(np.asarray(t), a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_and_broadcast_operands(dtype):
  a = rng.standard_normal((90, 2 * 211)).astype(dtype)
  b = rng.standard_normal((150, 211)).astype(dtype)
  t = mt.asarray(a)[::-1, ::2] @ mt.asarray(b).T[:, 7:150:2]      # reversed, strided, transposed, sliced
  with min_work(1):
    assert blocked(t)
    check_product(np.asarray(t), a[::-1, ::2], b.T[:, 7:150:2])
  x = rng.standard_normal((4, 1, 33, 300)).astype(dtype)
  y = rng.standard_normal((5, 300, 40)).astype(dtype)
  with min_work(1):
    t = mt.asarray(x) @ mt.asarray(y)                              # batch (4, 1) broadcast against (5,)
    assert blocked(t)
    check_product(np.asarray(t), x, y)


def conv_reference(x, w, stride, pad, dil, groups):
  """Cross-correlation as a sum of shifted tensordots, in float64."""
  n, c, h, wd = x.shape
  o, cg, kh, kw = w.shape
  xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
  oh, ow = (h + 2 * pad - dil * (kh - 1) - 1) // stride + 1, (wd + 2 * pad - dil * (kw - 1) - 1) // stride + 1
  out = np.zeros((n, o, oh, ow))
  og = o // groups
  for g in range(groups):
    for i in range(kh):
      for j in range(kw):
        p = xp[:, g * cg:(g + 1) * cg, i * dil:i * dil + stride * (oh - 1) + 1:stride,
               j * dil:j * dil + stride * (ow - 1) + 1:stride]
        out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", p, w[g * og:(g + 1) * og, :, i, j])
  return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,stride,pad,dil,groups", [
  ((2, 8, 20, 20), (16, 8, 3, 3), 1, 1, 1, 1),
  ((2, 8, 21, 19), (16, 4, 3, 3), 2, 1, 1, 2),
  ((1, 6, 30, 31), (11, 6, 5, 3), 1, 2, 2, 1),
  ((3, 8, 37, 41), (9, 8, 1, 1), 1, 0, 1, 1),
])
def test_conv2d_matches_numpy(xs, ws, stride, pad, dil, groups, dtype):
  x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
  with min_work(1):
    t = nn.conv2d(mt.asarray(x), mt.asarray(w), stride=stride, padding=pad, dilation=dil, groups=groups)
    assert blocked(t)
    got = np.asarray(t)
  want = conv_reference(x, w, stride, pad, dil, groups)
  k = ws[1] * ws[2] * ws[3]
  absw = conv_reference(np.abs(x), np.abs(w), stride, pad, dil, groups)
  assert got.dtype == dtype and np.all(np.abs(got - want) <= 2 * k * np.finfo(dtype).eps * absw + 1e-300)


@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 9), w=st.integers(1, 75), k=st.sampled_from([1, 2, 3]), pad=st.integers(0, 2),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_conv2d_pixel_slivers_across_rows(h, w, k, pad, dtype):
  """A stride-1 convolution packs B (its pixels) through offset tables: a sliver of NR pixels that crosses output
  rows, or runs past the last pixel, is copied run by run. Widths below, at and across the sliver's width."""
  assume((h + 2 * pad - k + 1) * (w + 2 * pad - k + 1) >= gemm.MIN_SIDE and w + 2 * pad >= k)   # (else not blocked)
  x, wt = rng.standard_normal((2, 3, h, w)).astype(dtype), rng.standard_normal((8, 3, k, k)).astype(dtype)
  with min_work(1), pytest.MonkeyPatch.context() as mp:
    mp.setattr(keys, "SYMBOLIC_MAX", 0)          # (each example's sizes concrete, not the first shape's program)
    t = nn.conv2d(mt.asarray(x), mt.asarray(wt), padding=pad)
    assert blocked(t)
    (g,) = [k.program.plan for k in scheduled([t.uop])[0].kernels if k.program.kind == "gemm"]
    assert g.direct[1] is not None and g.direct[1].tables[1][-1][1] == 1      # (B's pixels: unit steps in a row)
    got = np.asarray(t)
  want, absw = conv_reference(x, wt, 1, pad, 1, 1), conv_reference(np.abs(x), np.abs(wt), 1, pad, 1, 1)
  assert np.all(np.abs(got - want) <= 2 * 3 * k * k * np.finfo(dtype).eps * absw + 1e-300)


def test_large_matmul_takes_blocked_path():
  a, b = (rng.standard_normal((300, 300)).astype(np.float32) for _ in range(2))
  t = mt.asarray(a) @ mt.asarray(b)
  (k,) = scheduled([t.uop])[0].kernels
  assert k.program.kind == "gemm" and k.program.plan.sizes == (1, 300, 300, 300)
  assert k.program.plan.tile == gemm.row_tile(300, gemm.tile_sizes(machine(), 4))
  src = gemm.render(k.program.plan, "k0")
  assert "vector_size" in src and "k0_micro(kc" in src and "omp for schedule(dynamic)" in src
  assert all(d is not None for d in k.program.plan.direct)          # plain loads: packed through offset tables
  check_product(np.asarray(t), a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_computed_and_cast_operands(dtype):
  """An operand that is computed (not one load) is packed by its rangeify pack program; a cast load directly."""
  a = rng.standard_normal((70, 230)).astype(dtype)
  b = rng.standard_normal((230, 50)).astype(np.float32)
  with min_work(1):
    t = (mt.asarray(a) * 2 - 1) @ mt.asarray(b).astype(dtype)
    (k,) = scheduled([t.uop])[0].kernels
    assert k.program.kind == "gemm" and k.program.plan.direct[0] is None and k.program.plan.direct[1] is not None
    check_product(np.asarray(t), a * 2 - 1, b.astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_epilogue_runs_after_a_blocked_gemm(dtype):
  """x @ w + b, relu of it, a scaled transposed product, a conv2d with bias: the contraction is materialized as a
  Gemm kernel and the epilogue reads it; below another reduction it stays fused in that reduction's kernel."""
  x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((130, 220), (220, 90), (90,)))
  tx, tw, tb = mt.asarray(x), mt.asarray(w), mt.asarray(b)
  x64, w64, b64, eps = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), np.finfo(dtype).eps
  p = np.abs(x64) @ np.abs(w64)                        # the rounding bound of each product's sum scales with it
  bias = 4 * 220 * eps * (p + np.abs(b64))
  cases = ((tx @ tw + tb, x64 @ w64 + b64, bias), (mt.maximum(tx @ tw + tb, 0), np.maximum(x64 @ w64 + b64, 0), bias),
           ((tx @ tw).T * 3, (x64 @ w64).T * 3, 4 * 220 * eps * 3 * p.T))
  # (all scheduled before any is realized: a realized x @ w + b would be a leaf of the next graph)
  assert all([k.program.kind == "gemm" for k in scheduled([t.uop])[0].kernels] == [True, False] for t, _, _ in cases)
  for t, want, bound in cases:
    got = np.asarray(t)
    assert got.dtype == dtype and np.all(np.abs(got - want) <= bound)
  (k,) = scheduled([(tx @ tw).sum(axis=1).uop])[0].kernels        # a sum of the products: one fused kernel
  assert k.program.kind != "gemm"
  xi, wi, bi = (rng.standard_normal(s).astype(dtype) for s in ((2, 16, 30, 30), (32, 16, 3, 3), (32,)))
  t = nn.conv2d(mt.asarray(xi), mt.asarray(wi), mt.asarray(bi), padding=1)
  assert any(k.program.kind == "gemm" for k in scheduled([t.uop])[0].kernels)
  want = conv_reference(xi, wi, 1, 1, 1, 1) + bi[:, None, None]
  absolute = conv_reference(np.abs(xi), np.abs(wi), 1, 1, 1, 1) + np.abs(bi)[:, None, None]
  bound = 2 * 145 * np.finfo(dtype).eps * absolute
  assert np.all(np.abs(np.asarray(t) - want) <= bound)


def test_small_or_integer_contractions_keep_the_loop_program():
  a = mt.asarray(rng.standard_normal((4, 5)))
  assert not blocked(a @ a.T)                                         # too little work
  i = mt.asarray(rng.integers(-9, 9, (300, 300)))
  assert not blocked(i @ i)                                           # integers: the loop program
  v = mt.asarray(rng.standard_normal((3000, 300)))
  assert not blocked(v @ v[0])                                        # a matrix-vector product (N = 1)
  assert not blocked(v[:3] @ v.T)                                     # 3 rows: packing B would cost more


@pytest.mark.parametrize("vb,regs,itemsize,want", [(32, 16, 4, (6, 16)), (32, 16, 8, (6, 8)), (64, 32, 4, (14, 32)),
                                                    (64, 32, 8, (14, 16)), (16, 16, 4, (6, 8)), (16, 32, 8, (14, 4))])
def test_tile_sizes_follow_the_machine(vb, regs, itemsize, want):
  m = Machine(vb, regs, True, 48 << 10, 2 << 20, 32 << 20, 2, True)
  mr, nr, kc, mc, nc = gemm.tile_sizes(m, itemsize)
  assert (mr, nr) == want
  # (a B sliver of at most L1, and over half of it; an A block of at most half of L2)
  assert m.l1 // 2 < kc * nr * itemsize <= m.l1 and mc * kc * itemsize <= m.l2 // 2 and mc % mr == 0 and nc % nr == 0


@given(st.integers(1, 5000), st.sampled_from([(14, 32, 128, 504, 4096), (6, 16, 256, 120, 4096), (1, 4, 16, 1, 4)]))
def test_row_tile_pads_m_to_fewer_rows(m, tile):
  """row_tile lowers MR by at most a quarter, only where that saves over 2 % of M in padded rows, and keeps MC a
  multiple of MR; AVX-512's 14 rows become 13 for a convolution's 64 channels."""
  mr, nr, kc, mc, nc = row_tile = gemm.row_tile(m, tile)
  padded = lambda r: -(-m // r) * r
  assert (nr, kc, nc) == (tile[1], tile[2], tile[4]) and 3 * tile[0] <= 4 * mr <= 4 * tile[0]
  assert mc % mr == 0 and mr <= mc <= max(tile[3], mr)
  if mr == tile[0]: assert row_tile == tile
  else:
    assert (padded(tile[0]) - padded(mr)) * 50 > m
    assert all(padded(mr) <= padded(r) for r in range(-(-3 * tile[0] // 4), tile[0] + 1))
  assert gemm.row_tile(64, (14, 32, 128, 504, 4096))[0] == 13 and gemm.row_tile(1024, (14, 32, 128, 504, 4096))[0] == 14


@pytest.mark.parametrize("vb,regs", [(64, 32), (16, 16)])
def test_other_vector_widths_compute_the_same(vb, regs, monkeypatch, cache):
  """The source written for AVX-512 or SSE-width vectors (compiled here whatever the CPU: GCC splits wider vector
  types) gives NumPy's values, edges included."""
  monkeypatch.setattr(gemm, "machine", lambda: Machine(vb, regs, True, 32 << 10, 512 << 10, 8 << 20, 2, True))
  for dtype in (np.float32, np.float64):
    a, b = rng.standard_normal((2, 45, 301)).astype(dtype), rng.standard_normal((301, 67)).astype(dtype)
    t = mt.asarray(a) @ mt.asarray(b)
    (k,) = scheduled([t.uop])[0].kernels
    assert k.program.kind == "gemm"
    plan = k.program.plan
    assert plan.tile == gemm.row_tile(plan.sizes[1], gemm.tile_sizes(gemm.machine(), np.dtype(dtype).itemsize))
    check_product(np.asarray(t), a, b)


def test_checked_mode_and_both_tiers_give_the_same_bits(monkeypatch, cache):
  a, b = rng.standard_normal((97, 263)).astype(np.float32), rng.standard_normal((263, 61)).astype(np.float32)
  results = []
  for check, tier in (("0", "1"), ("1", "1"), ("0", "0")):
    monkeypatch.setenv("MINITENSOR_CHECK", check)
    monkeypatch.setenv("MINITENSOR_TIER", tier)
    with min_work(1):
      t = mt.asarray(a) @ mt.asarray(b)
      assert blocked(t)
      results.append(np.asarray(t).tobytes())
  assert results[0] == results[1] == results[2]
  check_product(np.frombuffer(results[0], np.float32).reshape(97, 61), a, b)


@pytest.mark.parametrize("cores", [1, 2, 3, 4])
@pytest.mark.parametrize("sizes", [(1, 64, 25088, 576), (7, 64, 3136, 576), (3, 16, 2000, 300), (1, 8, 300, 2000),
                                   (1, 1024, 1024, 1024), (1, 256, 256, 256), (8, 64, 64, 64), (1, 4, 40, 9)])
def test_grid_shares_the_work_evenly(sizes, cores):
  """The tasks cover every row and column once; where A is small beside B, the columns are split into a multiple of
  the cores (TASKS_PER_CORE each when they allow), each task at least two NR-column slivers; where it is not
  (a square GEMM), no more than one task per core."""
  nb, m, n, k = sizes
  mr, nr = 6, 16
  mg, ng, mt_, nt = gemm._grid(sizes, mr, nr, 4096, cores)
  assert mg * mt_ >= m > (mg - 1) * mt_ and ng * nt >= n > (ng - 1) * nt and nt % nr == 0
  tasks = nb * mg * ng
  if n >= 4 * m * 2 and n >= 4 * nr * cores:          # A's packing per task at most a quarter of B's: split
    assert tasks % cores == 0 and tasks >= cores and nt >= 2 * nr
    if sizes == (1, 64, 25088, 576): assert tasks == gemm.TASKS_PER_CORE * cores      # (W6's convolution)
  elif nb * -(-n // 4096) >= cores: assert mg == 1 and ng == -(-n // 4096)
  else: assert tasks <= max(cores, nb)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_adjoints_are_blocked_gemms(dtype):
  """A matmul's gradients reduce a permuted product (g @ w.T, x.T @ g): contraction sees through the permute, and a
  product reduced across the rows (x.T @ g, a column reduction of 2^21 terms) is not split into row blocks but left
  whole to the GEMM."""
  x, w = rng.standard_normal((256, 64)).astype(dtype), rng.standard_normal((64, 128)).astype(dtype) * 0.1
  def loss(w, x): return mt.tanh(x @ w).sum()
  g = mt.grad(loss)(mt.asarray(w), mt.asarray(x))
  kinds = [k.program.kind for k in scheduled([g.uop])[0].kernels]
  assert kinds.count("gemm") == 2, kinds                   # x @ w, then x.T @ (1 - tanh^2)
  h = np.tanh(x.astype(np.float64) @ w.astype(np.float64))
  tol = 1e-4 if dtype == np.float32 else 1e-12
  np.testing.assert_allclose(np.asarray(g), x.T.astype(np.float64) @ (1 - h * h), rtol=tol, atol=tol)
  gt, wt = rng.standard_normal((256, 10)).astype(dtype), rng.standard_normal((128, 10)).astype(dtype)
  t = mt.asarray(gt) @ mt.asarray(wt).T                   # (K = 10: the adjoint of h @ w2)
  assert blocked(t)
  check_product(np.asarray(t), gt, wt.T)
  s = mt.asarray(x).T @ mt.asarray(gt[:, :8].copy())      # 64 x 8 x 256: below MIN_WORK, the loop program
  assert not blocked(s)
  check_product(np.asarray(s), np.ascontiguousarray(x.T), gt[:, :8])
