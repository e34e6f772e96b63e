"""Train a small MLP classifier with plain SGD, written only with minitensor.

The data are synthetic: points from a normal distribution, labelled by a fixed random "teacher" network, so a
student MLP of the same width can fit them. Gradients come from mt.value_and_grad; the whole SGD step (forward,
backward, update) is one mt.jit function: traced once per batch shape, then each call runs its compiled graph.

    python examples/mlp.py            # 2000 points, 20 epochs
    python examples/mlp.py --tiny     # 64 points, 5 epochs (what the tests run)
"""
from __future__ import annotations
import argparse
import minitensor as mt


def make_data(n: int, d: int, classes: int, seed: int) -> tuple[mt.Tensor, mt.Tensor]:
  """n points in d dimensions and their labels from a random two-layer teacher network."""
  rng = mt.random.default_rng(seed)
  x = rng.standard_normal((n, d))
  t1, t2 = rng.standard_normal((d, 16)), rng.standard_normal((16, classes))
  return x.realize(), (mt.tanh(x @ t1) @ t2).argmax(axis=1).realize()


def init_params(d: int, hidden: int, classes: int, seed: int) -> list[mt.Tensor]:
  rng = mt.random.default_rng(seed + 1)
  return [rng.standard_normal((d, hidden)) * (2 / d) ** 0.5, mt.zeros(hidden),
          rng.standard_normal((hidden, classes)) * (1 / hidden) ** 0.5, mt.zeros(classes)]


def loss_fn(params: list[mt.Tensor], x: mt.Tensor, y: mt.Tensor) -> mt.Tensor:
  w1, b1, w2, b2 = params
  return mt.nn.cross_entropy(mt.nn.relu(x @ w1 + b1) @ w2 + b2, y)


def sgd_step(params: list, x, y, lr: float) -> tuple:
  """One step of SGD: the loss before it and the new parameters (lr is a Python number: static under jit)."""
  loss, grads = mt.value_and_grad(loss_fn)(params, x, y)
  return loss, [p - lr * g for p, g in zip(params, grads)]


def train(n: int, epochs: int, batch: int, lr: float, seed: int = 0, d: int = 8, hidden: int = 32,
          classes: int = 3) -> list[float]:
  """SGD over minibatches; returns (and prints) the mean loss of each epoch."""
  x, y = make_data(n, d, classes, seed)
  params = init_params(d, hidden, classes, seed)
  step = mt.jit(sgd_step)
  batches = [(x[i:i + batch], y[i:i + batch]) for i in range(0, n, batch)]
  losses = []
  for epoch in range(epochs):
    total = 0.0
    for xb, yb in batches:
      loss, params = step(params, xb, yb, lr)
      total += float(loss) * len(xb)
    losses.append(total / n)
    print(f"epoch {epoch + 1}: loss {losses[-1]:.4f}", flush=True)
  return losses


def main(argv: list[str] | None = None) -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--tiny", action="store_true", help="a tiny run (64 points, 5 epochs), for tests")
  ap.add_argument("--epochs", type=int, default=None)
  ap.add_argument("--seed", type=int, default=0)
  a = ap.parse_args(argv)
  n, epochs, batch = (64, 5, 32) if a.tiny else (2000, 20, 100)
  train(n, a.epochs or epochs, batch, lr=0.2, seed=a.seed)


if __name__ == "__main__":
  main()
