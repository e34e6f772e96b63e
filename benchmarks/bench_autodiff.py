"""The CNN training step of examples/cnn.py (conv 3x3 pad 1 -> relu -> 2x2 max-pool -> dense -> softmax
cross-entropy, float32, plain SGD) with mt.value_and_grad, next to the same model differentiated by hand in NumPy
(im2col through sliding_window_view + BLAS) and, when installed, jax.jit(jax.value_and_grad) in the same run.

    python benchmarks/bench_autodiff.py [batch] [size] [channels]      # default 32 16 8

Prints the median step time of each (after a warm-up that compiles; minitensor at tier 1, -O3, as a hot training
loop runs after its first seconds), the ratio to NumPy, the loss of each after
the same steps (they must agree), and the kernelizer's work accounting of one minitensor step: the loop
iterations of the forward alone (realizing the loss) and of the whole step (loss and gradients), from
minitensor.explain, and the compiler calls of the timed steps.
"""
from __future__ import annotations
import os
import statistics
import sys
import time

os.environ.setdefault("MINITENSOR_TIER", "1")
import numpy as np
import minitensor as mt
from minitensor.backend.runtime import stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import cnn  # noqa: E402

LR, STEPS = 0.01, 20


def median_step(step, state, runs: int = STEPS) -> tuple[float, object]:
  ts = []
  for _ in range(runs):
    t = time.perf_counter()
    state = step(state)
    ts.append(time.perf_counter() - t)
  return statistics.median(ts), state


# ---------------------------------------------------------------------- the same model, backward by hand in NumPy
def numpy_step(state):
  (w, b, v, c), x, y, _ = state
  n, o = x.shape[0], w.shape[0]
  cols = np.lib.stride_tricks.sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))
  hw = cols.shape[2:4]
  cols = cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * hw[0] * hw[1], -1)                # (n*H*W, C*9)
  z = (cols @ w.reshape(o, -1).T + b).reshape(n, hw[0], hw[1], o).transpose(0, 3, 1, 2)  # (n, o, H, W)
  r = np.maximum(z, 0)
  win = r.reshape(n, o, hw[0] // 2, 2, hw[1] // 2, 2)
  h = win.max(axis=(3, 5))
  flat = h.reshape(n, -1)
  logits = flat @ v + c
  e = np.exp(logits - logits.max(axis=1, keepdims=True))
  p = e / e.sum(axis=1, keepdims=True)
  loss = -np.log(p[np.arange(n), y]).mean()
  dl = p
  dl[np.arange(n), y] -= 1
  dl /= n
  dv, dc, dh = flat.T @ dl, dl.sum(0), (dl @ v.T).reshape(h.shape)
  hit = win == h[:, :, :, None, :, None]
  dr = (hit * (dh / hit.sum(axis=(3, 5)))[:, :, :, None, :, None]).reshape(r.shape)
  dz = (dr * (z > 0)).transpose(0, 2, 3, 1).reshape(-1, o)
  dw, db = (dz.T @ cols).reshape(w.shape), dz.sum(0)
  return [w - LR * dw, b - LR * db, v - LR * dv, c - LR * dc], x, y, loss


def mt_step(state):
  params, x, y, step, _ = state
  loss, params = cnn.sgd_step(step, params, x, y, LR)
  return params, x, y, step, loss


def jax_case(params, x, y):
  """A step function and its state for jax.jit, or None without jax."""
  try:
    import jax
    import jax.numpy as jnp
  except ImportError: return None

  def loss_fn(p, x, y):
    w, b, v, c = p
    z = jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1))) + b[None, :, None, None]
    h = jax.lax.reduce_window(jnp.maximum(z, 0), -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    logits = h.reshape(x.shape[0], -1) @ v + c
    return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(x.shape[0]), y])

  @jax.jit
  def update(p, x, y):
    loss, g = jax.value_and_grad(loss_fn)(p, x, y)
    return [a - LR * d for a, d in zip(p, g)], loss

  def step(state):
    p, x, y, _ = state
    p, loss = update(p, x, y)
    loss.block_until_ready()
    return p, x, y, loss
  return step, ([jnp.asarray(a) for a in params], jnp.asarray(x), jnp.asarray(y), None)


def main() -> None:
  batch, size, channels = (int(a) for a in (sys.argv[1:] + ["32", "16", "8"][len(sys.argv[1:]):]))
  x, y = cnn.make_data(batch, size, 0)
  params = cnn.init_params(size, channels, 0)
  xs, ys, ps = x.numpy(), y.numpy(), [p.numpy() for p in params]
  step = mt.value_and_grad(cnn.loss_fn)

  loss, grads = step(params, x, y)
  fwd, whole = mt.explain(loss).total_iterations, mt.explain(loss, *grads).total_iterations
  print(f"CNN step, batch {batch}, {size}x{size}, {channels} channels, float32, median of {STEPS} steps")
  print(f"work (loop iterations): forward {fwd:,}, forward + backward {whole:,}: backward {whole - fwd:,} = "
        f"{(whole - fwd) / fwd:.2f}x the forward ({len(mt.explain(loss, *grads).kernels)} kernels)")

  cases = {"NumPy (hand-written backward)": (numpy_step, (ps, xs, ys, None)),
           "minitensor (mt.value_and_grad)": (mt_step, (params, x, y, step, None))}
  if (j := jax_case(ps, xs, ys)) is not None: cases["jax.jit(value_and_grad)"] = j
  results = {}
  for name, (f, state) in cases.items():
    state = f(f(state))                       # warm-up: compiles
    c = stats.compiles
    t, state = median_step(f, state)
    results[name] = (t, float(state[-1]), stats.compiles - c)
  base = results["NumPy (hand-written backward)"][0]
  for name, (t, loss, compiles) in results.items():
    extra = f", {compiles} compiles" if name.startswith("minitensor") else ""
    print(f"  {name:34s} {t * 1e3:8.2f} ms  {base / t:5.2f}x NumPy's speed  "
          f"loss after {STEPS + 2} steps {loss:.6f}{extra}")


if __name__ == "__main__":
  main()
