"""Threaded kernels give the same bits run after run, and with one thread or two: every output element is
computed by one thread, and every reduction combines its terms in an order fixed by the kernel's source.
The kernels are compiled at tier 1 (OpenMP, vectorized; tier 0 runs on one thread, and its transcendental
functions may differ from tier 1's in the last bits: backend/tiers.py)."""
import os
import subprocess
import sys
import pytest

_WORK = r'''
import hashlib, numpy as np, minitensor as mt
from minitensor import nn
rng = np.random.default_rng(11)
x = rng.standard_normal((1024, 512)).astype(np.float32)
w = rng.standard_normal((512, 256)).astype(np.float32)
v = rng.standard_normal(1 << 20).astype(np.float32)
def digest():
  t = mt.asarray(x)
  outs = [t.sum(axis=0), t.sum(axis=1), mt.asarray(v).sum(), t @ mt.asarray(w), nn.softmax(t, axis=-1),
          nn.layer_norm(t, (512,)), mt.exp(t) * 2 - t.T.T]
  return [hashlib.sha256(np.asarray(o).tobytes()).hexdigest() for o in outs]
'''


@pytest.fixture(autouse=True)
def tier1(monkeypatch): monkeypatch.setenv("MINITENSOR_TIER", "1")


def _digest_in_process() -> list[str]:
  ns: dict = {}
  exec(_WORK, ns)
  return ns["digest"]()


def test_threaded_kernels_repeat_bit_for_bit():
  first = _digest_in_process()
  for _ in range(4): assert _digest_in_process() == first


def test_one_thread_and_two_threads_give_the_same_bits():
  """OMP_NUM_THREADS is read once per process: each run is a new process (sharing the disk cache). (Not compared
  with this process's digest: a graph whose structure this process has seen at other sizes runs that structure's
  symbolic program, whose float32 sum may round differently from the program compiled for its own sizes.)"""
  code = _WORK + "\nprint(' '.join(digest()))"
  runs = [subprocess.run([sys.executable, "-c", code], env={**os.environ, "OMP_NUM_THREADS": n}, capture_output=True,
                         text=True, timeout=300) for n in ("1", "2")]
  for r in runs: assert r.returncode == 0, r.stderr
  assert runs[0].stdout.split() == runs[1].stdout.split()
