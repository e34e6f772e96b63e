"""Chunked softmax and layer norm on a dask.distributed LocalCluster (2 worker processes, 1 thread each, on
loopback): the same code on Tensor chunks (minitensor.dask) and on NumPy chunks, written two ways: as dask-array
expressions (dask's graph: a reduction's chunk and aggregate tasks, then elementwise tasks; every task's result is
realized, so minitensor fuses only within a task), and per chunk (`map_blocks` of the same NumPy-style function,
one task per block: minitensor fuses the whole softmax or layer norm of a block into one kernel).

    python benchmarks/bench_dask.py [--mib 128] [--chunks 16] [--runs 5]

The softmax has a temperature and the layer norm an epsilon that change from run to run, so that each run
has new keys and reuses nothing. The input (float32, rows of 2048, split into --chunks row blocks) is made on
the workers and kept there; each run persists the result on the workers and waits for it (nothing travels to
the client), so the time is the workers' compute plus the scheduler's overhead. Prints the best of --runs after
a warm-up run (which compiles minitensor's kernels on each worker) and the ratio NumPy time / minitensor time.
"""
from __future__ import annotations
import sys
import time


def softmax(x, temperature: float):
  import numpy as np
  x = x / temperature
  e = np.exp(x - x.max(axis=1, keepdims=True))
  return e / e.sum(axis=1, keepdims=True)


def layer_norm(x, eps: float):
  m = x.mean(axis=1, keepdims=True)
  d = x - m
  return d / ((d * d).mean(axis=1, keepdims=True) + eps) ** 0.5


def per_chunk(f):
  """f applied to each row block by map_blocks (each block holds whole rows), as one task per block."""
  def g(x, p):
    return x.map_blocks(f, p, dtype=x.dtype, meta=x._meta)
  return g


def arg(name: str, default: int) -> int:
  return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main() -> None:
  import dask.array as da
  import distributed
  import numpy as np
  import minitensor as mt
  import minitensor.dask  # noqa: F401
  mib, chunks, runs = arg("--mib", 128), arg("--chunks", 16), arg("--runs", 5)
  cols = 2048
  rows = mib * 2 ** 20 // 4 // cols
  with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                dashboard_address=None, worker_dashboard_address=None, preload=["minitensor.dask"],
                                memory_limit="6GiB") as cluster, distributed.Client(cluster) as client:
    xn = da.random.default_rng(0).random((rows, cols), chunks=(rows // chunks, cols), dtype=np.float32)
    xn = client.persist(xn)
    xm = client.persist(xn.map_blocks(mt.asarray, meta=mt.asarray(np.empty((0, 0), np.float32))))
    distributed.wait([xn, xm], timeout=300)
    print(f"{rows} x {cols} float32 ({mib} MiB) in {chunks} chunks, 2 workers x 1 thread")
    print(f"{'case':22s} {'NumPy':>9s} {'minitensor':>11s} {'ratio':>6s}")
    cases = (("softmax", softmax), ("layer norm", layer_norm), ("softmax, per chunk", per_chunk(softmax)),
             ("layer norm, per chunk", per_chunk(layer_norm)))
    for name, f in cases:
      times = {}
      for kind, x in (("numpy", xn), ("minitensor", xm)):
        best = float("inf")
        for i in range(runs + 1):
          t = time.perf_counter()
          y = client.persist(f(x, 1.0 + i / 1000))     # new keys each run: nothing is reused
          distributed.wait(y, timeout=300)
          if i: best = min(best, time.perf_counter() - t)
          if i == runs:
            check = float((y[:4] ** 2).sum().compute())
            times[kind + " check"] = check
          del y
        times[kind] = best
      assert abs(times["numpy check"] - times["minitensor check"]) <= 1e-3 * abs(times["numpy check"]), times
      print(f"{name:22s} {times['numpy'] * 1e3:7.0f}ms {times['minitensor'] * 1e3:9.0f}ms "
            f"{times['numpy'] / times['minitensor']:6.2f}")


if __name__ == "__main__":
  main()
