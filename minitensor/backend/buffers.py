"""buffers: the memory of plans' intermediate buffers, kept between runs.

A plan's outputs are new arrays on every run (they become the caller's), but its intermediates (a convolution's
padded input, a split reduction's partials) die when the run ends. Memory the process maps anew is expensive:
each 4 KiB page faults and is zeroed on its first write, and glibc gives a freed top of its heap back to the
system, so a run that allocates and frees a few MiB maps them again every time. In a KVM guest without
transparent huge pages that cost 4-5 us per page (about 1.1 ms per MiB): 14 ms of a 30 ms conv2d went to the page
faults of its 6.6 MiB padded input (benchmarks/RESULTS.md).

So intermediates of at least MIN_BYTES come from a pool of spare arrays (`take`, by element count and dtype) and
go back to it once the kernels ran (`give`). The pool holds at most POOL_BYTES; the arrays given back longest ago
are dropped first. An array is in the pool or in one run's hands, never both (a lock guards the pool, so
threads running the same plan get different arrays). Smaller arrays come from NumPy's allocator as before.
"""
from __future__ import annotations
import os
import threading
from collections import OrderedDict
import numpy as np

MIN_BYTES = 1 << 17       # glibc's default threshold for mapping an allocation by itself
POOL_BYTES = 1 << 28      # the most spare memory the pool keeps

_spare: OrderedDict[tuple[int, np.dtype], list[np.ndarray]] = OrderedDict()
_held = 0
_lock = threading.Lock()


def take(count: int, dtype: np.dtype) -> np.ndarray:
  """A 1-d array of `count` elements of dtype with unspecified contents: a spare one when the pool has it."""
  if count * dtype.itemsize >= MIN_BYTES:
    global _held
    with _lock:
      if spare := _spare.get((count, dtype)):
        a = spare.pop()
        if not spare: del _spare[(count, dtype)]
        _held -= a.nbytes
        return a
  return np.empty(count, dtype)


def give(arrays: list[np.ndarray]) -> None:
  """Return arrays from `take` that nothing reads any more; the pool keeps those of at least MIN_BYTES."""
  global _held
  if not arrays: return                    # (most plans have no intermediates: no lock taken)
  with _lock:
    for a in arrays:
      if a.nbytes < MIN_BYTES or a.nbytes > POOL_BYTES: continue
      key = (a.size, a.dtype)
      _spare.setdefault(key, []).append(a)
      _spare.move_to_end(key)
      _held += a.nbytes
    while _held > POOL_BYTES:
      key, spare = next(iter(_spare.items()))
      _held -= spare.pop(0).nbytes
      if not spare: del _spare[key]


def held() -> int:
  """The bytes the pool keeps now."""
  return _held


def clear() -> None:
  """Drop every spare array (their memory goes back to the allocator)."""
  global _held
  with _lock:
    _spare.clear()
    _held = 0


def _after_fork() -> None:
  global _lock
  _lock = threading.Lock()       # (a fork while another thread held it would leave it held in the child)


if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_after_fork)
