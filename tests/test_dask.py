"""minitensor.dask against dask's own NumPy chunks: the registrations, pickling, tokens, from_array, the
"minitensor" array backend (also found through its entry point), and a real dask.distributed LocalCluster of
two worker processes on loopback (one per module, started and stopped here, every wait bounded) whose workers
compile and run the kernels.
"""
import configparser
import os
import pickle
import subprocess
import sys
from pathlib import Path
import dask
import dask.array as da
import distributed
import numpy as np
import pytest
from dask.sizeof import sizeof
from dask.tokenize import tokenize
import minitensor as mt
import minitensor.dask as mtd
from minitensor.backend.runtime import stats

ROOT = Path(__file__).resolve().parent.parent
rng = np.random.default_rng(7)
A = rng.standard_normal((24, 10)).astype(np.float32)
W = rng.standard_normal((10, 6)).astype(np.float32)


def realizations() -> int:
  return stats.graph_hits + stats.graph_misses


def softmax(x):
  e = np.exp(x - x.max(axis=1, keepdims=True))
  return e / e.sum(axis=1, keepdims=True)


def pipelines(x, w):
  """The chunked pipelines compared: elementwise, reductions, softmax, matmul (x: a dask array)."""
  return [x * 2 + 1, abs(x).sum(axis=0), x.mean(), x.std(axis=1), softmax(x), x @ w, da.concatenate([x, x], axis=1)]


def assert_like_numpy_chunks(got: list, want: list) -> None:
  for g, w in zip(got, want):
    assert isinstance(g, mt.Tensor), f"a {type(g).__name__}, not a Tensor"
    np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=2e-6)


def test_chunk_type_and_dispatches():
  x, xn = mtd.from_array(mt.asarray(A), chunks=(8, 5)), da.from_array(A, chunks=(8, 5))
  assert isinstance(x._meta, mt.Tensor) and x.chunks == xn.chunks and "minitensor.Tensor" in repr(x)
  got = dask.compute(*pipelines(x, W), da.tensordot(x, x, axes=((0,), (0,))), x[[1, 5, 2]],
                     da.einsum("ij,jk->ik", x, W), scheduler="sync")
  want = dask.compute(*pipelines(xn, W), da.tensordot(xn, xn, axes=((0,), (0,))), xn[[1, 5, 2]],
                      da.einsum("ij,jk->ik", xn, W), scheduler="sync")
  assert_like_numpy_chunks(got, want)
  p = da.percentile(x.ravel(), [10, 50, 90]).compute()       # NumPy's percentile per chunk, merged by dask
  np.testing.assert_allclose(p, da.percentile(xn.ravel(), [10, 50, 90]).compute())
  n = x.to_backend("numpy")
  assert type(n._meta) is np.ndarray and type(n.blocks[0, 0].compute()) is np.ndarray
  np.testing.assert_array_equal(n.compute(), A)
  back = xn.to_backend("minitensor")
  assert isinstance(back._meta, mt.Tensor) and isinstance(back.blocks[1, 1].compute(), mt.Tensor)


def test_sizeof_is_nbytes_without_realizing():
  t = mt.asarray(A) * 3
  n = realizations()
  assert sizeof(t) == A.nbytes and sizeof(mt.asarray(A[:4])) == A[:4].nbytes and realizations() == n


def test_tokens_hash_the_data_and_never_realize():
  t = mt.asarray(A)
  lazy = mt.exp(t) * 2
  n = realizations()
  assert tokenize(t) == tokenize(mt.asarray(A.copy())) != tokenize(mt.asarray(A + 1))
  assert tokenize(lazy) == tokenize(mt.exp(mt.asarray(A)) * 2) != tokenize(mt.exp(t) * 3)
  assert tokenize(lazy) != tokenize(mt.exp(mt.asarray(A + 1)) * 2)   # the leaves' data are part of it
  assert realizations() == n, "tokenize realized a lazy Tensor"
  np.testing.assert_allclose(np.asarray(lazy), np.exp(A) * 2, rtol=1e-6)
  assert tokenize(lazy) != tokenize(t)


def test_pickle_sends_the_buffer_once_and_realizes_once():
  t = mt.asarray(A)
  buffers = []
  head = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
  assert len(buffers) == 1 and buffers[0].raw().nbytes == A.nbytes and len(head) < 400     # out of band, once
  back = pickle.loads(head, buffers=buffers)
  assert isinstance(back, mt.Tensor) and np.array_equal(np.asarray(back), A)
  assert np.shares_memory(np.asarray(back), np.asarray(t))      # no copy on either side
  lazy = mt.sin(t) + 1
  n = realizations()
  one, two = pickle.dumps(lazy), pickle.dumps(lazy)
  assert realizations() == n + 1 and one == two
  np.testing.assert_allclose(np.asarray(pickle.loads(one)), np.sin(A) + 1, rtol=1e-5)
  v = mt.asarray(A).T[2:5]                                         # a view pickles as its own values
  np.testing.assert_array_equal(np.asarray(pickle.loads(pickle.dumps(v))), A.T[2:5])


def test_from_array_slices_per_chunk():
  t = mt.asarray(A) + 0                          # lazy: realized once, then sliced
  n = realizations()
  x = mtd.from_array(t, chunks=(8, 4))
  assert realizations() == n + 1
  graph = dict(x.__dask_graph__())
  assert len(graph) == 9 and all(isinstance(v, mt.Tensor) for v in graph.values())
  assert sorted(sizeof(v) for v in graph.values()) == sorted(sizeof(v) for v in
                                                             dict(da.from_array(A, chunks=(8, 4)).dask).values())
  np.testing.assert_array_equal(np.asarray(x.compute(scheduler="sync")), A)


@pytest.mark.parametrize("fuse", [True, False])
def test_tasks_realize_their_tensors(fuse):
  x = mtd.from_array(mt.asarray(A), chunks=(8, 10))
  y = (mt.exp(x) * 2).sum(axis=1)
  keys = []
  class Check(dask.callbacks.Callback):
    def _posttask(self, key, result, dsk, state, id):
      keys.append(key)
      assert not isinstance(result, mt.Tensor) or result._realized() is not None, f"{key} returned a lazy Tensor"
  with Check(), dask.config.set({"optimization.fuse.active": fuse}):     # without fusion: legacy tuple tasks
    got = y.compute(scheduler="sync")
  assert len(keys) >= 4 and isinstance(got, mt.Tensor)
  np.testing.assert_allclose(np.asarray(got), (np.exp(A) * 2).sum(axis=1), rtol=1e-5)


@pytest.mark.parametrize("chunks", [(6, 10), (6, 5)])
def test_a_blocks_chain_is_fused_into_one_task(chunks):
  """Softmax and layer norm as dask expressions: each row block's steps that dask's linear fusion leaves apart (a
  reduction's chunk step and aggregate beside the block's other readers) run as one task, whose Tensors are
  computed inside its own graph (one task and the source chunk a block, not 8 tasks). Column chunks make the
  aggregate read several partials: those stay tasks of their own. Values match NumPy chunks' and every task's
  result is realized."""
  def softmax(x):
    e = da.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
  def layer_norm(x):
    m = x.mean(axis=1, keepdims=True)
    return (x - m) / da.sqrt(((x - m) ** 2).mean(axis=1, keepdims=True) + 1e-5)
  for f in (softmax, layer_norm):
    y, want = f(mtd.from_array(mt.asarray(A), chunks=chunks)), f(da.from_array(A, chunks=chunks))
    keys = y.__dask_keys__()
    plain = dict(da.optimization.optimize(dict(y.__dask_graph__()), keys))
    tasks = mtd.optimize(dict(y.__dask_graph__()), keys)
    assert len(tasks) < len(plain) and set(dask.core.flatten(keys)) <= set(tasks)
    if chunks[1] == A.shape[1]: assert len(tasks) == 2 * len(keys), (len(plain), len(tasks))
    results = []
    class Check(dask.callbacks.Callback):
      def _posttask(self, key, result, dsk, state, id): results.append(result)
    with Check(): got = y.compute(scheduler="sync")
    assert all(r._realized() is not None for r in results if isinstance(r, mt.Tensor))
    np.testing.assert_allclose(np.asarray(got), want.compute(), rtol=1e-5, atol=1e-6)


def test_backend_option_makes_tensor_chunks():
  def make():
    g = da.random.default_rng(5)
    return [da.ones((6, 4), chunks=3, dtype=np.float32), da.zeros(5, chunks=2), da.full((4,), 2.5, chunks=2),
            da.arange(7, chunks=3), da.random.RandomState(3).random_sample((6, 4), chunks=3),
            g.random((6, 4), chunks=3, dtype=np.float32), g.standard_normal(5, chunks=2),
            g.integers(0, 10, size=7, chunks=3), g.normal(1.0, 2.0, size=4, chunks=2)]
  with dask.config.set({"array.backend": "minitensor"}):
    made = make()
  with dask.config.set({"array.backend": "numpy"}):
    want = make()
  for m, w in zip(made, want):
    assert isinstance(m._meta, mt.Tensor) and isinstance(m.blocks[0].compute(), mt.Tensor)
    got = m.compute()
    assert got.dtype == w.dtype and np.array_equal(np.asarray(got), w.compute())


def test_backend_entry_point(tmp_path):
  """setup.cfg's `dask.array.backends` entry point, installed as metadata, lets the option load minitensor.dask."""
  cfg = configparser.ConfigParser()
  cfg.read(ROOT / "setup.cfg")
  entry = cfg["options.entry_points"]["dask.array.backends"].strip()
  assert entry == "minitensor = minitensor.dask:MinitensorBackendEntrypoint"
  info = tmp_path / "minitensor_entry-0.dist-info"
  info.mkdir()
  (info / "METADATA").write_text("Metadata-Version: 2.1\nName: minitensor-entry\nVersion: 0\n")
  (info / "entry_points.txt").write_text(f"[dask.array.backends]\n{entry}\n")
  code = ("import sys, dask, dask.array as da\n"
          "with dask.config.set({'array.backend': 'minitensor'}): x = da.ones((4, 4), chunks=2)\n"
          "print(type(x._meta).__module__, type(x.blocks[0, 0].compute()).__name__, x.sum().compute())")
  env = {**os.environ, "PYTHONPATH": f"{ROOT}:{tmp_path}"}
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split() == ["minitensor.tensor", "Tensor", "16.0"]


# ---------------------------------------------------------------------- a real cluster
def _worker_counts() -> dict:
  from minitensor.backend.runtime import stats
  return {"kernels": stats.compiles + stats.disk_hits + stats.memory_hits + stats.plan_hits,
          "realized": stats.graph_hits + stats.graph_misses}


def _held(keys: list, dask_worker) -> list:
  """For each of these keys the worker holds: whether it is a realized Tensor."""
  import minitensor as mt
  return [isinstance(v, mt.Tensor) and v._realized() is not None for k, v in dask_worker.data.items() if k in keys]


@pytest.fixture(scope="module")
def client():
  with dask.config.set({"distributed.comm.timeouts.connect": "20s"}):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, worker_dashboard_address=None,
                                  preload=["minitensor.dask"], timeout="60s") as cluster:
      with distributed.Client(cluster, timeout="60s") as c:
        c.wait_for_workers(2, timeout=60)
        yield c


def test_cluster_pipelines_compute_on_the_workers(client):
  x, xn = mtd.from_array(mt.asarray(A), chunks=(6, 10)), da.from_array(A, chunks=(6, 10))
  before = _worker_counts()
  got = [f.result(timeout=60) for f in client.compute(pipelines(x, W))]
  assert _worker_counts() == before, "the client computed"
  assert_like_numpy_chunks(got, dask.compute(*pipelines(xn, W), scheduler="sync"))
  counts = client.run(_worker_counts)
  assert len(counts) == 2 and all(c["kernels"] > 0 and c["realized"] > 0 for c in counts.values()), counts


def test_cluster_holds_realized_chunks(client):
  x = mtd.from_array(mt.asarray(A), chunks=(6, 10))
  kept = client.persist(mt.exp(x) + 1)
  distributed.wait(kept, timeout=60)
  held = client.run(_held, list(dask.core.flatten(kept.__dask_keys__())))
  assert sum(map(len, held.values())) == 4 and all(all(h) for h in held.values()), held
  np.testing.assert_allclose(np.asarray(kept.compute()), np.exp(A) + 1, rtol=1e-6)
