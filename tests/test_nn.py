"""minitensor.nn against NumPy/SciPy references."""
import math
import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor import nn


def conv_ref(x, w, stride=1, pad=0, dil=1, groups=1):
  """Direct NCHW cross-correlation by im2col: (N, C, H, W) x (O, C/groups, KH, KW)."""
  xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))).astype(np.float64)
  n, c, h, wd = xp.shape
  o, cg, kh, kw = w.shape
  oh, ow = (h - dil * (kh - 1) - 1) // stride + 1, (wd - dil * (kw - 1) - 1) // stride + 1
  out = np.zeros((n, o, oh, ow))
  for g in range(groups):
    cols = np.stack([xp[:, g * cg:(g + 1) * cg, i * dil:i * dil + stride * (oh - 1) + 1:stride,
                        j * dil:j * dil + stride * (ow - 1) + 1:stride]
                     for i in range(kh) for j in range(kw)], axis=2)                  # n cg k oh ow
    wg = w[g * (o // groups):(g + 1) * (o // groups)].reshape(o // groups, cg, kh * kw)
    out[:, g * (o // groups):(g + 1) * (o // groups)] = np.einsum("nckhw,ock->nohw", cols, wg)
  return out


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_conv2d_matches_im2col(data):
  groups = data.draw(st.sampled_from([1, 2]))
  c = groups * data.draw(st.integers(1, 2)); o = groups * data.draw(st.integers(1, 2))
  k = data.draw(st.integers(1, 3)); stride = data.draw(st.integers(1, 2)); dil = data.draw(st.integers(1, 2))
  pad = data.draw(st.integers(0, 1))
  size = data.draw(st.integers(dil * (k - 1) + 1, 7))
  rng = np.random.default_rng(data.draw(st.integers(0, 100)))
  x = rng.standard_normal((2, c, size, size + 1)).astype(np.float32)
  w = rng.standard_normal((o, c // groups, k, k)).astype(np.float32)
  b = rng.standard_normal(o).astype(np.float32)
  got = nn.conv2d(mt.asarray(x), mt.asarray(w), mt.asarray(b), stride=stride, padding=pad, dilation=dil, groups=groups)
  np.testing.assert_allclose(np.asarray(got), conv_ref(x, w, stride, pad, dil, groups) + b[None, :, None, None],
                             rtol=1e-4, atol=1e-4)


def test_conv2d_same_valid_and_conv1d():
  rng = np.random.default_rng(0)
  x, w = rng.standard_normal((1, 3, 8, 8)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
  np.testing.assert_allclose(np.asarray(nn.conv2d(mt.asarray(x), mt.asarray(w), padding="same")), conv_ref(x, w, pad=1),
                             rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(np.asarray(nn.conv2d(mt.asarray(x), mt.asarray(w), padding="valid")), conv_ref(x, w),
                             rtol=1e-4, atol=1e-4)
  x1, w1 = rng.standard_normal((2, 3, 10)).astype(np.float32), rng.standard_normal((5, 3, 3)).astype(np.float32)
  ref = conv_ref(x1[:, :, None, :], w1[:, :, None, :])[:, :, 0, :]
  np.testing.assert_allclose(np.asarray(nn.conv1d(mt.asarray(x1), mt.asarray(w1))), ref, rtol=1e-4, atol=1e-4)
  with pytest.raises(ValueError, match="conv2d"): nn.conv2d(mt.asarray(x), mt.asarray(w), groups=2)


@pytest.mark.parametrize("k, stride, pad", [(2, None, 0), (3, 2, 1), (3, 1, 0)])
def test_pools(k, stride, pad):
  x = np.random.default_rng(1).standard_normal((2, 3, 7, 9)).astype(np.float32)
  s = stride or k
  xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
  win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::s, ::s]
  np.testing.assert_allclose(np.asarray(nn.max_pool2d(mt.asarray(x), k, stride, pad)), win.max(axis=(-1, -2)))
  xz = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
  winz = np.lib.stride_tricks.sliding_window_view(xz, (k, k), axis=(2, 3))[:, :, ::s, ::s]
  np.testing.assert_allclose(np.asarray(nn.avg_pool2d(mt.asarray(x), k, stride, pad)), winz.mean(axis=(-1, -2)),
                             rtol=1e-5, atol=1e-6)


def test_softmax_logsumexp_edge_rows():
  x = np.array([[1.0, 2.0, 3.0], [-np.inf, -np.inf, -np.inf], [88.0, 88.5, -np.inf], [3e38, 3e38, 1.0]], np.float32)
  with np.errstate(all="ignore"):
    np.testing.assert_allclose(np.asarray(nn.logsumexp(mt.asarray(x), axis=1)),
                               scipy.special.logsumexp(x.astype(np.float64), axis=1).astype(np.float32), rtol=1e-6)
    want = scipy.special.softmax(x[[0, 2, 3]].astype(np.float64), axis=1)
  np.testing.assert_allclose(np.asarray(nn.softmax(mt.asarray(x[[0, 2, 3]]), axis=1)), want, rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(np.asarray(nn.log_softmax(mt.asarray(x[:1]))), np.log(want[:1]), rtol=1e-6)
  # as scipy: a row of -inf has no distribution
  assert np.isnan(np.asarray(nn.softmax(mt.asarray(x[1:2])))).all()


def test_activations():
  x = np.linspace(-30, 30, 101).astype(np.float64)
  t = mt.asarray(x)
  for got, want in [(nn.relu(t), np.maximum(x, 0)), (nn.sigmoid(t), scipy.special.expit(x)),
                    (nn.silu(t), x * scipy.special.expit(x)),
                    (nn.softplus(t), np.logaddexp(0, x)),
                    (nn.gelu(t), 0.5 * x * (1 + scipy.special.erf(x / math.sqrt(2)))),
                    (nn.gelu(t, approximate="tanh"),
                     0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))))]:
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_layer_norm_with_and_without_affine():
  rng = np.random.default_rng(2)
  x, w, b = rng.standard_normal((4, 6, 8)), rng.standard_normal((6, 8)), rng.standard_normal((6, 8))
  m, v = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
  np.testing.assert_allclose(np.asarray(nn.layer_norm(mt.asarray(x), (6, 8), mt.asarray(w), mt.asarray(b), eps=1e-5)),
                             (x - m) / np.sqrt(v + 1e-5) * w + b, rtol=1e-10, atol=1e-10)
  m1, v1 = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
  np.testing.assert_allclose(np.asarray(nn.layer_norm(mt.asarray(x), 8)), (x - m1) / np.sqrt(v1 + 1e-5), rtol=1e-10)
  with pytest.raises(ValueError, match="layer_norm"): nn.layer_norm(mt.asarray(x), (7,))


@pytest.mark.parametrize("causal", [False, True])
def test_attention(causal):
  rng = np.random.default_rng(3)
  q, k, v = (rng.standard_normal((2, 5, 4)) for _ in range(3))
  s = q @ k.transpose(0, 2, 1) / 2.0
  if causal: s = np.where(np.tril(np.ones((5, 5), bool)), s, -np.inf)
  want = scipy.special.softmax(s, axis=-1) @ v
  got = nn.scaled_dot_product_attention(mt.asarray(q), mt.asarray(k), mt.asarray(v), is_causal=causal)
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


def test_one_hot_and_cross_entropy():
  labels = np.array([0, 2, 1, 2])
  logits = np.random.default_rng(4).standard_normal((4, 3))
  np.testing.assert_array_equal(np.asarray(nn.one_hot(mt.asarray(labels), 3)), np.eye(3, dtype=np.float32)[labels])
  lp = logits - scipy.special.logsumexp(logits, axis=1, keepdims=True)
  np.testing.assert_allclose(float(nn.cross_entropy(mt.asarray(logits), mt.asarray(labels))),
                             -lp[np.arange(4), labels].mean(), rtol=1e-12)
  with pytest.raises(TypeError): nn.one_hot(mt.asarray(np.array([0.5])), 2)
