"""buffers: the memory of plans' intermediates and results, kept between runs.

A plan's intermediates (a convolution's padded input, a split reduction's partials) die when the run ends, and
its results when the caller drops them. Memory the process maps anew is expensive:
each 4 KiB page faults and is zeroed on its first write, and glibc gives a freed top of its heap back to the
system, so a run that allocates and frees a few MiB maps them again every time. In a KVM guest without
transparent huge pages that cost 4-5 us per page (about 1.1 ms per MiB): 14 ms of a 30 ms conv2d went to the page
faults of its 6.6 MiB padded input (benchmarks/RESULTS.md).

So intermediates of at least MIN_BYTES come from a pool of spare arrays (`take`, by element count and dtype) and
go back to it once the kernels ran (`give`). The pool holds at most POOL_BYTES; the arrays given back longest ago
are dropped first. An array is in the pool or in one run's hands, never both (a lock guards the pool, so
threads running the same plan get different arrays). Smaller arrays come from NumPy's allocator as before.

Results (`result`) of at least RESULT_MIN_BYTES are pool arrays lent out: the caller gets an ndarray view whose
base is a `Lease` of the pool array, and when the last view of it dies (NumPy keeps the base alive while any view
lives) the lease returns the array. So memory is reused only once nothing can read it. A loop computing a 16 MiB
result while NumPy's own temporaries come and go maps no new pages (W3 interleaved with NumPy work: 1.2-1.6 ->
0.7 ms, AMD EPYC Zen 5, benchmarks/bench_pool.py). The lease's finalizer runs wherever the last reference dies (any
thread, inside the garbage collector): it only appends to `_returned`, which `take` and `give` move into the pool
under the lock.
"""
from __future__ import annotations
import os
import threading
from collections import OrderedDict, deque
import numpy as np

MIN_BYTES = 1 << 17       # glibc's default threshold for mapping an allocation by itself
POOL_BYTES = 1 << 28      # the most spare memory the pool keeps
# results from RESULT_MIN_BYTES are lent (leasing costs about 2 us a result). Below 1 MiB it depends on glibc's state
# whether a freed result's pages stay mapped: its dynamic thresholds rise only after NumPy frees a large array, and
# until then a process of minitensor work gives its heap's top back at every free (3 brk calls per W1 N=256 call,
# 410 us against 280 us with the result lent, Sapphire Rapids); W1 and W8 in run.py's process, where NumPy's work
# had raised them, ran at the same time either way
RESULT_MIN_BYTES = MIN_BYTES

_spare: OrderedDict[tuple[int, np.dtype], list[np.ndarray]] = OrderedDict()
_held = 0
_lock = threading.Lock()
_returned: deque = deque()   # arrays whose lease ended, not yet in the pool (appending needs no lock)
# id -> (pool array, its __array_interface__) of the arrays lent since they came from NumPy; the entry holds the array,
# so its id is not reused while it stands, and goes when the pool drops the array
_faces: dict[int, tuple[np.ndarray, dict]] = {}


def take(count: int, dtype: np.dtype) -> np.ndarray:
  """A 1-d array of `count` elements of dtype with unspecified contents: a spare one when the pool has it."""
  if count * dtype.itemsize >= MIN_BYTES:
    global _held
    with _lock:
      if _returned: _keep_returned()
      if spare := _spare.get((count, dtype)):
        a = spare.pop()
        if not spare: del _spare[(count, dtype)]
        _held -= a.nbytes
        return a
  return np.empty(count, dtype)


def give(arrays: list[np.ndarray]) -> None:
  """Return arrays from `take` that nothing reads any more; the pool keeps those of at least MIN_BYTES."""
  if not arrays: return                    # (most plans have no intermediates: no lock taken)
  with _lock: _keep(arrays)


def _keep(arrays) -> None:
  """Put arrays into the pool (the lock held), dropping the oldest spares beyond POOL_BYTES."""
  global _held
  for a in arrays:
    if a.nbytes < MIN_BYTES or a.nbytes > POOL_BYTES:
      _faces.pop(id(a), None)
      continue
    key = (a.size, a.dtype)
    _spare.setdefault(key, []).append(a)
    _spare.move_to_end(key)
    _held += a.nbytes
  while _held > POOL_BYTES:
    key, spare = next(iter(_spare.items()))
    _held -= (a := spare.pop(0)).nbytes
    _faces.pop(id(a), None)
    if not spare: del _spare[key]


def _keep_returned() -> None:
  arrays = []
  while _returned: arrays.append(_returned.popleft())
  _keep(arrays)


class Lease:
  """The owner of a pool array lent as a result: results are views with this as their base; when the last dies,
  so does the lease, and the array goes back (to `_returned`, then the pool)."""
  __slots__ = ("raw", "__array_interface__")

  def __init__(self, raw: np.ndarray):
    self.raw = raw
    # (an array's interface never changes: it is made once per pool array, 2.4 -> 0.7 us a lease)
    if (f := _faces.get(id(raw))) is None: f = _faces[id(raw)] = (raw, raw.__array_interface__)
    self.__array_interface__ = f[1]

  def __del__(self):
    _returned.append(self.raw)


def result(count: int, dtype: np.dtype) -> np.ndarray:
  """A new 1-d array of `count` elements of dtype for a result (unspecified contents): a lent pool array when it
  has at least RESULT_MIN_BYTES, else NumPy's."""
  if count * dtype.itemsize < RESULT_MIN_BYTES: return np.empty(count, dtype)
  return np.asarray(Lease(take(count, dtype)))


def held() -> int:
  """The bytes the pool keeps now (with the results returned since the last take or give)."""
  with _lock:
    if _returned: _keep_returned()
    return _held


def clear() -> None:
  """Drop every spare array (their memory goes back to the allocator)."""
  global _held
  with _lock:
    _spare.clear()
    _returned.clear()
    _faces.clear()
    _held = 0


def _after_fork() -> None:
  global _lock
  _lock = threading.Lock()       # (a fork while another thread held it would leave it held in the child)


if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_after_fork)
