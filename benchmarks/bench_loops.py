"""Loops of ordinary NumPy code (issue 30's programs), minitensor and NumPy each in its own process.

    python benchmarks/bench_loops.py [--only NAME]

Each program is written once against a namespace `xp` (numpy or minitensor) and run twice in one process: the
first run with an empty kernel cache (every compile it needs), then the steady run; after it the process reports
the compiler calls and new programs of the steady run. Programs:

    masked     Z[m] = Z[m] * 2 + 1 over 200,000 elements, a new random mask (a new count) every step, 30 steps
    history    P[:, :, i] = p * i into a (100, 3, 1001) history, 200 steps
    fractal    escape time of z -> z**2 + c on a 400 x 333 complex grid with boolean masks, 40 steps
    stencil    Gray-Scott reaction-diffusion on 258 x 258 with in-place interior updates, 200 steps
    nbody      100 bodies, pairwise forces with a masked power r[r > 0] ** -1.5 and three matmuls, 100 steps
    nbody_jit  the same step written for mt.jit (where instead of the masked write), jitted (NumPy: the plain step)
    pairwise   issue 30's pairwise-force function (column slices, x.T - x, r[r > 0] = r[r > 0] ** -1.5, three
               (100, 100) @ (100, 1) matmuls, hstack), 300 calls on new positions
    pair_jit   that function with where for the mask, under mt.jit
    train      a training step: a 2-layer tanh MLP (64 -> 128 -> 10), batch 256, squared loss, SGD, 100 steps;
               minitensor: the step (mt.value_and_grad and the update) under mt.jit, NumPy: gradients by hand

Prints per program: NumPy's run, minitensor's first run (cold cache) and steady run, the steady run's compiles and
new programs, and NumPy time / minitensor steady time. Values are checked against NumPy's in the child process.
"""
from __future__ import annotations
import json
import os
import subprocess
import sys
import tempfile
import time


def masked(xp, np):
  rng = np.random.default_rng(0)
  z = xp.asarray(rng.standard_normal(200_000))
  for _ in range(30):
    m = xp.asarray(rng.random(200_000) < 0.5)
    z[m] = z[m] * 2 + 1
  return z


def history(xp, np):
  p = xp.asarray(np.random.default_rng(1).standard_normal((100, 3)))
  P = xp.zeros((100, 3, 1001))
  for i in range(200): P[:, :, i] = p * i
  return P


def fractal(xp, np):
  y, x = np.mgrid[-1.5:1.5:333j, -2:1:400j]
  c = xp.asarray(x + 1j * y)
  z = xp.zeros(c.shape, dtype=xp.complex128)
  n = xp.zeros(c.shape, dtype=xp.int64)
  for i in range(40):
    m = xp.abs(z) < 2
    z[m] = z[m] ** 2 + c[m]
    n[m] = i
  return n


def stencil(xp, np):
  size, du, dv, f, k = 258, 0.16, 0.08, 0.035, 0.065
  u, v = np.ones((size, size)), np.zeros((size, size))
  u[size // 2 - 10:size // 2 + 10, size // 2 - 10:size // 2 + 10] = 0.5
  v[size // 2 - 10:size // 2 + 10, size // 2 - 10:size // 2 + 10] = 0.25
  U, V = xp.asarray(u), xp.asarray(v)
  for _ in range(200):
    uc, vc = U[1:-1, 1:-1], V[1:-1, 1:-1]
    lu = U[:-2, 1:-1] + U[2:, 1:-1] + U[1:-1, :-2] + U[1:-1, 2:] - 4 * uc
    lv = V[:-2, 1:-1] + V[2:, 1:-1] + V[1:-1, :-2] + V[1:-1, 2:] - 4 * vc
    uvv = uc * vc * vc
    U[1:-1, 1:-1] = uc + du * lu - uvv + f * (1 - uc)
    V[1:-1, 1:-1] = vc + dv * lv + uvv - (f + k) * vc
  return U


def nbody(xp, np):
  rng = np.random.default_rng(2)
  pos, vel, mass = (xp.asarray(rng.standard_normal((100, 3))), xp.asarray(rng.standard_normal((100, 3)) * 0.1),
                    xp.asarray(np.abs(rng.standard_normal((100, 1))) + 0.5))
  for _ in range(100):
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx, dy, dz = x.T - x, y.T - y, z.T - z
    r = dx ** 2 + dy ** 2 + dz ** 2 + 0.01
    r[r > 0] = r[r > 0] ** -1.5
    acc = xp.hstack(((dx * r) @ mass, (dy * r) @ mass, (dz * r) @ mass))
    vel = vel + acc * 0.01
    pos = pos + vel * 0.01
  return pos


def _jit(xp, f):
  """f under mt.jit for minitensor; f itself for NumPy."""
  return xp.jit(f) if hasattr(xp, "jit") else f


def _forces(xp, pos, mass, masked: bool):
  x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
  dx, dy, dz = x.T - x, y.T - y, z.T - z
  r = dx ** 2 + dy ** 2 + dz ** 2 + 0.01
  if masked: r[r > 0] = r[r > 0] ** -1.5
  else: r = xp.where(r > 0, r, 1.0) ** -1.5
  return xp.hstack(((dx * r) @ mass, (dy * r) @ mass, (dz * r) @ mass))


def nbody_jit(xp, np):
  rng = np.random.default_rng(2)
  pos, vel, mass = (xp.asarray(rng.standard_normal((100, 3))), xp.asarray(rng.standard_normal((100, 3)) * 0.1),
                    xp.asarray(np.abs(rng.standard_normal((100, 1))) + 0.5))
  def step(pos, vel):
    vel = vel + _forces(xp, pos, mass, False) * 0.01
    return pos + vel * 0.01, vel
  step = _jit(xp, step)
  for _ in range(100): pos, vel = step(pos, vel)
  return pos


def _pairwise(xp, np, f):
  rng = np.random.default_rng(3)
  mass = np.abs(rng.standard_normal((100, 1))) + 0.5
  out = 0.0
  for _ in range(300): out = out + np.asarray(f(rng.standard_normal((100, 3)), mass))
  return out


def pairwise(xp, np):
  return _pairwise(xp, np, lambda pos, mass: _forces(xp, xp.asarray(pos), xp.asarray(mass), True))


def pair_jit(xp, np):
  return _pairwise(xp, np, _jit(xp, lambda pos, mass: _forces(xp, pos, mass, False)))


def train(xp, np):
  rng = np.random.default_rng(4)
  X, T = rng.standard_normal((256, 64)), rng.standard_normal((256, 10))
  p = {"W1": rng.standard_normal((64, 128)) * 0.1, "b1": np.zeros(128), "W2": rng.standard_normal((128, 10)) * 0.1,
       "b2": np.zeros(10)}
  if xp is np:
    def grads(p, X, T):
      h = np.tanh(X @ p["W1"] + p["b1"])
      e = h @ p["W2"] + p["b2"] - T
      g = 2 * e / e.size
      gh = (g @ p["W2"].T) * (1 - h * h)
      return (e * e).mean(), {"W1": X.T @ gh, "b1": gh.sum(0), "W2": h.T @ g, "b2": g.sum(0)}
  else:
    def loss(p, X, T):
      h = xp.tanh(X @ p["W1"] + p["b1"])
      return ((h @ p["W2"] + p["b2"] - T) ** 2).mean()
    grads = xp.value_and_grad(loss)
  def step(p, X, T):
    v, g = grads(p, X, T)
    return v, {k: p[k] - 0.1 * g[k] for k in p}
  step = _jit(xp, step)
  for _ in range(100): _, p = step(p, X, T)
  return p["W1"]


PROGRAMS = {"masked": masked, "history": history, "fractal": fractal, "stencil": stencil, "nbody": nbody,
            "nbody_jit": nbody_jit, "pairwise": pairwise, "pair_jit": pair_jit, "train": train}


def child(lib: str, name: str) -> None:
  import numpy as np
  if lib == "numpy": xp = np
  else:
    import minitensor as xp
    from minitensor.backend.realize import settle
    from minitensor.backend.runtime import stats
  f = PROGRAMS[name]
  t = time.perf_counter()
  out = np.asarray(f(xp, np))
  first = time.perf_counter() - t
  res = {"first": first}
  if lib == "minitensor":
    settle()
    c, g = stats.compiles, stats.graph_misses
  t = time.perf_counter()
  out2 = np.asarray(f(xp, np))
  res["steady"] = time.perf_counter() - t
  if lib == "minitensor":
    res["compiles"], res["programs"] = stats.compiles - c, stats.graph_misses - g
    want = np.asarray(f(np, np))
    res["max_rel_err"] = float(np.max(np.abs(out2 - want) / (np.abs(want) + 1e-12)))
  np.testing.assert_allclose(out, out2, rtol=1e-9, atol=1e-12)
  print(json.dumps(res))


def run(lib: str, name: str) -> dict:
  env = dict(os.environ, MINITENSOR_CACHE_DIR=tempfile.mkdtemp(prefix="mt-loops-"))
  out = subprocess.run([sys.executable, __file__, "--child", lib, name], env=env, capture_output=True, text=True,
                       check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
  if "--child" in sys.argv:
    i = sys.argv.index("--child")
    return child(sys.argv[i + 1], sys.argv[i + 2])
  names = [sys.argv[sys.argv.index("--only") + 1]] if "--only" in sys.argv else list(PROGRAMS)
  print(f"{'program':9s} {'NumPy':>9s} {'mt first':>9s} {'mt steady':>10s} {'compiles':>9s} {'programs':>9s} "
        f"{'ratio':>6s} {'max rel err':>12s}")
  for name in names:
    n, m = run("numpy", name), run("minitensor", name)
    print(f"{name:9s} {n['steady']:8.3f}s {m['first']:8.2f}s {m['steady']:9.3f}s {m['compiles']:9d} "
          f"{m['programs']:9d} {n['steady'] / m['steady']:6.2f} {m['max_rel_err']:12.1e}")


if __name__ == "__main__":
  main()
