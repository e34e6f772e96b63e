"""The workloads W1-W9 of DESIGN.md, minitensor next to NumPy in one process.

    python benchmarks/run.py [--quick] [--only W2,W7] [--chart out.png]     (or: python -m minitensor bench)

The first line names the CPU (model, vector ISA, cores, caches): every figure holds for that machine only.
Each workload is timed as the median of at least 5 runs after a warm-up (51 short runs for calls under 100 us);
the warm-up's first call (which compiles) is reported apart, and the warm-up lasts until a hot schedule has moved
to compiler tier 1. Each implementation is timed in a series of its own, not in turns with the others: their
thread pools spin after a call (OpenBLAS's for about 100 ms), and a threaded kernel started meanwhile has one core
fewer (a 256 x 256 GEMM took 2-6 ms instead of 0.55 ms for 100 ms after a NumPy matmul). A minitensor run builds
the graph, finds the compiled schedule in the cache, runs it and returns the ndarray. The ratio is NumPy time /
minitensor time (above 1: minitensor is faster); W9 (dispatch) also says how many times NumPy's time
minitensor's is (the target: at most 25x).
When jax is installed (`pip install minitensor[bench]`), a jax.jit column times each workload's jax version on the
same data (jitted, warmed up, `block_until_ready`), and "vs jax" is jax time / minitensor time (above 1:
minitensor is faster). numexpr and numba appear among the peers for the workloads they can express when installed.
"""
from __future__ import annotations
import argparse
import importlib.util
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable
import numpy as np
import minitensor as mt
from minitensor import nn
from minitensor.backend.machine import machine
from minitensor.backend.realize import settle
from minitensor.backend.runtime import target_cpu


@dataclass
class Workload:
  name: str
  numpy: Callable
  minitensor: Callable
  flops: float = 0.0
  peers: dict[str, Callable] = field(default_factory=dict)
  jax: Callable | None = None          # the jitted jax version on the same data (None: jax is not installed)


def timeit(fn, reps: int) -> tuple[float, float]:
  """(first call seconds, median over the runs of the time per call). A run calls fn enough times to last about
  20 ms, so microsecond calls are timed as loops rather than one timer reading each; calls under 100 us run in
  loops of about 1 ms instead, at least 51 of them: on a shared machine a 20 ms loop is cut by the scheduler's
  time slices and a 1 ms one mostly is not, so NumPy's microsecond loop and minitensor's (dispatch, W9) are
  exposed to other work alike."""
  t = time.perf_counter(); fn(); first = time.perf_counter() - t
  warm = time.perf_counter() + 0.3
  while time.perf_counter() < warm: fn()       # past tiers.HOT_SECONDS: a hot schedule moves to tier 1...
  settle()                                     # ...and the steady state is measured after that compile
  t = time.perf_counter()
  for _ in range(10): fn()
  once = (time.perf_counter() - t) / 10
  micro = once < 1e-4
  n = max(1, min(int((1e-3 if micro else 0.02) / max(once, 1e-7)), 100_000))
  ts = []
  for _ in range(max(reps, 51) if micro else reps):
    t = time.perf_counter()
    for _ in range(n): fn()
    ts.append((time.perf_counter() - t) / n)
  return first, statistics.median(ts)


def _softmax_np(x, xp=np):
  e = xp.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def _layernorm_np(x, xp=np):
  m = x.mean(-1, keepdims=True)
  return (x - m) / xp.sqrt(x.var(-1, keepdims=True) + 1e-5)


def cpu_line() -> str:
  """The machine the figures hold for: CPU model (and x86 family/model), vector ISA, cores and caches."""
  fields = dict(f.split("=", 1) for f in target_cpu().split(";") if "=" in f)
  m = machine()
  name = fields.get("model name") or fields.get("CPU part") or target_cpu()
  if "cpu family" in fields: name += f" (family {fields['cpu family']} model {fields.get('model', '?')})"
  isa = {64: "AVX-512", 32: "AVX2"}.get(m.vector_bytes, "SSE2") if m.x86 else f"{m.vector_bits}-bit vectors"
  kib = lambda b: f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"
  return (f"CPU: {name}, {isa}{' + FMA' if m.fma else ''} ({m.vector_bits}-bit, {m.registers} vector registers), "
          f"{m.cores} core{'s' if m.cores > 1 else ''}, L1d {kib(m.l1)} / L2 {kib(m.l2)} / L3 {kib(m.l3)}")


def _jitted(f: Callable, *arrays) -> Callable | None:
  """f jitted by jax, on device copies of `arrays`: a call runs it and waits for the result (None without jax)."""
  if importlib.util.find_spec("jax") is None: return None
  import jax
  g, args = jax.jit(f), [jax.device_put(a) for a in arrays]
  return lambda: g(*args).block_until_ready()


def _jnp():
  if importlib.util.find_spec("jax") is None: return None
  import jax.numpy as jnp
  return jnp


def _conv2d_np(x, w):
  """im2col (a strided view) + one BLAS contraction: the fastest plain-NumPy convolution."""
  xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  cols = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))          # n c h w kh kw
  return np.einsum("nchwij,ocij->nohw", cols, w, optimize=True)


def _peers(a, b, x) -> dict[str, dict[str, Callable]]:
  """numexpr and numba versions of the workloads they can express (when installed)."""
  out: dict[str, dict[str, Callable]] = {"W3": {}, "W4a": {}, "W4b": {}, "W5": {}}
  if importlib.util.find_spec("numexpr"):
    import numexpr as ne
    out["W3"]["numexpr"] = lambda: ne.evaluate("a*2 + b*3 - a*b", local_dict={"a": a, "b": b})
    out["W4a"]["numexpr"] = lambda: ne.evaluate("sum(x, axis=0)", local_dict={"x": x})
    out["W4b"]["numexpr"] = lambda: ne.evaluate("sum(x, axis=1)", local_dict={"x": x})
  if importlib.util.find_spec("numba"):
    import numba
    @numba.njit(parallel=True, fastmath=False, cache=False)
    def chain(a, b):
      o = np.empty_like(a)
      for i in numba.prange(a.size): o[i] = a[i] * 2 + b[i] * 3 - a[i] * b[i]
      return o
    @numba.njit(parallel=True)
    def rowsum(x):
      o = np.empty(x.shape[0], np.float32)
      for i in numba.prange(x.shape[0]): o[i] = x[i].sum()
      return o
    @numba.njit(parallel=True)
    def transpose(x):
      o = np.empty((x.shape[1], x.shape[0]), x.dtype)
      for i in numba.prange(x.shape[1]):
        for j in range(x.shape[0]): o[i, j] = x[j, i]
      return o
    out["W3"]["numba"] = lambda: chain(a, b)
    out["W4b"]["numba"] = lambda: rowsum(x)
    out["W5"]["numba"] = lambda: transpose(x)
  return out


def workloads(quick: bool) -> list[Workload]:
  rng = np.random.default_rng(0)
  f32 = lambda *s: rng.standard_normal(s, dtype=np.float32)
  jnp = _jnp()
  out = []
  for n in ((256, 512) if quick else (256, 512, 1024)):
    a, b = f32(n, n), f32(n, n)
    ta, tb = mt.asarray(a), mt.asarray(b)
    out.append(Workload(f"W1 GEMM N={n}", lambda a=a, b=b: a @ b, lambda ta=ta, tb=tb: np.asarray(ta @ tb), 2 * n ** 3,
                        jax=_jitted(lambda a, b: a @ b, a, b)))
  x = f32(4096, 1024); tx = mt.asarray(x)
  a, b = f32(1 << 22), f32(1 << 22); ta, tb = mt.asarray(a), mt.asarray(b)
  peers = _peers(a, b, x)
  out.append(Workload("W2 softmax (4096,1024)", lambda: _softmax_np(x), lambda: np.asarray(nn.softmax(tx, axis=-1)),
                      jax=_jitted(lambda x: _softmax_np(x, jnp), x)))
  out.append(Workload("W3 a*2+b*3-a*b 4M", lambda: a * 2 + b * 3 - a * b, lambda: np.asarray(ta * 2 + tb * 3 - ta * tb),
                      peers=peers["W3"], jax=_jitted(lambda a, b: a * 2 + b * 3 - a * b, a, b)))
  out.append(Workload("W4 sum axis 0", lambda: x.sum(0), lambda: np.asarray(tx.sum(0)), peers=peers["W4a"],
                      jax=_jitted(lambda x: x.sum(0), x)))
  out.append(Workload("W4 sum axis 1", lambda: x.sum(1), lambda: np.asarray(tx.sum(1)), peers=peers["W4b"],
                      jax=_jitted(lambda x: x.sum(1), x)))
  out.append(Workload("W5 transpose copy", lambda: np.ascontiguousarray(x.T), lambda: np.asarray(tx.T),
                      peers=peers["W5"], jax=_jitted(lambda x: x.T, x)))
  if not quick:
    xi, w = f32(8, 64, 56, 56), f32(64, 64, 3, 3)
    txi, tw = mt.asarray(xi), mt.asarray(w)
    conv = None
    if jnp is not None:
      import jax
      conv = _jitted(lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1))), xi, w)
    out.append(Workload("W6 conv2d (8,64,56,56)", lambda: _conv2d_np(xi, w),
                        lambda: np.asarray(nn.conv2d(txi, tw, padding=1)),
                        2 * 8 * 64 * 56 * 56 * 64 * 9, jax=conv))
  out.append(Workload("W7 layernorm (4096,1024)", lambda: _layernorm_np(x),
                      lambda: np.asarray(nn.layer_norm(tx, (1024,), eps=1e-5)),
                      jax=_jitted(lambda x: _layernorm_np(x, jnp), x)))
  for L in ((512,) if quick else (512, 2048)):
    q, k, v = f32(L, 64), f32(L, 64), f32(L, 64)
    tq, tk, tv = mt.asarray(q), mt.asarray(k), mt.asarray(v)
    out.append(Workload(f"W8 attention L={L}", lambda q=q, k=k, v=v: _softmax_np(q @ k.T / 8) @ v,
                        lambda tq=tq, tk=tk, tv=tv: np.asarray(nn.softmax(tq @ tk.T / 8, axis=-1) @ tv),
                        4 * L * L * 64, jax=_jitted(lambda q, k, v: _softmax_np(q @ k.T / 8, jnp) @ v, q, k, v)))
  a16, b16 = f32(16), f32(16); t16, u16 = mt.asarray(a16), mt.asarray(b16)
  out.append(Workload("W9 add of 16 (dispatch)", lambda: a16 + b16, lambda: np.asarray(t16 + u16),
                      jax=_jitted(lambda a, b: a + b, a16, b16)))
  return out


def _fmt(t: float) -> str: return f"{t * 1e6:8.1f}us" if t < 1e-3 else f"{t * 1e3:8.2f}ms"


def main(argv=None) -> int:
  p = argparse.ArgumentParser(prog="minitensor bench", description=__doc__.splitlines()[0])
  p.add_argument("--quick", action="store_true", help="smaller sizes, W6 and L=2048 skipped (under a minute)")
  p.add_argument("--only", default="", help="comma-separated workload ids, e.g. W2,W7")
  p.add_argument("--chart", default="", help="write a PNG bar chart of the ratios (needs matplotlib)")
  p.add_argument("--reps", type=int, default=5, help="timed runs per workload (at least 5)")
  args = p.parse_args(argv)
  reps = max(args.reps, 5)
  only = {s.strip() for s in args.only.split(",") if s.strip()}
  rows = []
  ws = [w for w in workloads(args.quick) if not only or w.name.split()[0] in only]
  jax = any(w.jax is not None for w in ws)
  print(cpu_line())
  print(f"{'workload':26s} {'numpy':>10s} {'minitensor':>10s} {'ratio':>7s} "
        + (f"{'jax.jit':>10s} {'vs jax':>7s} " if jax else "") + f"{'first call':>10s}  peers / note")
  for w in ws:
    _, tn = timeit(w.numpy, reps)
    first, tm = timeit(w.minitensor, reps)
    want = w.numpy()
    np.testing.assert_allclose(w.minitensor(), want, rtol=2e-3, atol=2e-3)
    cols = ""
    if jax:
      tj = None
      if w.jax is not None:
        np.testing.assert_allclose(np.asarray(w.jax()), want, rtol=2e-3, atol=2e-3)
        tj = timeit(w.jax, reps)[1]
      cols = f"{_fmt(tj)} {tj / tm:7.2f} " if tj is not None else f"{'-':>10s} {'-':>7s} "
    notes = [f"{k} {_fmt(timeit(f, reps)[1]).strip()}" for k, f in w.peers.items()]
    if w.flops: notes.append(f"{w.flops / tm / 1e9:.1f} GFLOP/s")
    if w.name.startswith("W9"): notes.append(f"{tm / tn:.0f}x NumPy's time (target: at most 25x)")
    print(f"{w.name:26s} {_fmt(tn)} {_fmt(tm)} {tn / tm:7.2f} {cols}{first * 1e3:8.0f}ms  {', '.join(notes)}",
          flush=True)
    rows.append((w.name, tn, tm))
  if args.chart:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.barh([r[0] for r in rows][::-1], [r[1] / r[2] for r in rows][::-1], color="#4472c4")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xscale("log"); ax.set_xlabel("NumPy time / minitensor time (right of the line: minitensor is faster)")
    fig.tight_layout(); fig.savefig(args.chart, dpi=110)
    print(f"chart written to {args.chart}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
