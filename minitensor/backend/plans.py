"""plans: the disk cache of run plans, keyed by a graph's structure.

The libraries on disk are keyed by their C source, so a process that found no schedule in memory had to
kernelize, lower and render its graph before it could even look for one (about 250 ms for a small conv2d). A run
plan (realize.Plan) is everything running a compiled schedule needs: the C source, the tier it was compiled at,
per kernel its function name, buffer slots and size arguments, the buffers to allocate and the outputs. It is
stored as JSON beside the libraries, under

    sha256(FORMAT, the digest of the backend's sources, the target CPU, the graph's structural key)

so a new process goes from the graph to its plan and from the plan's source to its library without lowering
anything. The backend digest retires every plan when the lowering code changes (an editable install keeps its
version number); the CPU is in the key because opt.py chooses for the machine. Plans live in the libraries'
directories under the same rules (private directories, atomic writes, LRU eviction within
MINITENSOR_CACHE_BYTES); one that does not parse or validate is ignored and written anew.

Tuning records (search.py) live beside them as `<key>.tune`: the Opts actions a search chose for one kernel,
under sha256(TUNE_FORMAT, the backend digest, the target CPU, the kernel's structural key), so a process on
another CPU (or with other lowering code) never reads them. While MINITENSOR_SEARCH is on, stored plans are not
used (every graph is lowered, so its new kernels are searched); the plans written then carry the winners.
"""
from __future__ import annotations
import contextlib
import hashlib
import json
import os
from minitensor.backend import runtime

FORMAT = "plan-2"
TUNE_FORMAT = "tune-2"
_digest: list[str] = []


def _backend_digest() -> str:
  """A digest of the backend's Python sources (read once per process)."""
  if not _digest:
    h = hashlib.sha256()
    d = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(d)):
      if name.endswith(".py"):
        with open(os.path.join(d, name), "rb") as f: h.update(name.encode() + b"\0" + f.read() + b"\0")
    _digest.append(h.hexdigest())
  return _digest[0]


def _key(fmt: str, structural_key) -> str:
  h = hashlib.sha256()
  for part in (fmt, runtime.VERSION, _backend_digest(), runtime.target_cpu(), repr(structural_key)):
    h.update(part.encode())
    h.update(b"\0")
  return h.hexdigest()[:32]


def plan_key(structural_key) -> str:
  """The disk key of the plan of a graph with this structural key (realize.structure's, with its modes)."""
  return _key(FORMAT, structural_key)


def tune_key(kernel_key: str) -> str:
  """The disk key of the tuning record of a kernel with this structural key (search.kernel_key)."""
  return _key(TUNE_FORMAT, kernel_key)


def search_width() -> int:
  """MINITENSOR_SEARCH: the beam width of the Opts search (search.py), 0 (the default) for the heuristic alone;
  ValueError naming the variable for anything but a non-negative integer."""
  s = os.environ.get("MINITENSOR_SEARCH", "").strip()
  if not s: return 0
  if not s.isdigit(): raise ValueError(f"MINITENSOR_SEARCH={s!r} is not a beam width (a non-negative integer)")
  return int(s)


def _path(key: str, suffix: str = ".plan") -> str: return os.path.join(runtime.entry_dir(key), key + suffix)


def load(key: str, suffix: str = ".plan") -> dict | None:
  """The stored plan (parsed JSON) under key, or None when there is none, it is not a JSON object, or a search
  is on (MINITENSOR_SEARCH). suffix ".tune": the tuning record under key instead (always read)."""
  if suffix == ".plan" and search_width(): return None
  path = _path(key, suffix)
  try:
    with open(path, "rb") as f: data = json.loads(f.read())
  except (OSError, ValueError): return None
  if not isinstance(data, dict): return None
  with contextlib.suppress(OSError): os.utime(path)               # recently used: last to be evicted
  return data


def store(key: str, plan: dict, suffix: str = ".plan") -> None:
  """Write the plan (suffix ".tune": the tuning record) under key (atomically; a cache that cannot be written only
  costs a later lowering or search)."""
  data = json.dumps(plan, separators=(",", ":")).encode()
  with contextlib.suppress(OSError): runtime.install(_path(key, suffix), data)
