"""The `minitensor` command line.

    python -m minitensor                 the demo (same as `demo`)
    python -m minitensor demo            softmax and a conv block next to NumPy, one generated kernel, timings
    python -m minitensor bench [--quick] W1-W9 against NumPy (see minitensor/bench.py)
    python -m minitensor compile F.uir [--emit uir|loops|c] [--opt upcast=1:16,unroll=8,local=4,thread=0]
    python -m minitensor cache info|clear
    python -m minitensor tune [--beam N] [--budget S] SCRIPT [ARGS]   run SCRIPT with the Opts search on (search.py)

Errors in arguments or in a .uir file print one line and exit with status 2.
"""
from __future__ import annotations
import argparse
import os
import shutil
import sys
import time
import numpy as np


def _demo(args) -> int:
  import minitensor as mt
  from minitensor import nn
  from minitensor.inspect import explain
  rng = np.random.default_rng(0)
  x = rng.standard_normal((256, 512), dtype=np.float32)
  t = mt.asarray(x)
  e = mt.exp(t - t.max(axis=1, keepdims=True))
  p = e / e.sum(axis=1, keepdims=True)                       # softmax with Tensor methods: nothing runs yet
  plan = explain(p)
  t0 = time.perf_counter(); got = np.asarray(p); first = time.perf_counter() - t0
  ex = np.exp(x - x.max(1, keepdims=True)); want = ex / ex.sum(1, keepdims=True)
  print(f"softmax (256, 512) float32 matches NumPy: {np.allclose(got, want, rtol=1e-5, atol=1e-7)}")
  img = rng.standard_normal((2, 8, 16, 16), dtype=np.float32)
  w = rng.standard_normal((8, 8, 3, 3), dtype=np.float32) * 0.1
  y = nn.relu(nn.conv2d(mt.asarray(img), mt.asarray(w), padding=1)).mean(axis=(2, 3))
  ref = _conv_ref(img, w).clip(0).mean(axis=(2, 3))
  print(f"conv2d + relu + mean (2, 8, 16, 16) matches NumPy: {np.allclose(np.asarray(y), ref, rtol=1e-4, atol=1e-5)}")
  print(f"\nsoftmax is {len(plan.kernels)} fused kernel; its C:\n")
  print(plan.kernels[0].source)
  reps = 20
  t0 = time.perf_counter()
  for _ in range(reps):
    np.asarray(mt.exp(t - t.max(axis=1, keepdims=True))
               / mt.exp(t - t.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True))
  tm = (time.perf_counter() - t0) / reps
  t0 = time.perf_counter()
  for _ in range(reps): ex = np.exp(x - x.max(1, keepdims=True)); ex / ex.sum(1, keepdims=True)
  tn = (time.perf_counter() - t0) / reps
  print(f"softmax: minitensor {tm * 1e3:.2f} ms (first call {first * 1e3:.0f} ms incl. compile), "
        f"NumPy {tn * 1e3:.2f} ms")
  return 0


def _conv_ref(x: np.ndarray, w: np.ndarray) -> np.ndarray:
  xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  win = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))
  return np.einsum("nchwij,ocij->nohw", win, w)


def _parse_opts(text: str):
  from minitensor.backend.ranges import Opts
  o = Opts()
  for part in filter(None, text.split(",")):
    key, _, val = part.partition("=")
    if key == "upcast": o.upcast.update({int(a): int(b) for a, b in (v.split(":") for v in val.split(";"))})
    elif key == "tile": o.tile.update({int(a): int(b) for a, b in (v.split(":") for v in val.split(";"))})
    elif key == "unroll": o.unroll = int(val)
    elif key == "local": o.local = int(val)
    elif key == "thread": o.thread = int(val)
    else: raise ValueError(f"unknown opt {key!r} (upcast=AXIS:N, tile=AXIS:N, unroll=N, local=N, thread=AXIS)")
  return o


def _compile(args) -> int:
  from minitensor.backend.linearize import linearize
  from minitensor.backend.rangeify import lower
  from minitensor.backend.ranges import Ctx
  from minitensor.backend.render_c import render_c
  from minitensor.backend.uir import parse, print_uir
  from minitensor.backend.uop import Ops, buf, prod
  with open(args.file) as f: g = parse(f.read())
  if g.op is not Ops.SINK:                   # a shaped graph: store it into a fresh output buffer
    slot = max((u.arg.slot for u in g.toposort() if u.op is Ops.BUFFER), default=-1) + 1
    g = lower(g, buf(slot, max(prod(g.shape), 1), g.dtype), Ctx(opts=_parse_opts(args.opt)))
  if args.emit == "uir": print(print_uir(g))
  elif args.emit == "loops":
    depth = 0
    for s in linearize(g):
      if s.kind == "close": depth -= 1
      print("  " * depth + (f"{s.kind} range {s.u.arg.idx} ({s.u.arg.size})" if s.kind != "node"
                            else f"{s.u.op.name} {s.u.dtype.name}"))
      if s.kind == "open": depth += 1
  else: print(render_c(g, os.path.splitext(os.path.basename(args.file))[0].replace("-", "_") or "kernel"))
  return 0


def _cache(args) -> int:
  from minitensor.backend.runtime import cache_dir
  d = cache_dir()
  files = [os.path.join(dp, f) for dp, _, fs in os.walk(d) for f in fs]
  libs, plans = sum(f.endswith(".so") for f in files), sum(f.endswith(".plan") for f in files)
  tunes = sum(f.endswith(".tune") for f in files)
  if args.action == "clear":
    shutil.rmtree(d, ignore_errors=True)
    print(f"removed {libs} kernel(s), {plans} run plan(s) and {tunes} tuning record(s) from {d}")
  else:
    size = sum(os.path.getsize(f) for f in files if os.path.exists(f))
    print(f"cache directory: {d}\nkernels: {libs}\nrun plans: {plans}\ntuning records: {tunes}\n"
          f"size: {size / 1e6:.2f} MB")
  return 0


def _tune(args) -> int:
  """Run the script (runpy, as `python SCRIPT ARGS` would) with MINITENSOR_SEARCH on (and checked mode off), then
  list the kernels it searched and those whose tuning record it used, with the heuristic's and the chosen Opts'
  times."""
  import runpy
  from minitensor.backend import search
  if args.beam < 1: raise ValueError(f"--beam must be at least 1, got {args.beam}")
  if not os.path.isfile(args.script): raise OSError(f"tune: no script {args.script!r}")
  if os.environ.get("MINITENSOR_CHECK") == "1":
    print("minitensor tune: MINITENSOR_CHECK=1 is set; the script runs unchecked (checked kernels are never searched)")
  os.environ["MINITENSOR_SEARCH"], os.environ["MINITENSOR_CHECK"] = str(args.beam), "0"
  if args.budget is not None: os.environ["MINITENSOR_SEARCH_BUDGET"] = str(args.budget)
  search.budget()                                    # a bad budget fails before the script runs
  argv = sys.argv
  sys.argv = [args.script, *args.args]
  try: runpy.run_path(args.script, run_name="__main__")
  finally: sys.argv = argv
  load, cores = os.getloadavg()[0], os.cpu_count() or 1
  if load > cores:
    print(f"\nminitensor tune: note: the load average was {load:.1f} on {cores} CPUs; the timings (and the winners "
          f"stored) reflect a busy machine")
  print(f"\nminitensor tune: {sum(t.searched for t in search.tuned)} kernel(s) searched, "
        f"{sum(not t.searched for t in search.tuned)} from tuning records (beam {args.beam})")
  for t in search.tuned:
    acts = ", ".join(f"{a.op.name} {a.axis} {a.arg}" for a in t.actions) or "none"
    print(f"  {'searched' if t.searched else 'record  '}  {t.what:40s} {t.before * 1e3:9.3f} ms -> "
          f"{t.after * 1e3:9.3f} ms  ({t.before / max(t.after, 1e-12):.2f}x)  [{acts}]")
  return 0


def _bench(args) -> int:
  from minitensor.bench import main as bench_main
  return bench_main(args.rest)


def main(argv: list[str] | None = None) -> int:
  p = argparse.ArgumentParser(prog="minitensor", description="minitensor: NumPy-like lazy tensors compiled to C.")
  sub = p.add_subparsers(dest="cmd")
  sub.add_parser("demo", help="softmax and a conv block next to NumPy, a generated kernel, timings")
  b = sub.add_parser("bench", help="the W1-W9 workloads against NumPy", add_help=False)
  b.add_argument("rest", nargs=argparse.REMAINDER)
  c = sub.add_parser("compile", help="compile a .uir program and print it as uir, loops or C")
  c.add_argument("file")
  c.add_argument("--emit", choices=("uir", "loops", "c"), default="c")
  c.add_argument("--opt", default="",
                 help="Opts for a shaped program: upcast=AXIS:N;AXIS:N,unroll=N,local=N,thread=AXIS,tile=AXIS:N")
  k = sub.add_parser("cache", help="show or clear the on-disk kernel cache")
  k.add_argument("action", choices=("info", "clear"))
  t = sub.add_parser("tune", help="run a script with the Opts search on, print the tuned kernels")
  t.add_argument("--beam", type=int, default=2, help="beam width (MINITENSOR_SEARCH; default 2)")
  t.add_argument("--budget", type=float, default=None, help="seconds of search per kernel (MINITENSOR_SEARCH_BUDGET)")
  t.add_argument("script")
  t.add_argument("args", nargs=argparse.REMAINDER)
  argv = sys.argv[1:] if argv is None else argv
  if argv[:1] == ["bench"]: return _bench(argparse.Namespace(rest=argv[1:]))     # bench parses its own options
  args = p.parse_args(argv)
  try:
    if args.cmd == "compile": return _compile(args)
    if args.cmd == "cache": return _cache(args)
    if args.cmd == "tune": return _tune(args)
    return _demo(args)
  except (ValueError, OSError) as e:
    msg = str(e).splitlines()
    print(f"minitensor: error: {msg[0] if msg else type(e).__name__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
  sys.exit(main())
