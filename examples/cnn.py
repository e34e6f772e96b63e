"""Train a small CNN (conv2d, relu, max-pool, dense, softmax cross-entropy) with plain SGD, written only with
minitensor.

The data are synthetic 1-channel images of three classes (horizontal stripes, vertical stripes, a diagonal),
each a template times a random contrast plus noise, generated here with mt.random. Gradients come from
mt.value_and_grad; each SGD step is realized with mt.realize(loss, *params), so the forward and backward graphs
run as one schedule (compiled once, then cached: every batch has the same shapes).

    python examples/cnn.py            # 1024 images of 16x16, 8 epochs
    python examples/cnn.py --tiny     # 64 images of 8x8, 4 epochs (what the tests run)
"""
from __future__ import annotations
import argparse
import minitensor as mt

CLASSES = 3


def make_data(n: int, size: int, seed: int) -> tuple[mt.Tensor, mt.Tensor]:
  """n images (n, 1, size, size) float32 and their labels (n,)."""
  rng = mt.random.default_rng(seed)
  rows = mt.arange(size).reshape(size, 1) + mt.zeros((1, size))
  cols = mt.zeros((size, 1)) + mt.arange(size).reshape(1, size)
  templates = mt.stack([(rows % 4 < 2), (cols % 4 < 2), mt.abs(rows - cols) < 2]).astype("float32") * 2 - 1
  y = rng.integers(0, CLASSES, size=n).realize()
  contrast = rng.uniform(0.1, 0.6, size=(n, 1, 1)).astype("float32")
  x = templates[y] * contrast * 0.5 + rng.standard_normal((n, size, size)).astype("float32")
  return x.reshape(n, 1, size, size).realize(), y


def init_params(size: int, channels: int, seed: int) -> list[mt.Tensor]:
  rng = mt.random.default_rng(seed + 1)
  flat = channels * (size // 2) ** 2
  w = rng.standard_normal((channels, 1, 3, 3)) * (2 / 9) ** 0.5
  v = rng.standard_normal((flat, CLASSES)) * 0.1 * (1 / flat) ** 0.5
  return [w.astype("float32").realize(), mt.zeros(channels, "float32"), v.astype("float32").realize(),
          mt.zeros(CLASSES, "float32")]


def forward(params: list[mt.Tensor], x: mt.Tensor) -> mt.Tensor:
  """The logits (n, CLASSES): conv 3x3 (padding 1) -> relu -> 2x2 max-pool -> dense."""
  w, b, v, c = params
  h = mt.nn.max_pool2d(mt.nn.relu(mt.nn.conv2d(x, w, b, padding=1)), 2)
  return h.reshape(x.shape[0], -1) @ v + c


def loss_fn(params: list[mt.Tensor], x: mt.Tensor, y: mt.Tensor) -> mt.Tensor:
  return mt.nn.cross_entropy(forward(params, x), y)


def sgd_step(step, params: list[mt.Tensor], x: mt.Tensor, y: mt.Tensor, lr: float) -> tuple[float, list[mt.Tensor]]:
  """One SGD step: the loss (computed in the same schedule as the new parameters) and the new parameters."""
  loss, grads = step(params, x, y)
  params = [p - lr * g for p, g in zip(params, grads)]
  mt.realize(loss, *params)
  return float(loss), params


def train(n: int, size: int, epochs: int, batch: int, lr: float, channels: int = 8, seed: int = 0) -> list[float]:
  """SGD over minibatches; returns (and prints) the mean loss of each epoch and the final accuracy."""
  x, y = make_data(n, size, seed)
  params = init_params(size, channels, seed)
  batches = [(x[i:i + batch].copy().realize(), y[i:i + batch].copy().realize()) for i in range(0, n - batch + 1, batch)]
  step = mt.value_and_grad(loss_fn)
  losses = []
  for epoch in range(epochs):
    total = 0.0
    for xb, yb in batches:
      loss, params = sgd_step(step, params, xb, yb, lr)
      total += loss
    losses.append(total / len(batches))
    print(f"epoch {epoch + 1}: loss {losses[-1]:.4f}", flush=True)
  acc = float((forward(params, x).argmax(axis=1) == y).mean())
  print(f"training accuracy {acc:.3f}")
  return losses


def main(argv: list[str] | None = None) -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--tiny", action="store_true", help="a tiny run (64 images of 8x8, 4 epochs), for tests")
  ap.add_argument("--epochs", type=int, default=None)
  ap.add_argument("--seed", type=int, default=0)
  a = ap.parse_args(argv)
  n, size, epochs, batch = (64, 8, 4, 16) if a.tiny else (1024, 16, 8, 32)
  train(n, size, a.epochs or epochs, batch, lr=0.01, seed=a.seed)


if __name__ == "__main__":
  main()
