"""The workloads W1-W9 of DESIGN.md: minitensor, NumPy and the installed peers, each library in its own process.

    python benchmarks/run.py [--quick] [--only W2,W7] [--reps 5] [--cache] [--chart out.png]
    (or: python -m minitensor bench ...)

The first line names the CPU (model, vector ISA, cores, caches): every figure holds for that machine only.

Each library runs in a child process of its own (`child`), so no thread pool or allocator state leaks from one
into another: OpenBLAS's threads spin for about 100 ms after a NumPy matmul, and a threaded kernel started meanwhile
has one core fewer (a 256 x 256 GEMM took 2-6 ms instead of 0.55 ms); glibc raises its mmap and trim thresholds after
NumPy frees a large array, which changes what a later result's memory costs. The children build the same data (one
seeded generator) and time the same workloads. Each workload is timed as the median of at least 5 runs after a
warm-up (51 short runs for calls under 100 us); the warm-up's first call is reported apart ("first call"), and the
warm-up lasts until a hot schedule has moved to compiler tier 1. minitensor's child starts with an empty kernel
cache of its own, so its first calls compile (`--cache` keeps MINITENSOR_CACHE_DIR as it is); minitensor's Python
bytecode is made first, as a user's earlier processes leave it. A minitensor run builds
the graph, finds the compiled schedule, runs it and returns the ndarray. Besides NumPy, the children other than
NumPy's run NumPy's BLAS on one thread: there NumPy only computes the reference values each result is checked
against.

Columns: NumPy's time and minitensor's, the ratio NumPy time / minitensor time (above 1: minitensor is faster),
minitensor's first call, and "interleaved": minitensor's time per call in a process where every minitensor call
follows a call of the NumPy version (users mix the two), with its ratio to minitensor's own-process time. W9
(dispatch) also says how many times NumPy's time minitensor's is (the target: at most 25x). With jax installed
(`pip install minitensor[bench]`), a jax.jit column times each workload's jax version on the same data (jitted,
`block_until_ready`), with "vs jax" = jax time / minitensor time and jax's first call (its trace and compile);
numexpr and numba appear among the peers of the workloads they can express when installed.
"""
from __future__ import annotations
import argparse
import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable
import numpy as np

LIBS = ("numpy", "minitensor", "interleaved", "jax", "numexpr", "numba")
_OPTIONAL = {"jax": "jax", "numexpr": "numexpr", "numba": "numba"}


def _settle() -> None:
  """Wait for minitensor's background compiles when it is loaded (a no-op in the other libraries' processes)."""
  if (r := sys.modules.get("minitensor.backend.realize")) is not None: r.settle()


def timeit(fn, reps: int, before: Callable | None = None) -> tuple[float, float]:
  """(first call seconds, median over the runs of the time per call). A run calls fn enough times to last about
  20 ms, so microsecond calls are timed as loops rather than one timer reading each; calls under 100 us run in
  loops of about 1 ms instead, at least 51 of them: on a shared machine a 20 ms loop is cut by the scheduler's
  time slices and a 1 ms one mostly is not, so NumPy's microsecond loop and minitensor's (dispatch, W9) are
  exposed to other work alike. before: called ahead of every call of fn, untimed (the interleaved column)."""
  t = time.perf_counter(); fn(); first = time.perf_counter() - t
  warm = time.perf_counter() + 0.3
  while time.perf_counter() < warm:            # past tiers.HOT_SECONDS: a hot schedule moves to tier 1...
    if before is not None: before()
    fn()
  _settle()                                    # ...and the steady state is measured after that compile
  t = time.perf_counter()
  for _ in range(10): fn()
  once = (time.perf_counter() - t) / 10
  micro = once < 1e-4
  n = max(1, min(int((1e-3 if micro else 0.02) / max(once, 1e-7)), 100_000))
  ts = []
  for _ in range(max(reps, 51) if micro else reps):
    if before is None:
      t = time.perf_counter()
      for _ in range(n): fn()
      ts.append((time.perf_counter() - t) / n)
    else:
      spent = 0.0
      for _ in range(n):
        before()
        t = time.perf_counter(); fn(); spent += time.perf_counter() - t
      ts.append(spent / n)
  return first, statistics.median(ts)


def _softmax_np(x, xp=np):
  e = xp.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def _layernorm_np(x, xp=np):
  m = x.mean(-1, keepdims=True)
  return (x - m) / xp.sqrt(x.var(-1, keepdims=True) + 1e-5)


def _conv2d_np(x, w):
  """im2col (a strided view) + one BLAS contraction: the fastest plain-NumPy convolution."""
  xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  cols = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))          # n c h w kh kw
  return np.einsum("nchwij,ocij->nohw", cols, w, optimize=True)


def cpu_line() -> str:
  """The machine the figures hold for: CPU model (and x86 family/model), vector ISA, cores and caches."""
  from minitensor.backend.machine import machine
  from minitensor.backend.runtime import target_cpu
  fields = dict(f.split("=", 1) for f in target_cpu().split(";") if "=" in f)
  m = machine()
  name = fields.get("model name") or fields.get("CPU part") or target_cpu()
  if "cpu family" in fields: name += f" (family {fields['cpu family']} model {fields.get('model', '?')})"
  isa = {64: "AVX-512", 32: "AVX2"}.get(m.vector_bytes, "SSE2") if m.x86 else f"{m.vector_bits}-bit vectors"
  kib = lambda b: f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"
  return (f"CPU: {name}, {isa}{' + FMA' if m.fma else ''} ({m.vector_bits}-bit, {m.registers} vector registers), "
          f"{m.cores} core{'s' if m.cores > 1 else ''}, L1d {kib(m.l1)} / L2 {kib(m.l2)} / L3 {kib(m.l3)}")


# ---------------------------------------------------------------------- the workloads, per library
def _data(quick: bool) -> dict:
  """Every workload's inputs, the same in every process (one generator, drawn in one order)."""
  rng = np.random.default_rng(0)
  f32 = lambda *s: rng.standard_normal(s, dtype=np.float32)
  d: dict = {"gemm": [(n, f32(n, n), f32(n, n)) for n in ((256, 512) if quick else (256, 512, 1024))]}
  d["x"] = f32(4096, 1024)
  d["a"], d["b"] = f32(1 << 22), f32(1 << 22)
  if not quick: d["conv"] = (f32(8, 64, 56, 56), f32(64, 64, 3, 3))
  d["qkv"] = [(L, f32(L, 64), f32(L, 64), f32(L, 64)) for L in ((512,) if quick else (512, 2048))]
  d["a16"], d["b16"] = f32(16), f32(16)
  return d


def _rows(d: dict) -> list[tuple[str, float, tuple]]:
  """(name, multiply-add flops or 0, the workload's arrays) of each workload, in the table's order."""
  rows = [(f"W1 GEMM N={n}", 2 * n ** 3, (a, b)) for n, a, b in d["gemm"]]
  x, a, b = d["x"], d["a"], d["b"]
  rows += [("W2 softmax (4096,1024)", 0, (x,)), ("W3 a*2+b*3-a*b 4M", 0, (a, b)), ("W4 sum axis 0", 0, (x,)),
           ("W4 sum axis 1", 0, (x,)), ("W5 transpose copy", 0, (x,))]
  if "conv" in d: rows.append(("W6 conv2d (8,64,56,56)", 2 * 8 * 64 * 56 * 56 * 64 * 9, d["conv"]))
  rows.append(("W7 layernorm (4096,1024)", 0, (x,)))
  rows += [(f"W8 attention L={L}", 4 * L * L * 64, (q, k, v)) for L, q, k, v in d["qkv"]]
  rows.append(("W9 add of 16 (dispatch)", 0, (d["a16"], d["b16"])))
  return rows


def _numpy_fns() -> dict[str, Callable]:
  """Each workload as a function of its arrays, in NumPy (keyed by the name's first word and size)."""
  return {"W1": lambda a, b: a @ b, "W2": _softmax_np, "W3": lambda a, b: a * 2 + b * 3 - a * b,
          "W4 sum axis 0": lambda x: x.sum(0), "W4 sum axis 1": lambda x: x.sum(1),
          "W5": lambda x: np.ascontiguousarray(x.T), "W6": _conv2d_np, "W7": _layernorm_np,
          "W8": lambda q, k, v: _softmax_np(q @ k.T / 8) @ v, "W9": lambda a, b: a + b}


def _minitensor_fns() -> dict[str, Callable]:
  import minitensor as mt
  from minitensor import nn
  return {"W1": lambda a, b: np.asarray(a @ b), "W2": lambda x: np.asarray(nn.softmax(x, axis=-1)),
          "W3": lambda a, b: np.asarray(a * 2 + b * 3 - a * b), "W4 sum axis 0": lambda x: np.asarray(x.sum(0)),
          "W4 sum axis 1": lambda x: np.asarray(x.sum(1)), "W5": lambda x: np.asarray(x.T),
          "W6": lambda x, w: np.asarray(nn.conv2d(x, w, padding=1)),
          "W7": lambda x: np.asarray(nn.layer_norm(x, (1024,), eps=1e-5)),
          "W8": lambda q, k, v: np.asarray(nn.softmax(q @ k.T / 8, axis=-1) @ v),
          "W9": lambda a, b: np.asarray(a + b), "asarray": mt.asarray}


def _jax_fns() -> dict[str, Callable]:
  import jax
  import jax.numpy as jnp
  conv = lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)))
  fns = {"W1": lambda a, b: a @ b, "W2": lambda x: _softmax_np(x, jnp), "W3": lambda a, b: a * 2 + b * 3 - a * b,
         "W4 sum axis 0": lambda x: x.sum(0), "W4 sum axis 1": lambda x: x.sum(1), "W5": lambda x: x.T,
         "W6": conv, "W7": lambda x: _layernorm_np(x, jnp), "W8": lambda q, k, v: _softmax_np(q @ k.T / 8, jnp) @ v,
         "W9": lambda a, b: a + b}
  jitted = {k: jax.jit(f) for k, f in fns.items()}
  def call(k):
    g = jitted[k]
    return lambda *args: g(*args).block_until_ready()
  return {**{k: call(k) for k in fns}, "asarray": jax.device_put}


def _numexpr_fns() -> dict[str, Callable]:
  import numexpr as ne
  return {"W3": lambda a, b: ne.evaluate("a*2 + b*3 - a*b", local_dict={"a": a, "b": b}),
          "W4 sum axis 0": lambda x: ne.evaluate("sum(x, axis=0)", local_dict={"x": x}),
          "W4 sum axis 1": lambda x: ne.evaluate("sum(x, axis=1)", local_dict={"x": x})}


def _numba_fns() -> dict[str, Callable]:
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
  return {"W3": chain, "W4 sum axis 1": rowsum, "W5": transpose}


_FNS = {"numpy": _numpy_fns, "minitensor": _minitensor_fns, "jax": _jax_fns, "numexpr": _numexpr_fns,
        "numba": _numba_fns}


def _fn(fns: dict, name: str) -> Callable | None:
  """The function of workload `name` in fns (by its name's first four words, else its first word)."""
  return fns.get(" ".join(name.split()[:4])) or fns.get(name.split()[0])


def child(lib: str, quick: bool, only: list[str], reps: int) -> dict[str, list]:
  """Time library `lib`'s version of each selected workload in this process: {name: [first call s, median s]}.
  lib "interleaved" times minitensor's calls, each after a call of NumPy's version (first call: None). Each result
  (NumPy's version's excepted) is checked against NumPy's."""
  rows = [r for r in _rows(_data(quick)) if not only or r[0].split()[0] in only]
  ref = _numpy_fns()
  fns = _FNS["minitensor" if lib == "interleaved" else lib]()
  wrap = fns.get("asarray", lambda a: a)
  out: dict[str, list] = {}
  for name, _, arrays in rows:
    if (f := _fn(fns, name)) is None: continue
    args = [wrap(a) for a in arrays]
    call = lambda f=f, args=args: f(*args)
    if lib == "interleaved":
      g = _fn(ref, name)
      out[name] = [None, timeit(call, reps, before=lambda g=g: g(*arrays))[1]]
    else: out[name] = list(timeit(call, reps))
    if lib != "numpy":
      np.testing.assert_allclose(np.asarray(call()), _fn(ref, name)(*arrays), rtol=2e-3, atol=2e-3, err_msg=name)
  return out


def _spawn(lib: str, quick: bool, only: list[str], reps: int, keep_cache: bool) -> dict[str, list]:
  """Run `child` for lib in a fresh Python process; its result."""
  env = dict(os.environ)
  if lib not in ("numpy", "interleaved"): env["OPENBLAS_NUM_THREADS"] = "1"     # (NumPy only checks values there)
  code = (f"import json, runpy; c = runpy.run_path({__file__!r}, run_name='minitensor_bench')['child']"
          f"({lib!r}, {quick!r}, {only!r}, {reps!r}); print(json.dumps(c))")
  with tempfile.TemporaryDirectory(prefix="minitensor-bench-") as cache:
    if not keep_cache: env["MINITENSOR_CACHE_DIR"] = cache
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
  if p.returncode != 0: raise RuntimeError(f"bench: the {lib} process failed:\n{p.stderr[-4000:]}")
  return json.loads(p.stdout.strip().splitlines()[-1])


def _fmt(t: float | None) -> str:
  if t is None: return f"{'-':>10s}"
  return f"{t * 1e6:8.1f}us" if t < 1e-3 else f"{t * 1e3:8.2f}ms"


def bytecode() -> None:
  """Write minitensor's Python bytecode, as Python caches it at a first import. Where PYTHONDONTWRITEBYTECODE is set
  over an editable install, every new process would compile minitensor's sources again inside its first call (about
  50 ms of a 110 ms first column sum, Zen 4), which a user's second process never does (an installed package, jax
  among the peers, has its bytecode from pip)."""
  compileall.compile_dir(os.path.dirname(os.path.abspath(__file__)), quiet=2)    # (a read-only install: no output)


def main(argv=None) -> int:
  p = argparse.ArgumentParser(prog="minitensor bench", description=__doc__.splitlines()[0])
  p.add_argument("--quick", action="store_true", help="smaller sizes, W6 and L=2048 skipped (under a minute)")
  p.add_argument("--only", default="", help="comma-separated workload ids, e.g. W2,W7")
  p.add_argument("--chart", default="", help="write a PNG bar chart of the ratios (needs matplotlib)")
  p.add_argument("--reps", type=int, default=5, help="timed runs per workload (at least 5)")
  p.add_argument("--cache", action="store_true", help="minitensor's process uses MINITENSOR_CACHE_DIR as it is "
                 "(default: an empty cache of its own, so first calls compile)")
  args = p.parse_args(argv)
  reps = max(args.reps, 5)
  only = sorted({s.strip() for s in args.only.split(",") if s.strip()})
  libs = [lib for lib in LIBS if lib not in _OPTIONAL or importlib.util.find_spec(_OPTIONAL[lib]) is not None]
  print(cpu_line(), flush=True)
  bytecode()
  res = {}
  for lib in libs:
    print(f"  timing {lib} in its own process...", file=sys.stderr, flush=True)
    res[lib] = _spawn(lib, args.quick, only, reps, args.cache)
  jax = "jax" in res
  print(f"{'workload':26s} {'numpy':>10s} {'minitensor':>10s} {'ratio':>7s} {'first call':>10s} "
        f"{'interleaved':>17s} " + (f"{'jax.jit':>10s} {'vs jax':>7s} {'jax first':>10s} " if jax else "")
        + " peers / note")
  rows = []
  for name, flops, _ in _rows(_data(args.quick)):
    if name not in res["numpy"] or name not in res["minitensor"]: continue
    tn, (first, tm), ti = res["numpy"][name][1], res["minitensor"][name], res["interleaved"][name][1]
    cols = f"{_fmt(ti)} {ti / tm:5.2f}x own "
    if jax:
      jf, tj = res["jax"].get(name, (None, None))
      cols += f"{_fmt(tj)} {tj / tm:7.2f} {_fmt(jf)} " if tj is not None else f"{_fmt(None)} {'-':>7s} {_fmt(None)} "
    notes = [f"{lib} {_fmt(res[lib][name][1]).strip()}" for lib in ("numexpr", "numba") if name in res.get(lib, {})]
    if flops: notes.append(f"{flops / tm / 1e9:.1f} GFLOP/s")
    if name.startswith("W9"): notes.append(f"{tm / tn:.0f}x NumPy's time (target: at most 25x)")
    print(f"{name:26s} {_fmt(tn)} {_fmt(tm)} {tn / tm:7.2f} {_fmt(first)} {cols} {', '.join(notes)}", flush=True)
    rows.append((name, tn, tm))
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
