"""live: a lazy value the user holds is computed once, by the first realization whose graph computes it.

A lazy root the user holds (z after `z[m] = ...`, pos after `pos = pos + v * dt`) that lies inside the graph of
another realization (the mask `abs(z) < 2`, the distances of pos) is computed there and thrown away, so the next
realization computes it again. In a loop the graph then grows by one step per iteration: each realize does more
work than the last and is a new structure, which compiles (issue 30's fractal compiled a program per step, 3 s
each at 133K elements). So a realization also realizes the held roots inside its graph, in the same call, and
they keep their values:

    written  roots with writes pending (a write is soon read: `z[m] = ...` then `abs(z)`) are realized with every
             graph that contains them
    deep     every held root is realized with a graph deeper than DEEP operations (a chain of reassignments,
             `pos = pos + v * dt`, read by a mask each step: the N-body loop)

except when a root's own chain of writes is flushed (views.WRITE_CHAIN): each chain then flushes at its own length
(two arrays updated from each other, a stencil's u and v, keep their periods; realizing the stencil's
temporaries with them made its steps 5x slower).

ROOTS holds the lazy roots deeper than HOLD made by an operation or a write (weakly: a dropped Tensor leaves it;
shallow values are not worth keeping and registering them would cost every operation), WRITTEN the roots with
pending writes.
"""
from __future__ import annotations
import contextlib
import threading
import weakref
from minitensor.backend.uop import MOVEMENT, Ops, UOp


class Held:
  """A set of Tensors held weakly, by identity (a WeakSet would compare Tensors with their elementwise ==)."""
  __slots__ = ("refs",)

  def __init__(self): self.refs: dict[int, weakref.ref] = {}
  def __bool__(self) -> bool: return bool(self.refs)
  def __iter__(self): return iter([t for r in list(self.refs.values()) if (t := r()) is not None])
  def __contains__(self, t) -> bool: return (r := self.refs.get(id(t))) is not None and r() is t
  def discard(self, t) -> None: self.refs.pop(id(t), None)

  def add(self, t) -> None:
    if (k := id(t)) not in self.refs:
      r = self.refs[k] = _Ref(t, _drop)
      r.refs, r.key = self.refs, k


class _Ref(weakref.ref):
  """A Held entry: a weakref of a Tensor that knows its set and key, so one callback serves every entry (a lambda
  made per entry cost about 0.3 us of each operation on a deep graph)."""
  __slots__ = ("refs", "key")


def _drop(r: _Ref) -> None:
  if r.refs.get(r.key) is r: del r.refs[r.key]


ROOTS = Held()
WRITTEN = Held()
DEEP = 16       # N-body (100 bodies, 100 steps): 64 -> 0.18 s, 16 -> 0.09 s, 8 -> 0.09 s (AMD EPYC Zen 5)
HOLD = DEEP // 2
_flush = threading.local()


@contextlib.contextmanager
def flushing():
  """While a root's chain of writes is flushed (held roots are then not realized with it)."""
  _flush.on = True
  try: yield
  finally: _flush.on = False


def flushing_now() -> bool: return getattr(_flush, "on", False)


def held_with(outputs: list[UOp]) -> list:
  """The held roots to realize with `outputs` (see the module docstring)."""
  if flushing_now(): return []
  if max([u.depth for u in outputs]) > DEEP: return held_in(outputs, ROOTS)
  return held_in(outputs, WRITTEN) if WRITTEN else []


def held_in(outputs: list[UOp], roots) -> list:
  """The Tensors of `roots` (lazy roots, not views) whose value is computed inside the graph of `outputs` (an
  unrealized node of it, not one of the outputs, not a movement of another value)."""
  want = {}
  outs = set(outputs)
  for t in roots:
    u = t._uop
    if t._link is None and u is not None and u.data is None and u.src and u.op not in MOVEMENT and \
        u.op is not Ops.CONST and u not in outs:
      want.setdefault(u, t)
  if not want: return []            # (a written root realized itself: no walk)
  found, seen, stack = [], set(), list(outputs)
  while stack:
    u = stack.pop()
    if u in seen or u.data is not None: continue
    seen.add(u)
    if u in want: found.append(want[u])
    stack.extend(u.src)
  return found
