"""The workloads W1-W9 of DESIGN.md, minitensor next to NumPy in one process.

    python benchmarks/run.py [--quick] [--only W2,W7] [--chart out.png]     (or: python -m minitensor bench)

Each workload is timed as the median of at least 5 runs after a warm-up (the warm-up includes the first
compile, reported apart as "first"). Times are of a realized result: minitensor builds the graph, finds the
compiled schedule in its cache and runs it. The ratio is NumPy time / minitensor time (above 1: faster).
numexpr and numba columns appear when those packages are installed.
"""
from __future__ import annotations
import argparse, statistics, sys, time
import numpy as np
import minitensor as mt
from minitensor import nn


def timeit(fn, reps: int) -> tuple[float, float]:
  """(first call seconds, median of `reps` later calls)."""
  t = time.perf_counter(); fn(); first = time.perf_counter() - t
  ts = []
  for _ in range(reps):
    t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
  return first, statistics.median(ts)


def _softmax_np(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def _layernorm_np(x):
  m = x.mean(-1, keepdims=True)
  return (x - m) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


def _conv2d_np(x, w):
  n, c, h, wd = x.shape
  o, _, kh, kw = w.shape
  xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  cols = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))          # n c h w kh kw
  return np.einsum("nchwij,ocij->nohw", cols, w, optimize=True)


def workloads(quick: bool):
  rng = np.random.default_rng(0)
  f32 = lambda *s: rng.standard_normal(s, dtype=np.float32)
  out = []
  for n in ((256, 512) if quick else (256, 512, 1024)):
    a, b = f32(n, n), f32(n, n)
    ta, tb = mt.asarray(a), mt.asarray(b)
    out.append((f"W1 GEMM N={n}", lambda a=a, b=b: a @ b, lambda ta=ta, tb=tb: (ta @ tb).numpy(), 2 * n ** 3))
  x = f32(4096, 1024); tx = mt.asarray(x)
  out.append(("W2 softmax (4096,1024)", lambda: _softmax_np(x), lambda: nn.softmax(tx, axis=-1).numpy(), None))
  a, b = f32(1 << 22), f32(1 << 22); ta, tb = mt.asarray(a), mt.asarray(b)
  out.append(("W3 a*2+b*3-a*b 4M", lambda: a * 2 + b * 3 - a * b, lambda: (ta * 2 + tb * 3 - ta * tb).numpy(), None))
  out.append(("W4 sum axis 0", lambda: x.sum(0), lambda: tx.sum(0).numpy(), None))
  out.append(("W4 sum axis 1", lambda: x.sum(1), lambda: tx.sum(1).numpy(), None))
  out.append(("W5 transpose copy", lambda: np.ascontiguousarray(x.T), lambda: tx.T.numpy(), None))
  if not quick:
    xi, w = f32(8, 64, 56, 56), f32(64, 64, 3, 3)
    txi, tw = mt.asarray(xi), mt.asarray(w)
    out.append(("W6 conv2d (8,64,56,56)", lambda: _conv2d_np(xi, w), lambda: nn.conv2d(txi, tw, padding=1).numpy(), 2 * 8 * 64 * 56 * 56 * 64 * 9))
  out.append(("W7 layernorm (4096,1024)", lambda: _layernorm_np(x), lambda: nn.layer_norm(tx, (1024,), eps=1e-5).numpy(), None))
  for L in ((512,) if quick else (512, 2048)):
    q, k, v = f32(L, 64), f32(L, 64), f32(L, 64)
    tq, tk, tv = mt.asarray(q), mt.asarray(k), mt.asarray(v)
    out.append((f"W8 attention L={L}", lambda q=q, k=k, v=v: _softmax_np(q @ k.T / 8) @ v,
                lambda tq=tq, tk=tk, tv=tv: (nn.softmax(tq @ tk.T / 8, axis=-1) @ tv).numpy(), None))
  a16, b16 = f32(16), f32(16); t16, u16 = mt.asarray(a16), mt.asarray(b16)
  out.append(("W9 add of 16 (dispatch)", lambda: a16 + b16, lambda: (t16 + u16).numpy(), None))
  return out


def main(argv=None) -> int:
  p = argparse.ArgumentParser(prog="minitensor bench", description=__doc__.splitlines()[0])
  p.add_argument("--quick", action="store_true", help="smaller sizes, fewer runs (under a minute)")
  p.add_argument("--only", default="", help="comma-separated workload ids, e.g. W2,W7")
  p.add_argument("--chart", default="", help="write a PNG bar chart of the ratios (needs matplotlib)")
  p.add_argument("--reps", type=int, default=0, help="timed runs per workload (default 5, quick 5)")
  args = p.parse_args(argv)
  reps = args.reps or 5
  only = {s.strip() for s in args.only.split(",") if s.strip()}
  rows = []
  print(f"{'workload':28s} {'numpy':>10s} {'minitensor':>11s} {'ratio':>7s} {'first call':>11s}  note")
  for name, fnp, fmt, flops in workloads(args.quick):
    if only and name.split()[0] not in only: continue
    _, tn = timeit(fnp, reps)
    first, tm = timeit(fmt, reps)
    np.testing.assert_allclose(fmt(), fnp(), rtol=2e-3, atol=2e-3)
    note = f"{flops / tm / 1e9:6.1f} GFLOP/s" if flops else ""
    unit = 1e6 if tn < 1e-3 else 1e3
    u = "us" if unit == 1e6 else "ms"
    print(f"{name:28s} {tn * unit:8.2f}{u} {tm * unit:9.2f}{u} {tn / tm:7.2f} {first * 1e3:9.1f}ms  {note}", flush=True)
    rows.append((name, tn, tm))
  if args.chart:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.barh([r[0] for r in rows], [r[1] / r[2] for r in rows])
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xscale("log"); ax.set_xlabel("NumPy time / minitensor time (higher is faster)")
    fig.tight_layout(); fig.savefig(args.chart, dpi=110)
    print(f"chart written to {args.chart}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
