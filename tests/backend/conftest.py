"""Fixtures of the backend tests."""
import shutil
from collections import OrderedDict
import pytest
from minitensor.backend import diskcache, keys, runtime
from minitensor.backend import realize as realize_mod
from cache_files import CACHE_ENV


@pytest.fixture
def cache(tmp_path, monkeypatch):
  """A fresh, empty cache directory and empty in-memory caches (kernels, compiled graphs, fallback dir), so a
  kernel is compiled anew and the counters of `stats` move only by what the test does."""
  realize_mod.settle(120)        # (a tier-1 compile or specialization another test started would count here)
  d = tmp_path / "cache"
  for v in CACHE_ENV: monkeypatch.delenv(v, raising=False)
  monkeypatch.setenv("MINITENSOR_CACHE_DIR", str(d))
  monkeypatch.setattr(runtime, "_loaded", {})
  monkeypatch.setattr(runtime, "_identity", {})
  monkeypatch.setattr(diskcache, "_fallback", [])
  monkeypatch.setattr(realize_mod, "_cache", OrderedDict())
  monkeypatch.setattr(keys, "_programs", {})
  yield d
  for p in diskcache._fallback: shutil.rmtree(p, ignore_errors=True)
