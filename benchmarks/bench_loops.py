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


PROGRAMS = {"masked": masked, "history": history, "fractal": fractal, "stencil": stencil, "nbody": nbody}


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
