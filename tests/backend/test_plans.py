"""Run plans on disk (plans.py): a process that has not seen a graph finds its program from the graph's structure,
without kernelizing, lowering or rendering anything; plans that are damaged, of other code or of another CPU are
not used; a plan follows its program to tier 1."""
from __future__ import annotations
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections import OrderedDict
import numpy as np
import pytest
import minitensor as mt
from minitensor import nn
from minitensor.backend import keys, plans, runtime, tiers
from minitensor.backend import realize as realize_mod
from minitensor.backend.runtime import stats
from cache_files import CACHE_ENV, REPO, files

_CHILD = textwrap.dedent("""
  import numpy as np
  import minitensor as mt
  from minitensor import nn
  from minitensor.backend import realize
  from minitensor.backend.runtime import stats
  if {forbid}:
    def lowered(*a, **k): raise AssertionError("lowered a graph that has a plan on disk")
    realize.compile_schedule = lowered
  rng = np.random.default_rng(0)
  x, w = rng.standard_normal((2, 3, 9, 9)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
  got = np.asarray(nn.conv2d(mt.asarray(x), mt.asarray(w)) * 0.5)
  want = np.stack([[sum(np.correlate(x[n, c, i + a], w[o, c, a], "valid") for c in range(3) for a in range(3))
                    for i in range(7)] for n in range(2) for o in range(4)]).reshape(2, 4, 7, 7) * 0.5
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
  print(stats.compiles, stats.plan_hits)
""")


def _child(cache_dir, forbid: bool) -> tuple[int, int]:
  env = {k: v for k, v in os.environ.items() if k not in CACHE_ENV}
  env.update(MINITENSOR_CACHE_DIR=str(cache_dir), PYTHONPATH=REPO + os.pathsep + env.get("PYTHONPATH", ""))
  p = subprocess.run([sys.executable, "-c", _CHILD.format(forbid=forbid)], env=env, cwd=REPO, capture_output=True,
                     text=True, timeout=180)
  assert p.returncode == 0, p.stderr
  c, h = map(int, p.stdout.split())
  return c, h


def test_a_new_process_runs_a_stored_plan_without_lowering(tmp_path):
  assert _child(tmp_path / "cache", forbid=False) == (1, 0)      # compiled, plan stored
  assert _child(tmp_path / "cache", forbid=True) == (0, 1)       # plan found: nothing lowered, nothing compiled


def _fresh_memory(monkeypatch) -> None:
  monkeypatch.setattr(runtime, "_loaded", {})
  monkeypatch.setattr(realize_mod, "_cache", OrderedDict())
  monkeypatch.setattr(keys, "_programs", {})


def _graph():
  x = np.linspace(-1, 1, 42).reshape(6, 7)
  return nn.softmax(mt.asarray(x) * 1.5, axis=-1), np.exp(1.5 * x) / np.exp(1.5 * x).sum(-1, keepdims=True)


def _realized(monkeypatch) -> tuple[int, int]:
  """Realize _graph with empty memory caches: (compiles, plan hits) it cost."""
  _fresh_memory(monkeypatch)
  c, h = stats.compiles, stats.plan_hits
  t, want = _graph()
  np.testing.assert_allclose(np.asarray(t), want, rtol=1e-12)
  return stats.compiles - c, stats.plan_hits - h


def _read(path: str) -> dict:
  """The plan in the file at path (checked against the key its name gives)."""
  plan = plans.decode(os.path.basename(path)[:-5], open(path, "rb").read())
  assert plan is not None
  return plan


def _signed(path: str, text: str) -> bytes:
  """A file for path's key holding `text` as its JSON, with a matching checksum (a well-signed bad plan)."""
  body = os.path.basename(path)[:-5].encode() + b"\n" + text.encode()
  return hashlib.sha256(body).hexdigest().encode() + b"\n" + body


@pytest.mark.parametrize("damage", ["garbage", "not an object", "wrong types", "unknown function", "bad dtype"])
def test_a_damaged_plan_is_not_used_and_is_rewritten(cache, monkeypatch, damage):
  assert _realized(monkeypatch) == (1, 0)
  (path,) = files(cache, ".plan")
  good = _read(path)
  bad = {"garbage": "{not json", "not an object": "[1, 2]",
         "wrong types": json.dumps({**good, "outputs": ["a"]}),
         "unknown function": json.dumps({**good, "calls": [["nope", *good["calls"][0][1:]]]}),
         "bad dtype": json.dumps({**good, "buffers": [[4, "float99"]]})}[damage]
  with open(path, "wb") as f: f.write(_signed(path, bad))
  assert _realized(monkeypatch) == (0, 0)                # lowered again, found its library on disk
  assert _read(path) == good                             # and the plan was written anew
  assert _realized(monkeypatch) == (0, 1)


def _replace(path: str, data: bytes) -> None:
  with open(path + ".new", "wb") as f: f.write(data)
  os.replace(path + ".new", path)


def _cumsum(c: float):
  x = np.linspace(-1, 1, 42).reshape(6, 7)
  return mt.cumsum(mt.asarray(x) * c, axis=1), np.cumsum(x * c, axis=1)


def _cumsum_realized(monkeypatch, c: float) -> tuple[int, int]:
  """Realize _cumsum(c) with empty memory caches: (compiles, plan hits) it cost."""
  _fresh_memory(monkeypatch)
  n, h = stats.compiles, stats.plan_hits
  t, want = _cumsum(c)
  np.testing.assert_allclose(np.asarray(t), want, rtol=1e-12)
  return stats.compiles - n, stats.plan_hits - h


@pytest.mark.parametrize("damage", ["flip in the C", "flip in a slot", "flip in the checksum", "flip in the key",
                                    "truncated", "swapped", "foreign-owned", "group-writable", "symlink"])
def test_a_plan_that_is_not_what_it_claims_is_never_run(cache, monkeypatch, damage):
  """Damage as the libraries' trust tests make it: the plan is not used (no plan hit), the graph is lowered again
  with NumPy's values, the plan rewritten. The damaged C would compile (a flip of `acc = 0` made a cumsum wrong),
  so only the checks keep it from running. swapped: another graph's valid plan copied over this one's."""
  if damage == "foreign-owned" and os.geteuid() != 0: pytest.skip("chown to another user needs root")
  assert _cumsum_realized(monkeypatch, 1.5) == (1, 0)
  (path,) = files(cache, ".plan")
  data = open(path, "rb").read()
  good = _read(path)
  src_at = data.index(b'"src":"') + 7
  if damage == "flip in the C":
    at = data.index(b" = 0;", src_at) + 3              # a loop's `= 0` made `= 1`: it compiles and skips a column
    bad = data[:at] + b"1" + data[at + 1:]
  elif damage == "flip in a slot":
    at = data.index(b'"calls":[["') + 11
    at = data.index(b",[", at) + 2
    bad = data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]     # the kernel's first buffer 0 made 1
  elif damage == "flip in the checksum": bad = bytes([data[0] ^ 0x01]) + data[1:]
  elif damage == "flip in the key": bad = data[:65] + bytes([data[65] ^ 0x01]) + data[66:]
  elif damage == "truncated": bad = data[:len(data) * 2 // 3]
  elif damage == "swapped":
    assert _realized(monkeypatch) == (1, 0)              # a softmax: another graph's plan
    (other,) = set(files(cache, ".plan")) - {path}
    bad = open(other, "rb").read()
  else: bad = data
  assert bad is data or bad != data
  _replace(path, bad)
  if damage == "foreign-owned": os.chown(path, 65534, 65534)
  elif damage == "group-writable": os.chmod(path, 0o664)
  elif damage == "symlink":
    os.replace(path, path + ".real")
    os.symlink(path + ".real", path)
  assert _cumsum_realized(monkeypatch, 1.5) == (0, 0)    # lowered again (its library is on disk)
  assert not os.path.islink(path) and os.stat(path).st_uid == os.geteuid() and _read(path) == good
  assert _cumsum_realized(monkeypatch, 2.5) == (0, 1)    # the rewritten plan serves the next process


def test_plans_of_other_backend_code_or_another_cpu_are_not_used(cache, monkeypatch):
  assert _realized(monkeypatch) == (1, 0)
  monkeypatch.setattr(plans, "_digest", ["a different backend"])
  assert _realized(monkeypatch) == (0, 0)
  monkeypatch.setattr(runtime, "_cpu", ["another CPU"])
  assert _realized(monkeypatch) == (1, 0)                # another CPU: its own library too
  assert len(files(cache, ".plan")) == 3


def test_a_plan_follows_its_program_to_tier_1(cache, monkeypatch):
  monkeypatch.setenv("MINITENSOR_TIER", "auto")
  monkeypatch.setattr(tiers, "HOT_SECONDS", 0.0)
  monkeypatch.setattr(tiers, "MAX_SPECIAL", 0)          # (tier 1 of this program, not its specialization)
  _fresh_memory(monkeypatch)
  t, want = _graph()
  np.testing.assert_allclose(np.asarray(t), want, rtol=1e-12)
  (path,) = files(cache, ".plan")
  assert _read(path)["tier"] == 0             # a small graph starts at tier 0...
  t.numpy()                                              # ...is hot at once (HOT_SECONDS = 0)...
  realize_mod.settle()
  assert _read(path)["tier"] == 1              # ...and its plan says tier 1 once that compile is done
  _fresh_memory(monkeypatch)
  t, _ = _graph()
  t.numpy()
  assert [c.tier for c in realize_mod._cache.values()] == [1]


def test_the_backend_digest_is_kept_under_the_sources_stats(cache, monkeypatch, tmp_path):
  """plans._backend_digest is the BLAKE2b of the backend's sources; a new process finds it kept under the files'
  names, sizes and modification times without reading them, and reads them again once one was written."""
  src = tmp_path / "backend"
  src.mkdir()
  (src / "a.py").write_text("x = 1\n")
  (src / "plans.py").write_text("y = 2\n")
  monkeypatch.setattr(plans, "__file__", str(src / "plans.py"))
  def digest_of_files() -> str:
    h = hashlib.blake2b(digest_size=32)
    for name in ("a.py", "plans.py"): h.update(name.encode() + b"\0" + (src / name).read_bytes() + b"\0")
    return h.hexdigest()
  monkeypatch.setattr(plans, "_digest", [])
  assert (first := plans._backend_digest()) == digest_of_files()
  assert len(files(cache, ".digest")) == 1
  monkeypatch.setattr(plans, "_digest", [])           # a new process: the kept digest, no source read
  with monkeypatch.context() as m:
    real = open
    m.setattr("builtins.open", lambda p, *a, **k: pytest.fail(f"read {p}") if str(p).endswith(".py") else
              real(p, *a, **k))
    assert plans._backend_digest() == digest_of_files()
  (src / "a.py").write_text("x = 3\n")
  st = os.stat(src / "a.py")
  os.utime(src / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
  monkeypatch.setattr(plans, "_digest", [])
  assert plans._backend_digest() == digest_of_files() != first
  assert len(files(cache, ".digest")) == 2
