"""plans: the disk cache of run plans, keyed by a graph's structure.

The libraries on disk are keyed by their C source, so a process that found no schedule in memory had to
kernelize, lower and render its graph before it could even look for one (about 250 ms for a small conv2d). A run
plan (`Plan`) is everything running a compiled schedule needs: the C source, the tier it was compiled at,
per kernel its function name, buffer slots and size arguments, the buffers to allocate and the outputs. It is
stored as JSON beside the libraries, under

    sha256(FORMAT, the digest of the backend's sources, the target CPU, the graph's structural key)

so a new process goes from the graph to its plan and from the plan's source to its library without lowering
anything. The backend digest retires every plan when the lowering code changes (an editable install keeps its
version number); the CPU is in the key because opt.py chooses for the machine. Plans live in the libraries'
directories under the same rules (private directories, atomic writes, LRU eviction within
MINITENSOR_CACHE_BYTES). A plan is code (its C is compiled and run), so it is verified as a library is: the file is
`<sha256 of the rest>\n<key>\n<JSON>` and is used only when it is a regular file (not a link) owned by this user
and writable by no one else (diskcache.read_private), its checksum matches (a bit flip, a truncation) and it names
the key it was looked up by (another key's plan copied in its place). One that fails any of these, or does not
parse or validate (Plan.from_json), is ignored, lowered again and written anew.

Tuning records (search.py) live beside them as `<key>.tune`: the Opts actions a search chose for one kernel,
under sha256(TUNE_FORMAT, the backend digest, the target CPU, the kernel's structural key), so a process on
another CPU (or with other lowering code) never reads them. While MINITENSOR_SEARCH is on, stored plans are not
used (every graph is lowered, so its new kernels are searched); the plans written then carry the winners.
"""
from __future__ import annotations
import contextlib
import json
import os
from typing import NamedTuple
import numpy as np
from minitensor.backend import diskcache, runtime, tiers
from minitensor.backend.diskcache import blake2b, sha256
from minitensor.backend.sizes import KINDS

FORMAT = "plan-5"
TUNE_FORMAT = "tune-2"
_digest: list[str] = []


def _backend_digest() -> str:
  """A digest of the backend's Python sources, once per process. Reading and hashing their 460 KB takes ~1.2 ms of a
  process's first realize (BLAKE2b; CPython's SHA-256 is 3x slower), so the digest is also kept as a plan under
  the key of the files' names, sizes and modification times (`<key>.digest`, 0.2 ms to stat): a file written since
  has other stats, and its sources are read again."""
  if not _digest:
    d = os.path.dirname(os.path.abspath(__file__))
    names = sorted(n for n in os.listdir(d) if n.endswith(".py"))
    stats = [(n, (st := os.stat(os.path.join(d, n))).st_size, st.st_mtime_ns) for n in names]
    stamp = sha256(f"sources {runtime.VERSION} {stats!r}".encode()).hexdigest()[:32]
    kept = load(stamp, ".digest")
    if kept is not None and isinstance(digest := kept.get("digest"), str) and len(digest) == 64:
      _digest.append(digest)
    else:
      h = blake2b(digest_size=32)
      for name in names:
        with open(os.path.join(d, name), "rb") as f: h.update(name.encode() + b"\0" + f.read() + b"\0")
      _digest.append(h.hexdigest())
      store(stamp, {"digest": _digest[0]}, ".digest")
  return _digest[0]


def _key(fmt: str, structural_key) -> str:
  h = sha256()
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


def encode(key: str, plan: dict) -> bytes:
  """The file holding plan under key: its checksum line, the key, the JSON."""
  body = key.encode() + b"\n" + json.dumps(plan, separators=(",", ":")).encode()
  return sha256(body).hexdigest().encode() + b"\n" + body


def decode(key: str, data: bytes) -> dict | None:
  """The plan in a file's bytes when its checksum matches and it is key's; else None."""
  digest, _, body = data.partition(b"\n")
  if digest != sha256(body).hexdigest().encode(): return None
  name, _, text = body.partition(b"\n")
  if name != key.encode(): return None
  try: plan = json.loads(text)
  except ValueError: return None
  return plan if isinstance(plan, dict) else None


def load(key: str, suffix: str = ".plan") -> dict | None:
  """The stored plan (parsed JSON) under key, or None when there is none, it is not trusted or not key's (see the
  module docstring), or a search is on (MINITENSOR_SEARCH). suffix ".tune": the tuning record under key instead
  (always read)."""
  if suffix == ".plan" and search_width(): return None
  path = _path(key, suffix)
  if (data := diskcache.read_private(path)) is None or (plan := decode(key, data)) is None: return None
  with contextlib.suppress(OSError): os.utime(path)               # recently used: last to be evicted
  return plan


def store(key: str, plan: dict, suffix: str = ".plan") -> None:
  """Write the plan (suffix ".tune": the tuning record) under key (atomically; a cache that cannot be written only
  costs a later lowering or search)."""
  with contextlib.suppress(OSError): runtime.install(_path(key, suffix), encode(key, plan))


class Call(NamedTuple):
  """One kernel call of a plan: the C function, the schedule buffers it takes (in parameter order), the loop size
  a flat kernel takes after them, what it computes (for messages), and the graph sizes a symbolic kernel takes
  last (positions in the sizes of `structure`)."""
  fn: str
  slots: tuple[int, ...]
  sizes: tuple[int, ...]
  shape: tuple[int, ...]
  dtype: str
  vars: tuple[int, ...] = ()


class Plan(NamedTuple):
  """What running a compiled schedule needs, and all it needs (the contract between lowering and running, and
  what the disk keeps: plans.py): the translation unit without the PRELUDE, the tier it is compiled at, the calls
  in order, the buffers to allocate after the inputs ((n, vars, dtype name): n times the product of those graph
  sizes elements), the buffer of each output, what its kernels need of the C compiler (lowerings.Program), and the
  sizes derived from the graph's that its kernels take after them (sizes.Sizes.table: split loops' blocks and
  tails), the lanes of its ordered reduces (sizes.order_lanes: its specializations take them), and whether it is
  built at tiers.HAND_FLAGS (it started at tier 1 with its work in hand-vectorized kernels: tiers.hand_written)."""
  src: str
  tier: int
  calls: tuple[Call, ...]
  buffers: tuple[tuple[int, tuple[int, ...], str], ...]
  outputs: tuple[int, ...]
  needs: tuple[str, ...] = ()
  derived: tuple[tuple[int, int, int], ...] = ()
  lanes: int = 0
  hand: bool = False

  def to_json(self) -> dict:
    return {"src": self.src, "tier": self.tier, "calls": [list(c) for c in self.calls],
            "buffers": [[n, list(v), d] for n, v, d in self.buffers], "outputs": list(self.outputs),
            "needs": list(self.needs), "derived": [list(x) for x in self.derived], "lanes": self.lanes,
            "hand": self.hand}

  @staticmethod
  def from_json(d: dict) -> Plan:
    """The plan stored as d; ValueError when d is not a well-formed plan (a damaged or foreign file)."""
    try:
      calls = tuple(Call(_text(c[0]), _ints(c[1]), _ints(c[2]), _ints(c[3]), _text(c[4]), _ints(c[5]))
                    for c in d["calls"])
      bufs = tuple((int(n), _ints(v), _text(t)) for n, v, t in d["buffers"])
      for _, _, t in bufs: np.dtype(t)
      needs = d["needs"]
      if not isinstance(needs, list) or any(n not in tiers.NEEDS for n in needs): raise ValueError("not a plan: needs")
      derived = tuple(_ints(x) for x in d["derived"])
      if any(len(x) != 3 or x[1] < 2 or x[2] not in KINDS for x in derived): raise ValueError("not a plan: derived")
      if type(lanes := d["lanes"]) is not int or lanes < 0: raise ValueError("not a plan: lanes")
      if type(hand := d["hand"]) is not bool: raise ValueError("not a plan: hand")
      return Plan(_text(d["src"]), int(d["tier"]), calls, bufs, _ints(d["outputs"]), tuple(needs), derived, lanes,
                  hand)
    except (KeyError, TypeError, IndexError) as e: raise ValueError(f"not a plan: {e!r}") from None


def _ints(xs) -> tuple[int, ...]:
  if not isinstance(xs, list) or any(type(x) is not int for x in xs):
    raise ValueError("not a plan: a list of ints expected")
  return tuple(xs)


def _text(x) -> str:
  if not isinstance(x, str): raise ValueError("not a plan: a string expected")
  return x
