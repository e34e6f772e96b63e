"""replay: the realize plan of a repeated graph (W9 of DESIGN.md: the dispatch cost).

A graph realized again over the same source nodes (`np.asarray(t + u)` in a loop: a fresh root, the same t and u)
runs its `Bound` plan from the fourth time on: realize looks it up by the root's op, argument, dtype and the
identities of its sources (`bound`) before it walks anything. The program, the inputs' pointers, the sizes and
every kernel's arguments were found once, so a call costs a dictionary lookup, the allocations and the kernel
calls. realize offers every program it ran for a single root (`remember`); the plan is made at the third
realization over the same sources in quick succession (a value asked for only twice makes none), so graphs over
fresh sources only leave a few weakrefs behind.

A source that broadcasts a lifted constant (a Python number: `p * i` over a loop's i, a new node every call) also
counts by its structure, in a second key (`constant_sig`, looked up when the first misses): the plan then takes
that number as an argument at each run.
"""
from __future__ import annotations
import contextlib
import functools
import math
import operator
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING
import numpy as np
from minitensor.backend import buffers, fpstatus, keys
from minitensor.backend.leaves import lifted
from minitensor.backend.runtime import pointer, stats
from minitensor.backend.sizes import extend
from minitensor.backend.uop import Ops, UOp

if TYPE_CHECKING:
  from minitensor.backend.realize import Compiled


class Bound:
  """The realize plan of one graph over particular nodes: realize([o]) of a root o with the op, argument and
  sources (the same objects) of a graph realized before, with all that does not change between such calls done
  once: no structure key, no program lookup, the inputs' pointers taken (a leaf's data never changes once set;
  a user's memory is read where it is), the buffers' sizes and each kernel's arguments computed. Only the outputs
  are allocated and the kernels run. Valid while its sources live (a source's death drops it from `bound`) and
  the nodes it computes stay uncomputed (a node realized since is a leaf of a new walk: run() then declines), and
  while its program has no specialization to start or to run for its sizes (realize does those)."""
  __slots__ = ("srcs", "fresh", "interior", "prog", "ptrs", "counts", "dtypes", "calls", "output", "keep", "pointer",
               "one", "sizes", "full", "small", "consts", "slots", "run")

  def __init__(self, o: UOp, prog: Compiled, leaves: list[UOp], inputs: list[np.ndarray], sizes: tuple[int, ...],
               keep: bool, sig: tuple):
    drop = lambda _, k=sig, plans=bound: plans.pop(k, None)    # (not a global: gone at interpreter exit)
    const = [type(k) is tuple for k in sig[4:]]          # (source_key: a broadcast lifted constant)
    self.srcs = tuple([None if c else weakref.ref(s, drop) for s, c in zip(o.src, const)])
    known = set(leaves)
    # sources and nodes below them that were computed here: held (below the sources: no source is kept alive)
    self.fresh = tuple([k for k, s in enumerate(o.src) if s not in known and not const[k]])
    self.interior = tuple([u for s, c in zip(o.src, const) if s not in known and not c for u in s.toposort(known)
                           if u not in o.src])
    # each constant source: its position and its constant's input slot. A constant also read through another
    # source (one slot for both) cannot vary alone: no plan
    inside = set(self.interior) | {u for s, c in zip(o.src, const) if not c for u in s.toposort()}
    cs = {k: _constant(s) for k, (s, c) in enumerate(zip(o.src, const)) if c}
    self.consts = tuple([(k, leaves.index(u), np.dtype(u.dtype.np)) for k, u in cs.items()])
    if any(leaves[slot] in inside for _, slot, _ in self.consts): raise ValueError("a constant read twice")
    fb, chars = pointer()
    self.pointer = functools.partial(fb, chars)
    p = self.prog = prog
    self.ptrs = [fb(chars, a, False) for a in inputs]       # (keeps the arrays, not the nodes, alive)
    self.counts = [n * math.prod([sizes[v] for v in vs]) for n, vs, _ in p.plan.buffers]
    self.dtypes = [np.dtype(d) for _, _, d in p.plan.buffers]
    # per kernel: its buffers' pointers picked from all of them, and its integer arguments
    full = self.full = extend(sizes, p.plan.derived)
    self.calls = [(_picker(c.slots), c.sizes + tuple([full[v] for v in c.vars])) for c in p.plan.calls]
    self.output = p.plan.outputs[0] - len(inputs)
    self.keep = keep                 # whether realize keeps the value on the node
    self.sizes = sizes
    # one kernel writing one buffer (an elementwise op): its arguments before and after that buffer's pointer
    self.one = None
    # a result below the pool's lending size: NumPy's own array, made here without buffers.result's test
    self.small = self.counts[0] * self.dtypes[0].itemsize < buffers.RESULT_MIN_BYTES if self.counts else False
    if len(self.counts) == 1 and len(self.calls) == 1 and (sl := p.plan.calls[0].slots).count(len(inputs)) == 1:
      k = sl.index(len(inputs))
      self.one = (tuple([self.ptrs[i] for i in sl[:k]]), tuple([self.ptrs[i] for i in sl[k + 1:]]) + self.calls[0][1])
      self.slots = (sl[:k], sl[k + 1:])
    # run(o): realize([o]) by this plan, None when the plan does not hold for o (other sources, or one since
    # realized); one kernel writing one buffer whose value is kept has a runner of its own
    self.run = self._one() if self.one is not None and self.keep else self._run

  def _one(self):
    """_run for one kernel writing one buffer and a value kept on its node (W9's a + b, `p * i`), with everything it
    reads that a run cannot change bound once: each run then does the checks, the allocation and the kernel call
    with local names only (Bound.run 2.75 -> 2.25 us in W9). A broadcast number among the sources (`p * i` over a
    loop's i) is written into a one-element array of the plan's own, whose pointer is bound in the arguments once
    (_run's new array and pointer per number and run: 5.6 -> 3.8 us); a run from another thread than the one that
    made the plan declines (realize takes its full path: two threads must not share those arrays)."""
    srcs, fresh, interior, prog, sizes = self.srcs, self.fresh, self.interior, self.prog, self.sizes
    (pre, post), (n, dt), small = self.one, (self.counts[0], self.dtypes[0]), self.small
    ptrs, full, (fb, chars) = self.ptrs, self.full, pointer()     # (not self: no cycle through run)
    empty, result, flags, clock = np.empty, buffers.result, fpstatus.FLAGS, time.perf_counter
    values: tuple = ()
    if self.consts:
      held = [np.empty(1, d) for _, _, d in self.consts]
      ptrs = list(ptrs)
      for (_, slot, _), a in zip(self.consts, held): ptrs[slot] = fb(chars, a, False)
      pre = tuple([ptrs[i] for i in self.slots[0]])
      post = tuple([ptrs[i] for i in self.slots[1]]) + self.calls[0][1]
      values = tuple([(k, a) for (k, _, _), a in zip(self.consts, held)])
    owner, here = threading.get_ident(), threading.get_ident

    def run(o: UOp) -> list[np.ndarray] | None:
      src = o.src
      for r, s in zip(srcs, src):
        if r is not None and r() is not s: return None
      for k in fresh:
        if src[k].data is not None: return None
      for u in interior:
        if u.data is not None: return None
      if prog.specializable:
        if prog.want is not None or prog.special.get(sizes): return None
        timed = True
      else: timed = prog.tier != 1
      stats.graph_hits += 1
      stats.replays += 1
      if values:
        if here() != owner: return None
        for k, a in values: a[0] = _constant(src[k]).arg
      t = clock() if timed else 0.0
      fp = flags.word
      r = empty(n, dt) if small else result(n, dt)
      prog.fns[0][0].fn(*pre, fb(chars, r, False), *post, fp)       # (read each run: the tier-1 swap replaces it)
      if fp[0]: _report(prog, o, fp, ptrs, full)
      if timed: prog.ran(t, sizes)
      else: prog.runs += 1
      if r.shape != o.shape: r = r.reshape(o.shape)
      if o._tree is not None: keys.realized(o)
      o.data = r
      return [r]
    return run

  def _run(self, o: UOp) -> list[np.ndarray] | None:
    src = o.src
    for r, s in zip(self.srcs, src):
      if r is not None and r() is not s: return None
    for k in self.fresh:
      if src[k].data is not None: return None
    for u in self.interior:
      if u.data is not None: return None
    prog = self.prog
    if prog.specializable:     # (a specialization to start, or one to run, is realize's to do)
      if prog.want is not None or prog.special.get(self.sizes): return None
      timed = True             # (Compiled.ran reads the time of these runs, and of tier 0's, only)
    else: timed = prog.tier != 1
    stats.graph_hits += 1
    stats.replays += 1
    t = time.perf_counter() if timed else 0.0
    fp = fpstatus.FLAGS.word
    ins = self.ptrs
    if self.consts:                   # (this run's numbers, each in a one-element array of its own)
      ins, held = list(ins), [np.array((_constant(src[k]).arg,), d) for k, _, d in self.consts]
      for (_, slot, _), a in zip(self.consts, held): ins[slot] = self.pointer(a)
    if (one := self.one) is not None:        # (the kernel is read from prog each time: the tier-1 swap replaces it)
      r = np.empty(self.counts[0], self.dtypes[0]) if self.small else buffers.result(self.counts[0], self.dtypes[0])
      if self.consts:
        pre, post = self.slots
        prog.fns[0][0].fn(*[ins[i] for i in pre], self.pointer(r), *[ins[i] for i in post], *self.calls[0][1], fp)
      else: prog.fns[0][0].fn(*one[0], self.pointer(r), *one[1], fp)
    else:
      out = self.output
      bufs = [buffers.result(n, d) if k == out else buffers.take(n, d)
              for k, (n, d) in enumerate(zip(self.counts, self.dtypes))]
      ptrs = ins + list(map(self.pointer, bufs))
      for (k, _, _, _), (pick, tail) in zip(prog.fns, self.calls): k.fn(*pick(ptrs), *tail, fp)
      r = bufs[out]
      buffers.give(bufs[:out] + bufs[out + 1:])
    if fp[0]: _report(prog, o, fp, ins, self.full)
    if timed: prog.ran(t, self.sizes)
    else: prog.runs += 1
    if r.shape != o.shape: r = r.reshape(o.shape)
    if self.keep:
      if o._tree is not None: keys.realized(o)
      o.data = r
    return [r]


def _report(prog: Compiled, o: UOp, fp, ins: list, full: tuple) -> None:
  """A run's floating-point flags `fp` reported as NumPy would (np.errstate's mode where o's operation was built)."""
  if fpstatus.QUIET: fpstatus.realizing((o,))
  prog.flags(fp, ins, full)
  if fpstatus.QUIET: fpstatus.realizing(None)


def _constant(s: UOp) -> UOp:
  """The CONST below a source's chain of EXPANDs and RESHAPEs (s itself when it is one)."""
  while s.op is Ops.EXPAND or s.op is Ops.RESHAPE: s = s.src[0]
  return s


def constant_sig(sig: tuple, o: UOp) -> tuple | None:
  """The key of root o's plan with its broadcast lifted constants counted by structure (source_key), or None when
  none of its sources is one (sig: the key by identities)."""
  src, keys = o.src, None
  for k, x in enumerate(src):
    if (x.op is _EXPAND or x.op is _CONST) and type(sk := source_key(x, src)) is tuple:
      if keys is None: keys = list(sig[4:])
      keys[k] = sk
  return None if keys is None else (*sig[:4], *keys)


def source_key(s: UOp, srcs: tuple[UOp, ...]):
  """A root's source as the key of its plan has it: its identity, or for a broadcast lifted constant (a Python
  number in `p * i`, realized with a new i each time) its chain of movements, its dtype and the first source
  holding the same constant (two sources of one constant are one input of the program, two constants two)."""
  chain, c = [], s
  while c.op is _EXPAND or c.op is _RESHAPE:
    chain.append((c.op, c.shape))
    c = c.src[0]
  if c.op is not _CONST or c.data is not None or not lifted(c): return id(s)
  for first, y in enumerate(srcs):
    if y is s or ((y.op is _EXPAND or y.op is _CONST) and _constant(y) is c): break
  return ("const", tuple(chain), c.dtype, first)


_EXPAND, _RESHAPE, _CONST = Ops.EXPAND, Ops.RESHAPE, Ops.CONST
_refs = sys.getrefcount


def _picker(slots: tuple[int, ...]):
  """A function of a list: the tuple of its elements at `slots`."""
  return operator.itemgetter(*slots) if len(slots) > 1 else lambda xs, k=slots[0]: (xs[k],)


bound: dict[tuple, Bound] = {}      # (tier mode, op, arg, dtype, source ids) -> plan; an entry dies with a source
_seen: dict[tuple, tuple] = {}      # the same key -> (when: realizations counted, weakrefs of the sources of the last
SEEN_SIZE = 4096                    # graph realized with it, whether it was seen twice)
# a plan is made when the same root comes back within RECENT realizations: a loop repeating it. A root met again
# only much later (a loop over i, `P[:, :, i] = p * i`, run a second time: each i's root twice in all) would pay
# for a plan (about 25 us) it never replays
RECENT = 64
_count = [0]


def remember(sig: tuple, o: UOp, prog: Compiled, leaves: list[UOp], inputs: list[np.ndarray],
             sizes: tuple[int, ...], keep: bool) -> None:
  """Keep the realize plan of o (computed by prog into a buffer of its own, not an input's array) for the next root
  over the same sources: at the third realization of such a root, each within RECENT realizations of the last (a
  value asked for twice, a mask in `r[r > 0] = r[r > 0] ** p`, makes none; graphs over fresh sources, which never
  repeat, only leave a few weakrefs in _seen). keep: whether realize keeps the value on the node. A root with a
  computed source that nothing but the root holds (`a - b`: its `-b`, built with it) keeps nothing: that source
  dies with it, so no later root has the same sources (3 us of such a realization's 25)."""
  src = o.src
  for i in range(len(src)):     # (no zip: its reused result tuple would hold a reference too)
    # (references: o.src, s, getrefcount's argument; a broadcast number counted by structure is no source)
    if (s := src[i]).data is None and s.src and type(sig[4 + i]) is not tuple and _refs(s) <= 3: return
  now = _count[0] = _count[0] + 1
  seen = _seen.get(sig)
  if seen is not None and now - seen[0] <= RECENT and all(r is None or r() is s for r, s in zip(seen[1], o.src)):
    if seen[2]:
      with contextlib.suppress(ValueError): bound[sig] = Bound(o, prog, leaves, inputs, sizes, keep, sig)
      _seen.pop(sig, None)
    else: _seen[sig] = (now, seen[1], True)
    return
  if len(_seen) >= SEEN_SIZE: _seen.clear()
  _seen[sig] = (now, tuple([None if type(k) is tuple else weakref.ref(s) for s, k in zip(o.src, sig[4:])]), False)
