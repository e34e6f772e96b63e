"""Views and writes: NumPy's observable mutation semantics over immutable graphs.

A Tensor is a *root*, which owns its value (a graph, or a realized buffer), or a *view* of a root: the root
and the chain of movement steps from the root's value to the view's. NumPy's view-making operations make
views here: basic indexing (but not an element `t[i, j]`: NumPy returns a scalar), reshape and ravel where
NumPy would not copy (decided by NumPy's stride rule on the view's strides over the root), transpose,
swapaxes, moveaxis, `.T`, `.mT`, squeeze, expand_dims, flip, and `.real`/`.imag` of a complex Tensor (a write
replaces that part of the root's elements); broadcast_to, diagonal and `.imag` of a real Tensor (zeros) make
read-only views. Everything else returns a new root.

    the value of a view     the steps applied to the root's current value, re-derived when the root's
                            version has moved since the view last looked
    a write into a root     the root's graph is replaced (a WHERE over the old value, built by
                            indexing.setitem) and its version moves on
    a write into a view     each step's inverse places the new value into its source (a functional scatter),
                            from the view back to its root, which is then written

So every later read of the root and of all its views sees a write, as with NumPy's shared memory, while a
value computed earlier keeps what it had: it captured the graph of its time. No buffer anyone else can read is
ever changed in place: realized arrays are immutable, and `np.asarray(t)` hands out read-only views of them. The
exception no one can observe: a write (basic, masked or integer-array index) into a realized root whose buffer
nothing else holds (no graph, view or array: `sole_buffer`, by reference counts) is written into that buffer by
NumPy (Tensor.__setitem__ in indexing.py), the region's cost instead of a pass over the root.

A root realizes its value once WRITE_CHAIN writes are pending on it, so a loop that mutates in place adds a
bounded amount of graph per iteration.

Threads: a write reads its root's value, builds the new one and assigns it; the three are one step under the lock
WRITES (held by `t[i] = v`, the in-place operators, and the in-place methods that read their destination: sort,
ufunc.at, copyto with where=, shuffle), so concurrent writes to one root, even to disjoint parts, never lose each
other. A realization keeps its buffer only if no write replaced the graph it computed meanwhile (tensor._commit,
under the same lock). One lock serves every root: a write is graph building (microseconds), and a single lock
cannot deadlock however writes and realizations nest.

`t.flags.writeable = False` (NumPy's way to make an array immutable) marks t read-only (set_writeable): writes into
t, and into views of a root so marked, raise ValueError, as NumPy's.
"""
from __future__ import annotations
import math
import sys
import threading
import weakref
from typing import TYPE_CHECKING, Callable, NamedTuple
import numpy as np
from minitensor import live as L
from minitensor import tracing as T
from minitensor.backend.leaves import is_borrowed
from minitensor.backend.uop import Ops, UOp

if TYPE_CHECKING:
  from minitensor.tensor import Tensor

WRITE_CHAIN = 16      # writes pending on one root before it is realized
WRITES = threading.RLock()    # held by every write and by every commit of a realization (module docstring)
_READONLY: dict[int, weakref.ref] = {}     # id -> Tensor made read-only by flags.writeable = False (Tensor's == is
                                           # elementwise, so no WeakSet)


def _readonly(t: Tensor) -> bool: return (r := _READONLY.get(id(t))) is not None and r() is t



def reshape_strides(shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...] | None:
  """The strides of a view reshaped to `new` without a copy (as NumPy's reshape of a view): groups of axes
  with equal products map onto each other; a group of old axes must be contiguous among itself."""
  if 0 in shape: return None
  old = [(d, t) for d, t in zip(shape, strides) if d != 1]
  out = [0] * len(new)
  oi = ni = 0
  while oi < len(old):
    while ni < len(new) and new[ni] == 1: ni += 1
    oj, nj, po, pn = oi + 1, ni + 1, old[oi][0], new[ni]
    while po != pn:
      if po < pn: po, oj = po * old[oj][0], oj + 1
      else: pn, nj = pn * new[nj], nj + 1
    if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)): return None
    t = old[oj - 1][1]
    for k in range(nj - 1, ni - 1, -1): out[k], t = (t, t * new[k]) if new[k] != 1 else (0, t)
    oi, ni = oj, nj
  return tuple(out)

class Step(NamedTuple):
  """One movement from a source value to a view of it, and the way back: bwd(source, new view) is the new
  source value (None: the view is read-only)."""
  fwd: Callable[[UOp], UOp]
  bwd: Callable[[UOp, UOp], UOp] | None


class Link:
  """A view's tie to its root: the steps from the root's value, the view's element strides over the root's
  row-major layout (NumPy's rule for reshape needs them), and the root version the view's graph is of."""
  __slots__ = ("root", "steps", "strides", "seen")

  def __init__(self, root: Tensor, steps: tuple[Step, ...], strides: tuple[int, ...], seen: int):
    self.root, self.steps, self.strides, self.seen = root, steps, strides, seen

  @property
  def readonly(self) -> bool: return any(s.bwd is None for s in self.steps)


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
  out, st = [], 1
  for s in reversed(shape):
    out.append(st)
    st *= s
  return tuple(reversed(out))


def strides_of(t: Tensor) -> tuple[int, ...]:
  """t's element strides over its root's row-major layout."""
  return t._link.strides if t._link is not None else c_strides(t.shape)


def root_of(t: Tensor) -> tuple[Tensor, tuple[Step, ...]]:
  """t's root and the steps from the root's value to t's (none when t is a root)."""
  return (t, ()) if t._link is None else (t._link.root, t._link.steps)


def _tensor(cls: type, u: UOp) -> Tensor:
  """A root Tensor of class cls (tensor.py's Tensor or a subclass: tensor.py imports this module, not the reverse)
  with graph u, made without calling a subclass's constructor (NumPy's subclasses define their own __new__)."""
  v = object.__new__(cls)
  v._uop, v._data, v._link, v._version, v._writes = u, None, None, 0, 0
  if u.depth > L.HOLD: L.ROOTS.add(v)
  if T.ACTIVE[0]: T.born(v)
  return v


def make_view(t: Tensor, step: Step, strides: tuple[int, ...], cls: type | None = None) -> Tensor:
  """A view of t through `step` (t may itself be a view: the view hangs off t's root), of t's class or `cls` (a
  subclass of Tensor, as ndarray.view(type) makes: made without calling its constructor)."""
  v = _tensor(cls or type(t), step.fwd(t.uop))
  if t._link is None: v._link = Link(t, (step,), strides, t._version)
  else: v._link = Link(t._link.root, t._link.steps + (step,), strides, t._link.seen)
  return v


def sync(t: Tensor) -> None:
  """Re-derive view t's graph from its root when the root was written (or realized) since."""
  link = t._link
  root = link.root
  if root._version != link.seen:
    u = root.uop
    for s in link.steps: u = s.fwd(u)
    t._uop, t._data = u, None
    link.seen = root._version


def write(t: Tensor, value: UOp) -> None:
  """Make `value` (of t's shape and dtype) the value of t: of its root, when t is a view, so that the root and
  every view of it see the write."""
  link = t._link
  if _readonly(t) or (link is not None and _readonly(link.root)):
    raise ValueError(f"assignment destination is read-only (flags.writeable is False, shape {t.shape})")
  if link is None: return assign(t, value)
  if link.readonly:
    raise ValueError(f"assignment destination is read-only (a broadcast, diagonal or real .imag view, shape {t.shape})")
  vals = [link.root.uop]
  for s in link.steps[:-1]: vals.append(s.fwd(vals[-1]))
  for s, src in zip(reversed(link.steps), reversed(vals)): value = s.bwd(src, value)
  assign(link.root, value)


def writeable(t: Tensor) -> bool:
  """Whether writes into t are allowed (NumPy's WRITEABLE flag)."""
  link = t._link
  return not _readonly(t) and (link is None or (not link.readonly and not _readonly(link.root)))


def set_writeable(t: Tensor, flag: bool) -> None:
  """NumPy's `flags.writeable = flag`: False makes t read-only; True undoes that (ValueError for a view NumPy
  makes read-only, or of a read-only root)."""
  if not flag: _READONLY[id(t)] = weakref.ref(t, lambda _, k=id(t), held=_READONLY: held.pop(k, None))
  elif t._link is not None and (t._link.readonly or _readonly(t._link.root)):
    raise ValueError(f"cannot set WRITEABLE flag to True of this array (a read-only view, shape {t.shape})")
  else: _READONLY.pop(id(t), None)


def own_buffer(t: Tensor) -> None:
  """Before a write in place: a root whose value is a leaf's data (`mt.asarray(a)`) or a broadcast constant
  (`mt.zeros(shape)`, no writes pending) holds it as its buffer (`_data`), so a write can go into it (NumPy's zeros:
  its pages are mapped when first written)."""
  u = t._uop
  if t._link is not None or t._data is not None or u is None: return
  leaf = u.src[0] if u.op is Ops.RESHAPE else u
  if leaf.op is Ops.BUFFER and leaf.data is not None and leaf.data.shape == u.shape:
    t._data = leaf.data
    return
  if u.op is not Ops.EXPAND: return
  c = u
  while c.op in (Ops.EXPAND, Ops.RESHAPE): c = c.src[0]
  if c.op is not Ops.CONST: return
  d = u.dtype.np
  v = c.arg
  zero = v == 0 and all(math.copysign(1.0, p) > 0 for p in ((v.real, v.imag) if isinstance(v, complex) else (v,)))
  t._data = np.zeros(u.shape, d) if zero else np.full(u.shape, v, d)      # (-0.0 is not np.zeros' +0.0)
  t._uop = None
  L.WRITTEN.discard(t)


def may_own(t: Tensor) -> bool:
  """Whether t is a writeable root holding a realized buffer of its own (not a user's memory), outside jit traces
  (whose writes must go through the trace's checks): a candidate for a write in place (sole_buffer decides)."""
  a = t._data
  return t._link is None and a is not None and a.flags.writeable and not is_borrowed(a) and \
    id(t) not in _READONLY and not T.ACTIVE[0]


def sole_buffer(t: Tensor):
  """t's realized buffer when nothing but t can read it, else None: no graph node holds it but t's own leaf (which
  no other node reads), and no other array, view or Python name holds it or the arrays it is a view of (counted
  by references, from the buffer up to what owns the memory). A write into it in place is then a write no one
  can tell from replacing t's value, as this module otherwise does."""
  a, u, leaf = t._data, t._uop, None
  if u is not None:               # (references to u: t._uop, this frame, getrefcount's argument)
    leaf = u.src[0] if u.op is Ops.RESHAPE else u
    if leaf.op is not Ops.BUFFER or leaf.data is not a or sys.getrefcount(u) > 3 + (leaf is u): return None
    if leaf is not u and sys.getrefcount(leaf) > 3: return None        # (u.src, this frame, the argument)
  if sys.getrefcount(a) > 3 + (leaf is not None): return None          # (t._data, this frame, the argument, leaf.data)
  x = a.base
  while x is not None:            # (its child's base, this frame, the argument)
    if sys.getrefcount(x) > 3: return None
    x = x.base if hasattr(x, "base") else None
  return a


def wrote_in_place(t: Tensor) -> None:
  """After a write into t's sole buffer: t's views re-derive, and t's next graph gets a fresh leaf (the old leaf's
  data has changed, and no cache may take it for the old value)."""
  t._uop = None
  t._version += 1


def assign(root: Tensor, value: UOp) -> None:
  """A root's new value; realized now when WRITE_CHAIN writes are pending on it."""
  if T.ACTIVE[0]: T.check_write(root)
  root._uop, root._data = value, None
  root._version += 1
  root._writes += 1
  if value.depth > L.HOLD: L.ROOTS.add(root)
  L.WRITTEN.add(root)
  if root._writes >= WRITE_CHAIN:
    with L.flushing(): root.realize()


def reshaped(t: Tensor, shape: tuple[int, ...]) -> Tensor:
  """t.reshape(shape) as NumPy does it: a view when the strides allow one, else a new root (a copy)."""
  # (a root is row-major: its reshape's strides are the new shape's own)
  st = c_strides(shape) if t._link is None or 0 in t.shape else reshape_strides(t.shape, t._link.strides, shape)
  if st is None: return _tensor(type(t), t.uop.reshape(shape))
  return make_view(t, Step(lambda u: u.reshape(shape), lambda src, v: v.reshape(src.shape)), st)


def permuted(t: Tensor, axes: tuple[int, ...]) -> Tensor:
  st = strides_of(t)       # (the inverse permutation is found only when a write needs it)
  return make_view(t, Step(lambda u: u.permute(axes), lambda src, v: v.permute(_inverse(axes))),
                   tuple([st[a] for a in axes]))


def _inverse(p: tuple[int, ...]) -> tuple[int, ...]: return tuple(sorted(range(len(p)), key=p.__getitem__))


def flipped(t: Tensor, axes: tuple[int, ...]) -> Tensor:
  st = strides_of(t)
  return make_view(t, Step(lambda u: u.flip(axes), lambda src, v: v.flip(axes)),
                   tuple(-s if k in axes else s for k, s in enumerate(st)))


def part(t: Tensor, imag: bool) -> Tensor:
  """t.real or t.imag of a complex t, as NumPy's writable view of that part."""
  op = Ops.IMAG if imag else Ops.REAL
  def bwd(src: UOp, v: UOp) -> UOp:
    return UOp(Ops.CMPLX, (UOp(Ops.REAL, (src,)), v) if imag else (v, UOp(Ops.IMAG, (src,))))
  return make_view(t, Step(lambda u: UOp(op, (u,)), bwd), strides_of(t))


def readonly_view(t: Tensor, fwd: Callable[[UOp], UOp], strides: tuple[int, ...]) -> Tensor:
  """A view NumPy makes read-only (broadcast_to, diagonal): reads follow t, writes raise ValueError."""
  return make_view(t, Step(fwd, None), strides)
