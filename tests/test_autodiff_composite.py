"""Gradients of composites (built from the primitives' rules) against central finite differences in float64."""
import numpy as np
import pytest
from test_autodiff import rand, weighted
import minitensor as mt
import minitensor.testing as mtt

nn = mt.nn
X = rand(11, (2, 5))

COMPOSITES = {
  "softmax": lambda x: nn.softmax(x, axis=1), "softmax_axis0": lambda x: nn.softmax(x, axis=0),
  "log_softmax": lambda x: nn.log_softmax(x), "logsumexp": lambda x: nn.logsumexp(x, axis=1),
  "logsumexp_all": lambda x: nn.logsumexp(x), "sigmoid": nn.sigmoid, "silu": nn.silu, "softplus": nn.softplus,
  "gelu": nn.gelu, "gelu_tanh": lambda x: nn.gelu(x, approximate="tanh"), "relu": nn.relu,
  "cross_entropy_int": lambda x: nn.cross_entropy(x, np.array([1, 4])),
  "cross_entropy_probs": lambda x: nn.cross_entropy(x, np.full((2, 5), 0.2), reduction="sum"),
  "matmul": lambda x: x @ x.T, "matmul_vec": lambda x: x @ np.linspace(0, 1, 5),
  "einsum_trace": lambda x: mt.einsum("ij,ij->i", x, x),
  "einsum_outer": lambda x: mt.einsum("i,j->ij", x[0], x[1]), "einsum_diag": lambda x: mt.einsum("ii->i", x[:, :2]),
  "tensordot": lambda x: mt.tensordot(x, x, axes=([1], [1])), "diff": lambda x: mt.diff(x, axis=1),
  "trace": lambda x: mt.trace(x[:, :2]), "tril": lambda x: mt.tril(x), "outer": lambda x: mt.outer(x[0], x[1]),
  "clip": lambda x: mt.clip(x, -0.5, 0.5), "var_ddof": lambda x: x.var(axis=1, ddof=1),
  "norm": lambda x: mt.sqrt((x * x).sum(axis=1)),
  "split": lambda x: mt.split(x, [1, 3], axis=1)[1], "tile": lambda x: mt.tile(x, (2, 1)),
  "hypot": lambda x: mt.hypot(x, 2 * x),
}


@pytest.mark.parametrize("name", list(COMPOSITES))
def test_composite(name):
  mtt.check_grads(lambda x: weighted(COMPOSITES[name](x)), X)


def test_layer_norm_with_weight_and_bias():
  mtt.check_grads(lambda x, w, b: weighted(nn.layer_norm(x, (2, 3), w, b)),
                  rand(1, (2, 2, 3)), rand(2, (2, 3)), rand(3, (2, 3)))


CONV = [dict(), dict(stride=2), dict(padding=1), dict(padding="same", dilation=2), dict(stride=(2, 1), padding=(1, 0)),
        dict(groups=2), dict(dilation=(1, 2), padding="valid")]


@pytest.mark.parametrize("kw", CONV, ids=[str(k) for k in CONV])
def test_conv2d(kw):
  g = kw.get("groups", 1)
  x, w, b = rand(1, (1, 2, 5, 4)), rand(2, (2, 2 // g, 3, 2)), rand(3, (2,))
  mtt.check_grads(lambda x, w, b: weighted(nn.conv2d(x, w, b, **kw)), x, w, b)


def test_conv1d():
  mtt.check_grads(lambda x, w: weighted(nn.conv1d(x, w, stride=2, padding=1)), rand(1, (1, 2, 6)), rand(2, (3, 2, 3)))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 1), stride=1)])
@pytest.mark.parametrize("pool", ["max_pool2d", "avg_pool2d"])
def test_pools(pool, kw):
  mtt.check_grads(lambda x: weighted(getattr(nn, pool)(x, **kw)), rand(4, (1, 1, 4, 5)))


def test_attention():
  q, k, v = rand(1, (2, 3, 2)), rand(2, (2, 4, 2)), rand(3, (2, 4, 3))
  mtt.check_grads(lambda q, k, v: weighted(nn.scaled_dot_product_attention(q, k, v)), q, k, v)
  mtt.check_grads(lambda q: weighted(nn.scaled_dot_product_attention(q, q, q, is_causal=True)), rand(4, (3, 2)))


def test_mlp_loss_against_a_numpy_backward():
  """A two-layer MLP's gradients against the hand-written NumPy backward (not finite differences)."""
  x, w1, b1, w2 = rand(1, (8, 4)), rand(2, (4, 6)), rand(3, (6,)), rand(4, (6, 3))
  y = np.array([0, 2, 1, 1, 0, 2, 2, 1])

  def loss(w1, b1, w2):
    return nn.cross_entropy(nn.relu(mt.asarray(x) @ w1 + b1) @ w2, y)
  gs = mt.grad(loss, argnums=(0, 1, 2))(*(mt.asarray(a) for a in (w1, b1, w2)))
  h = np.maximum(x @ w1 + b1, 0)
  z = h @ w2
  p = np.exp(z - z.max(1, keepdims=True))
  p /= p.sum(1, keepdims=True)
  dz = (p - np.eye(3)[y]) / len(y)
  dh = (dz @ w2.T) * (h > 0)
  for got, want in zip(gs, (x.T @ dh, dh.sum(0), h.T @ dz)):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-15)


def test_grad_of_grad_through_conv_pool_and_gather():
  def f(x, w): return (nn.max_pool2d(mt.tanh(nn.conv2d(x, w, padding=1)), 2) ** 2).sum()
  mtt.check_grads(lambda x, w: weighted(mt.grad(f, argnums=1)(x, w)), rand(1, (1, 1, 4, 4)), rand(2, (2, 1, 3, 3)))
  mtt.check_grads(lambda x: weighted(mt.grad(lambda y: (y[np.array([0, 0, 1])] ** 3).sum())(x)), rand(4, (2, 3)))
