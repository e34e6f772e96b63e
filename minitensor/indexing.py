"""Indexing: NumPy's basic and advanced indexing as lazy graphs, and functional assignment.

`getitem(t, idx)` is `t[idx]` with NumPy's semantics, built from these pieces:

    int             SHRINK to one element, RESHAPE the axis away
    slice           SHRINK the window, FLIP for a negative step; a step s > 1 views the window as (c, s) with
                    RESHAPE and SHRINKs one column (the window is PADded when it would run past the axis)
    None            RESHAPE in an axis of size 1
    Ellipsis        as many full slices as the other entries leave axes
    integer arrays  realized (np.asarray), bounds-checked, negatives normalized, broadcast together to S; the
                    indexed axes are PERMUTEd to the front and gathered by one INDEX (shape S + the rest); S
                    goes where NumPy puts it: in place of the indices when they are adjacent, else in front
    boolean masks   realized and turned into integer arrays (np.nonzero's, from their flat positions: masks.py);
                    a mask of several axes indexes them merged into one, by its flat positions; a 0-d mask is an
                    axis of size 1 indexed by [0] (True) or [] (False)

When an array is present, ints and 0-d masks are advanced indices too, as in NumPy. Basic indexing only
moves data: it never copies, and reading elements of a realized tensor is answered by NumPy views without a
compile (except a strided window that needs a PAD, which those views do not cover yet). A result with no
elements is a broadcast constant.

`setitem(t, idx, value)` returns the new value of t; `t[idx] = value` rebinds t to it. Unlike NumPy, whose
views share memory with their base, assignment is functional: tensors computed from t before the assignment,
earlier `t[...]` results included, keep their old values. The value is broadcast to the shape of t[idx] and
cast to t's dtype (as NumPy's assignment: floats into integers truncate). Then

    basic indices     the value is moved back into t's shape by the inverse movements (FLIP; un-striding by
                      RESHAPE + PAD; PAD into the window) and selected by WHERE with a boolean region built
                      by the same movements from a constant True
    advanced indices  NumPy computes, from the concrete indices, an inverse map inv[position in t] = flat
                      position in the value, or -1, by assigning the value's positions through the same
                      index arrays (so a repeated index resolves as NumPy resolves it); the result is
                      where(inv >= 0, value.INDEX(inv), t). The map holds t.size integers.

Only WHERE combines old and new values, so every value, -0.0 and NaN included, is kept bit for bit. Each
assignment adds a WHERE on top of t's graph: realize t now and then in a long loop of small assignments.
"""
from __future__ import annotations
import functools
import operator
import weakref
from typing import Any, NamedTuple
import numpy as np
from minitensor import tracing as T
from minitensor import ufuncs as U
from minitensor import views as V
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.leaves import buffer_of
from minitensor.backend.uop import MOVEMENT, Ops, UOp, prod
from minitensor.masks import Mask, mask_of, merged, whole_mask
from minitensor.tensor import Tensor, asarray, tensor_methods

_BAD = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays are "
        "valid indices")
_ADVANCED = ("int", "arr", "bool0")


class _Plan(NamedTuple):
  """A slice of one axis: result element k is position b + col + k*s of the axis (k reversed when rev),
  read as column col of the (c, s) view of positions [b, b + c*s); positions past the axis are padding."""
  b: int
  col: int
  c: int
  s: int
  rev: bool


class _Entry(NamedTuple):
  """One axis of the view (t's shape with a size-1 axis per None and per 0-d mask) and what indexes it.

  kind is "new" (None), "slice" (val: the slice), "int" (val: the index, non-negative), "arr" (val: an int64
  ndarray, non-negative) or "bool0" (val: the 0-d mask); pos is the place in the index it comes from (the
  axes of a mask or an Ellipsis share one); plan is set for "slice" and "int"."""
  kind: str
  val: Any
  pos: int
  plan: _Plan | None = None


def _plan(sl: slice, n: int) -> _Plan:
  """The plan of slice sl of an axis of size n; the column is chosen so the window stays inside when it can."""
  start, stop, step = sl.indices(n)
  c = len(range(start, stop, step))
  if c == 0: return _Plan(0, 0, 0, 1, False)
  s = abs(step) if c > 1 else 1
  lo = start if step > 0 else start - (c - 1) * s
  col = min(lo, max(0, lo + c * s - n))
  return _Plan(lo - col, col, c, s, step < 0 and c > 1)


def _item(x) -> Any:
  """One entry of an index as None, Ellipsis, slice, int, bool (a 0-d mask) or an integer or boolean ndarray."""
  if x is None or x is Ellipsis or isinstance(x, slice): return x
  if isinstance(x, (bool, np.bool_)): return bool(x)
  if isinstance(x, (int, np.integer)): return int(x)
  if type(x) is Mask: return x
  if isinstance(x, Tensor) and x.ndim and x.dtype == np.bool_: return mask_of(x)
  if isinstance(x, (list, tuple, range, np.ndarray, Tensor)):    # a range is a sequence of ints, as in NumPy
    a, seq = np.asarray(x), isinstance(x, (list, tuple, range))
    if seq and a.size == 0 and a.dtype.kind == "f": a = a.astype(np.int64)
    if a.dtype.kind == "b": return bool(a) if a.ndim == 0 else Mask(a.shape, a)
    if a.dtype.kind not in "iu":
      raise IndexError(_BAD if seq else "arrays used as indices must be of integer (or boolean) type")
    return int(a) if a.ndim == 0 else a
  try: return operator.index(x)
  except TypeError: raise IndexError(_BAD) from None


def _items(idx) -> list:
  """An index as its entries, each converted by _item."""
  return [_item(x) for x in (idx if type(idx) is tuple else (idx,))]


def _check_int(i: int, ax: int, n: int) -> int:
  if not -n <= i < n: raise IndexError(f"index {i} is out of bounds for axis {ax} with size {n}")
  return i + n if i < 0 else i


def _check_array(a: np.ndarray, ax: int, n: int) -> np.ndarray:
  """a bounds-checked against an axis of size n, as int64 with negatives wrapped."""
  bad = (a >= n) if a.dtype.kind == "u" else (a < -n) | (a >= n)
  if bad.any(): raise IndexError(f"index {a[bad].flat[0]} is out of bounds for axis {ax} with size {n}")
  a = a.astype(np.int64)
  return np.where(a < 0, a + n, a)


def _parse(shape: tuple[int, ...], items: list) -> list[_Entry]:
  """An index (its items, from _items) as one entry per axis of the view of `shape`; NumPy's IndexError for any
  bad index."""
  if sum(x is Ellipsis for x in items) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
  used = sum(0 if x is None or x is Ellipsis or type(x) is bool
             else x.ndim if type(x) is Mask
             else 1 for x in items)
  if used > len(shape):
    raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {used} were indexed")
  if not any(x is Ellipsis for x in items): items.append(Ellipsis)
  out: list[_Entry] = []
  ax = 0
  for pos, x in enumerate(items):
    if x is None: out.append(_Entry("new", None, pos))
    elif type(x) is bool: out.append(_Entry("bool0", x, pos))
    elif x is Ellipsis:
      out += [_Entry("slice", slice(None), pos, _Plan(0, 0, shape[a], 1, False))
              for a in range(ax, ax + len(shape) - used)]
      ax += len(shape) - used
    elif isinstance(x, slice): out.append(_Entry("slice", x, pos, _plan(x, shape[ax]))); ax += 1
    elif isinstance(x, int):
      i = _check_int(x, ax, shape[ax])
      out.append(_Entry("int", i, pos, _Plan(i, 0, 1, 1, False))); ax += 1
    elif type(x) is Mask:
      for j, (m, n) in enumerate(zip(x.shape, shape[ax:])):
        if m != n:
          raise IndexError(f"boolean index did not match indexed array along axis {ax + j}; "
                           f"size of axis is {n} but size of corresponding boolean axis is {m}")
      out += [_Entry("arr", i, pos) for i in x.indices]; ax += x.ndim
    else: out.append(_Entry("arr", _check_array(x, ax, shape[ax]), pos)); ax += 1
  return out


def _view_shape(shape: tuple[int, ...], entries: list[_Entry]) -> tuple[int, ...]:
  it = iter(shape)
  return tuple(1 if e.kind in ("new", "bool0") else next(it) for e in entries)


def _is_advanced(entries: list[_Entry]) -> bool: return any(e.kind in ("arr", "bool0") for e in entries)


# ---------------------------------------------------------------------- movement along one axis
def _shrink(x: UOp, ax: int, b: int, e: int) -> UOp:
  return x.shrink(tuple((b, e) if k == ax else (0, m) for k, m in enumerate(x.shape)))


def _pad(x: UOp, ax: int, b: int, a: int, fill=0) -> UOp:
  return x.pad(tuple((b, a) if k == ax else (0, 0) for k in range(len(x.shape))), fill)


def _resize(x: UOp, ax: int, k: int, sizes: tuple[int, ...]) -> UOp:
  """x with its axes ax..ax+k-1 replaced by axes of `sizes` (same element count, row-major)."""
  return x.reshape(x.shape[:ax] + sizes + x.shape[ax + k:])


def _plans(entries: list[_Entry], ints: bool) -> dict[int, _Plan]:
  """The plan of every sliced axis (and of every int axis, with ints=True)."""
  return {k: e.plan for k, e in enumerate(entries) if e.kind == "slice" or (ints and e.kind == "int")}


def _take_all(x: UOp, entries: list[_Entry]) -> UOp:
  """The view x with every slice (and, in basic indexing, every int) applied; ints keep a size-1 axis.

  Per axis: the window [b, b + c*s) (padded where it runs past the axis), viewed as (c, s) to keep one column
  when s > 1, reversed for a negative step. The windows of all axes are one SHRINK and one PAD."""
  plans = _plans(entries, not _is_advanced(entries))
  if not plans: return x
  ends = {k: min(p.b + p.c * p.s, x.shape[k]) for k, p in plans.items()}
  x = x.shrink(tuple((plans[k].b, ends[k]) if k in plans else (0, m) for k, m in enumerate(x.shape)))
  stepped = [(k, p) for k, p in plans.items() if p.s > 1 or p.rev]
  if not stepped: return x
  x = x.pad(tuple((0, p.b + p.c * p.s - ends[k]) if (p := plans.get(k)) else (0, 0) for k in range(len(x.shape))))
  for k, p in stepped:
    if p.s > 1: x = _resize(_shrink(_resize(x, k, 1, (p.c, p.s)), k + 1, p.col, p.col + 1), k, 2, (p.c,))
  return x.flip(tuple(k for k, p in stepped if p.rev))


def _put_all(v: UOp, entries: list[_Entry], view: tuple[int, ...], fill) -> UOp:
  """The inverse of _take_all in basic indexing: v (the taken shape) placed where the plans select in `view`,
  fill elsewhere."""
  plans = _plans(entries, True)
  if any(p.s > 1 or p.rev for p in plans.values()):
    v = v.flip(tuple(k for k, p in plans.items() if p.rev))
    for k, p in plans.items():
      if p.s > 1: v = _resize(_pad(_resize(v, k, 1, (p.c, 1)), k + 1, p.col, p.s - 1 - p.col, fill), k, 2, (p.c * p.s,))
  ends = {k: min(p.b + p.c * p.s, view[k]) for k, p in plans.items()}
  v = v.shrink(tuple((0, ends[k] - plans[k].b) if k in plans else (0, m) for k, m in enumerate(v.shape)))
  return v.pad(tuple((plans[k].b, view[k] - ends[k]) if k in plans else (0, 0) for k in range(len(view))), fill)


_MASKS: dict = {}        # the region masks of recent basic assignments (a loop assigns the same region each time)


def _region_mask(entries: list[_Entry], view: tuple[int, ...], sliced: tuple[int, ...]) -> UOp:
  """True where a basic index selects, in the view's shape."""
  key = (view, tuple((e.kind, e.plan) for e in entries))
  if (m := _MASKS.get(key)) is None:
    if len(_MASKS) >= 1024: _MASKS.clear()
    m = _MASKS[key] = _put_all(UOp.const(True).reshape((1,) * len(sliced)).expand(sliced), entries, view, False)
  return m


def _taken_shape(view: tuple[int, ...], entries: list[_Entry]) -> tuple[int, ...]:
  """The shape of _take_all(x of shape view, entries), without building it."""
  plans = _plans(entries, not _is_advanced(entries))
  return tuple(plans[k].c if k in plans else m for k, m in enumerate(view))


def _zeros(shape: tuple[int, ...], d: DType) -> UOp:
  return UOp.const(0, d).reshape((1,) * len(shape)).expand(shape) if shape else UOp.const(0, d)


# ---------------------------------------------------------------------- advanced indexing
def _arrays(entries: list[_Entry]) -> tuple[list[int], list[np.ndarray], tuple[int, ...], bool]:
  """(view axes of the advanced entries, their index arrays, the shape S they broadcast to, whether S goes in
  front). NumPy's rule: S replaces the advanced indices when they are adjacent in the index, else goes in
  front; anything between them separates them, even an Ellipsis that stands for no axis."""
  adv = [k for k, e in enumerate(entries) if e.kind in _ADVANCED]
  arrays = [np.zeros(int(e.val), np.int64) if e.kind == "bool0" else np.asarray(e.val, np.int64)
            for e in (entries[k] for k in adv)]
  try: S = np.broadcast_shapes(*(a.shape for a in arrays))
  except ValueError:
    raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes " +
                     " ".join(str(a.shape).replace(" ", "") for a in arrays)) from None
  pos = sorted({entries[k].pos for k in adv})
  return adv, arrays, S, pos != list(range(pos[0], pos[0] + len(pos)))


def _advanced_shape(x_shape: tuple[int, ...], adv: list[int], S: tuple[int, ...], front: bool) -> tuple[int, ...]:
  rest = tuple(m for k, m in enumerate(x_shape) if k not in adv)
  p = 0 if front else adv[0]
  return rest[:p] + S + rest[p:]


def _gather(x: UOp, adv: list[int], arrays: list[np.ndarray], S: tuple[int, ...], front: bool) -> UOp:
  """x[arrays on axes adv] by one INDEX: index axes permuted to the front, S moved to NumPy's place."""
  rest = [k for k in range(len(x.shape)) if k not in adv]
  # (the index arrays are this module's own, made for this index or a mask's kept read-only: leaves without a copy)
  idx = [_leaf(a).reshape((1,) * (len(S) - a.ndim) + a.shape).expand(S) for a in arrays]
  g = x.permute(tuple(adv + rest)).index(*idx)
  if front: return g
  m, p = len(S), adv[0]
  return g.permute(tuple(range(m, m + p)) + tuple(range(m)) + tuple(range(m + p, m + len(rest))))


def _leaf(a: np.ndarray) -> UOp:
  """A graph leaf holding `a`, an array of this module's own (no copy: nothing writes it). A read-only one (a kept
  mask's positions) is one leaf while it lives: the gathers of one mask (`z[m] ** 2 + c[m]`) read one buffer."""
  if a.flags.writeable: return buffer_of(a).reshape(a.shape)
  if (r := _LEAVES.get(id(a))) is not None and (u := r()) is not None and u.data is a: return u.reshape(a.shape)
  u = buffer_of(a)
  if u.data is a:                    # (the leaf holds a, so its id names a while the entry's leaf lives)
    if len(_LEAVES) >= 256: _LEAVES.clear()
    _LEAVES[id(a)] = weakref.ref(u)
  return u.reshape(a.shape)


_LEAVES: dict[int, weakref.ref] = {}      # id of a read-only index array -> its leaf (weakly)


# ---------------------------------------------------------------------- public
def getitem(t: Tensor, idx) -> Tensor:
  """t[idx] with NumPy's semantics, lazily.

  Parameters
  ----------
  t : Tensor
  idx : int, slice, None, Ellipsis, sequence/ndarray/Tensor of integers or booleans, or a tuple of these

  Returns
  -------
  Tensor
      A view-like result built from movement ops (basic indexing) or a gather (advanced indexing). Index
      arrays and masks are realized now; bad indices raise IndexError (NumPy's messages) at the call.
  """
  if (b := _basic(t.shape, idx)) is not None:
    if b.element: return Tensor(_basic_get(t.uop, b))       # an element is a scalar in NumPy, not a view
    if t._link is not None: return V.make_view(t, _step(b), _basic_strides(t._link.strides, b.entries))
    if not b.root_strides: b.root_strides.append(_basic_strides(V.c_strides(t.shape), b.entries))
    return V.make_view(t, _step(b), b.root_strides[0])
  items = _items(idx)
  if (whole := _all_true(t.shape, items)) is not None: return Tensor(t.uop.reshape(whole))
  shape, items = merged(t.shape, items) or (t.shape, items)
  entries = _parse(shape, items)
  x = _take_all(t.uop.reshape(_view_shape(shape, entries)), entries)
  adv, arrays, S, front = _arrays(entries)
  shape = _advanced_shape(x.shape, adv, S, front)
  return Tensor(_zeros(shape, x.dtype) if 0 in shape else _gather(x, adv, arrays, S, front))


def _all_true(shape: tuple[int, ...], items: list) -> tuple[int, ...] | None:
  """The shape t[mask] has when the index is one boolean mask of t's leading axes with every element True (a guard
  that holds everywhere: `r[r > 0]`), else None: t's elements in order, read without a gather, and written back
  without one (setitem)."""
  if len(items) != 1 or type(m := items[0]) is not Mask or m.shape != shape[:m.ndim] or m.count != prod(m.shape):
    return None
  return (m.count,) + shape[m.ndim:]


class _Basic(NamedTuple):
  """A basic index (no arrays) worked out for one shape."""
  entries: tuple[_Entry, ...]
  view: tuple[int, ...]                      # the shape with a size-1 axis per None
  taken: tuple[int, ...]                     # the view's shape after the windows (ints keep a size-1 axis)
  out: tuple[int, ...]                       # the result's shape
  window: tuple[tuple[int, int], ...] | None  # the one SHRINK that takes it, when no window is stepped or reversed
  full: bool                                 # it selects every element
  element: bool                              # an integer for every axis: NumPy returns a scalar, not a view
  step: list                                 # [views.Step of a view through it], made when first needed
  root_strides: list                         # [its view's strides over a row-major root of the shape], the same


def _step(b: _Basic) -> V.Step:
  """The view step of basic index b (kept on b: a loop indexes the same way every time)."""
  if not b.step: b.step.append(V.Step(functools.partial(_basic_get, b=b), functools.partial(_basic_set, b=b)))
  return b.step[0]


def _basic(shape: tuple[int, ...], idx) -> _Basic | None:
  """idx worked out for shape when it is a basic index, else None. Indices made of ints, slices of ints, None
  and Ellipsis are worked out once per shape (a loop indexes the same way every time)."""
  items = idx if type(idx) is tuple else (idx,)
  key = []
  for x in items:
    if type(x) is slice:
      a, b, c = x.start, x.stop, x.step
      if (a is None or type(a) is int) and (b is None or type(b) is int) and (c is None or type(c) is int):
        key.append((a, b, c))
      else: break
    elif type(x) is int or x is None or x is Ellipsis: key.append(x)
    else: break
  else: return _basic_of_key(shape, tuple(key))
  items = _items(idx)
  if any(type(x) is Mask or type(x) is bool or type(x) is np.ndarray for x in items): return None    # (advanced)
  return _make_basic(shape, _parse(shape, items), _numpy_path(idx, len(shape)) == "element")


@functools.lru_cache(maxsize=4096)
def _basic_of_key(shape: tuple[int, ...], key: tuple) -> _Basic:
  idx = tuple(slice(*x) if type(x) is tuple else x for x in key)
  return _make_basic(shape, _parse(shape, _items(idx)), _numpy_path(idx, len(shape)) == "element")


def _make_basic(shape: tuple[int, ...], entries: list[_Entry], element: bool) -> _Basic:
  view = _view_shape(shape, entries)
  taken = _taken_shape(view, entries)
  plans = [e.plan for e in entries if e.plan is not None]
  window = None if any(p.s > 1 or p.rev for p in plans) else \
    tuple((e.plan.b, e.plan.b + e.plan.c) if e.plan is not None else (0, m) for e, m in zip(entries, view))
  out = tuple(m for m, e in zip(taken, entries) if e.kind != "int")
  return _Basic(tuple(entries), view, taken, out, window,
                all(e.plan is None or e.plan.c == m for e, m in zip(entries, view)),
                element, [], [])


def _basic_get(u: UOp, b: _Basic) -> UOp:
  """u[basic index]: the view's graph."""
  if 0 in b.out: return _zeros(b.out, u.dtype)
  x = u.reshape(b.view)
  return (x.shrink(b.window) if b.window is not None else _take_all(x, b.entries)).reshape(b.out)


def _basic_set(u: UOp, v: UOp, b: _Basic) -> UOp:
  """u with the region a basic index selects replaced by v (of that region's shape): moved back into u's shape
  by the inverse movements and selected by a WHERE."""
  if 0 in b.taken: return u
  v = _put_all(v.reshape(b.taken), b.entries, b.view, 0)
  if b.full: return v.reshape(u.shape)
  return _region_mask(b.entries, b.view, b.taken).where(v, u.reshape(b.view)).reshape(u.shape)


def _basic_strides(strides: tuple[int, ...], entries: list[_Entry]) -> tuple[int, ...]:
  """The element strides of a basic index's view, from those of the indexed tensor."""
  it, out = iter(strides), []
  for e in entries:
    if e.kind == "new": out.append(0)
    elif e.kind == "bool0": continue
    else:
      st = next(it)
      if e.kind == "slice": out.append(-st * e.plan.s if e.plan.rev else st * e.plan.s)
  return tuple(out)


def _value(value, d: DType) -> UOp:
  """The assigned value as a UOp of dtype d (Python floats into integers truncate; NaN/inf raise as NumPy; a
  Python complex into a real dtype raises TypeError, other complex values keep their real part with NumPy's
  ComplexWarning)."""
  if type(value) is complex and not d.is_complex:
    raise TypeError(f"setitem: cannot assign the Python complex {value!r} into a {d.name} Tensor")
  if isinstance(value, (bool, int, float)):
    if isinstance(value, float) and d.is_int: value = int(value)
    return U.scalar_uop(value, d, "setitem")
  v = asarray(value)
  return (v.astype(d) if v.uop.dtype.is_complex and not d.is_complex else v).uop.cast(d)


def _fit(v: UOp, shape: tuple[int, ...], advanced: bool, nested: bool) -> UOp:
  """v broadcast to the indexed region's shape. Leading size-1 axes of v may be dropped, as NumPy does,
  except for a nested sequence assigned through basic indices (NumPy converts it to at most len(shape) axes)."""
  vs = v.shape
  while len(vs) > len(shape) and vs[0] == 1 and (advanced or not nested): vs = vs[1:]
  if len(vs) > len(shape) or any(a not in (1, b) for a, b in zip(vs[::-1], shape[::-1])):
    have, want = (str(tuple(s)).replace(" ", "") for s in (v.shape, shape))
    raise ValueError(f"shape mismatch: value array of shape {have} could not be broadcast to indexing result of "
                     f"shape {want}"
                     if advanced else f"could not broadcast input array from shape {have} into shape {want}")
  return v.reshape((1,) * (len(shape) - len(vs)) + vs).expand(shape)


def _numpy_path(idx, ndim: int) -> str:
  """Which assignment path NumPy takes: "element" (an integer for every axis: the value must be a scalar),
  "mask" (one boolean array over every axis: the value has at most one dimension) or "general"."""
  items = idx if isinstance(idx, tuple) else (idx,)
  arrays = [x if isinstance(x, (np.ndarray, Tensor)) else np.asarray(x) if isinstance(x, (list, bool, np.bool_))
            else None
            for x in items]
  if len(items) == ndim and all((isinstance(x, (int, np.integer)) and not isinstance(x, bool)) or
                                (a is not None and a.ndim == 0 and a.dtype.kind in "iu")
                                for x, a in zip(items, arrays)):
    return "element"
  return "mask" if len(items) == 1 and arrays[0] is not None and arrays[0].dtype == bool and arrays[0].ndim == ndim \
    else "general"


def setitem(t: Tensor, idx, value) -> Tensor:
  """The value of t after `t[idx] = value` (NumPy's semantics); t itself is not changed.

  Parameters
  ----------
  t : Tensor
  idx : any index getitem accepts
  value : Tensor, array_like or Python scalar, broadcast to the shape of t[idx] and cast to t's dtype

  Returns
  -------
  Tensor
      A lazy tensor of t's shape and dtype. At the call, as NumPy: IndexError for a bad index; ValueError for
      a value that does not broadcast, or that is not a scalar when every axis gets an integer; TypeError for
      a value of more than one dimension through one boolean mask over every axis; OverflowError for a Python
      integer out of range for t's dtype.
  """
  b, v = _assigned(t, idx, value)
  return Tensor(_basic_set(t.uop, v, b)) if b is not None else _set_advanced(t, idx, v)


def _assigned(t: Tensor, idx, value) -> tuple[_Basic | None, UOp]:
  """The basic index (None for another) and the value as a UOp of t's dtype, fit to the region for a basic index,
  after NumPy's checks of the value."""
  b = _basic(t.shape, idx)
  v = _value(value, dtypes.from_numpy(t.dtype))      # (not t.uop: a realized root's leaf is made only when needed)
  path = _numpy_path(idx, t.ndim) if v.shape else "general"
  if path == "element":
    raise ValueError(f"setting an array element with a sequence: a value of shape {v.shape} into one element")
  if path == "mask" and len(v.shape) > 1:
    raise TypeError(f"boolean array indexing assignment requires a 0 or 1-dimensional input, input has {len(v.shape)} "
                    "dimensions")
  return (b, _fit(v, b.out, False, isinstance(value, (list, tuple)))) if b is not None else (None, v)


def _set_advanced(t: Tensor, idx, v: UOp) -> Tensor:
  items = _items(idx)
  shape, items = merged(t.shape, items) or (t.shape, items)
  entries = _parse(shape, items)
  view = _view_shape(shape, entries)
  adv, arrays, S, front = _arrays(entries)
  region = _advanced_shape(_taken_shape(view, entries), adv, S, front)
  v = _fit(v, region, True, False)
  if 0 in region: return Tensor(t.uop)
  # the map is written through a view with the advanced axes in front, so the value positions follow S + rest
  rest = [k for k in range(len(view)) if k not in adv]
  inv = np.full(view, -1, np.int32 if t.size < 2**31 else np.int64)
  pos = np.arange(prod(region), dtype=inv.dtype).reshape(region)
  if not front: pos = np.moveaxis(pos, tuple(range(adv[0], adv[0] + len(S))), tuple(range(len(S))))
  basic = tuple(entries[k].val if entries[k].kind == "slice" else slice(None) for k in rest)
  inv.transpose(adv + rest)[tuple(arrays) + basic] = pos
  iu = _leaf(inv.reshape(t.shape))
  return Tensor((iu >= 0).where(v.reshape((prod(region),)).index(iu), t.uop))


@tensor_methods
class _Indexing:
  def __getitem__(self, idx) -> Tensor:
    """self[idx] with NumPy's semantics, lazily: getitem."""
    return getitem(self, idx)

  def __setitem__(self, idx, value) -> None:
    """NumPy's assignment: the root of self (and so every view of it) holds the new values from now on."""
    with V.WRITES:
      if (isinstance(idx, Tensor) or type(idx) is np.ndarray) and idx.dtype == np.bool_ and idx.ndim and \
          (value.ndim if isinstance(value, (Tensor, np.ndarray)) else np.ndim(value)) and \
          (whole := _all_true(self.shape, [_item(idx)])) is not None:
        # an array through a mask True everywhere (`r[r > 0] = r[r > 0] ** -1.5` where r > 0 holds): the value is
        # t's new value, lazily, however t is held (a scalar goes below: _masked_fill needs no mask values)
        V.write(self, _fit(_assigned(self, idx, value)[1], whole, True, False).reshape(self.shape))
        return
      if not T.ACTIVE[0]: V.own_buffer(self)
      where = _numpy_index(self, idx) if not T.ACTIVE[0] and V.may_own(self) else None
      if where is not None and type(value) is Tensor and value._link is None and value._data is None:
        value._value()      # the right-hand side first, as NumPy: its graph (which may read self) is let go
      if where is not None and (a := V.sole_buffer(self)) is not None:
        # t[idx] = value into t's own buffer when nothing but t can read it (views.sole_buffer): NumPy's own
        # assignment, its checks, casts and errors included. A history written one slice per step
        # (`P[:, :, i] = p * i`) costs the slice, not a pass over P; a masked update (`n[m] = i`) the masked elements
        val = np.asarray(value) if isinstance(value, Tensor) else value
        if (flat := whole_mask(self, idx)) is not None and a.flags.c_contiguous and np.ndim(val) <= 1:
          a.reshape(-1)[flat] = val       # (NumPy's boolean assignment is several times slower than by positions)
        else: a[where] = val
        V.wrote_in_place(self)
        return
      if (filled := _masked_fill(self, idx, value)) is not None:
        V.write(self, filled)
        return
      b, v = _assigned(self, idx, value)
      if where is not None and (b is None or 0 not in b.taken):
        # t's buffer is read elsewhere: v computed (a realization, which may also compute held roots whose graphs
        # read t's buffer: then it is t's alone, and written in place), else t's new value is a graph over v
        constant = _broadcast_constant(v)
        val = Tensor(v)._value()
        if not constant: v = None
        if (a := V.sole_buffer(self)) is not None:
          a[where] = val
          V.wrote_in_place(self)
          return
        if v is None: v = buffer_of(np.ascontiguousarray(val)).reshape(val.shape)
      V.write(self, Tensor(_basic_set(self.uop, v, b)).uop if b is not None else _set_advanced(self, idx, v).uop)


def _masked_fill(t: Tensor, idx, value) -> UOp | None:
  """t's value after `t[mask] = scalar` as where(mask, scalar, t), when idx is one boolean mask (a Tensor, or an
  ndarray, copied: NumPy reads it now) of t's leading axes and value a scalar, else None: no positions found, no
  realization, and the mask's graph fuses into the next kernel that reads t (scikit-learn's `scale[mask] = 1.0`).
  NumPy's values: the masked elements get the value cast as _value casts it."""
  if not (isinstance(idx, Tensor) or type(idx) is np.ndarray) or idx.dtype != np.bool_: return None
  if not 1 <= idx.ndim <= t.ndim or tuple(idx.shape) != t.shape[:idx.ndim]: return None
  if not (isinstance(value, (bool, int, float, complex, np.generic)) or
          (isinstance(value, (np.ndarray, Tensor)) and value.ndim == 0)): return None
  v = _value(value, dtypes.from_numpy(t.dtype))
  m = idx.uop if isinstance(idx, Tensor) else _leaf(np.array(idx))
  m = m.reshape(tuple(idx.shape) + (1,) * (t.ndim - idx.ndim)).expand(t.shape)
  return m.where(v.reshape((1,) * t.ndim).expand(t.shape), t.uop)


def _numpy_index(t: Tensor, idx):
  """idx as NumPy indexes t's buffer with it (Tensors among its items as their values), or None when an item is
  not one of NumPy's index types (the write then goes through the graph)."""
  if _basic(t.shape, idx) is not None: return idx
  items = idx if type(idx) is tuple else (idx,)
  out = []
  for x in items:
    if isinstance(x, Tensor): x = x._value()
    elif not (x is None or x is Ellipsis or isinstance(x, (int, slice, np.ndarray, list, np.integer, np.bool_))):
      return None
    out.append(x)
  return tuple(out) if type(idx) is tuple else out[0]


def _broadcast_constant(u: UOp) -> bool:
  """Whether u only moves a constant (a Python number assigned to a region)."""
  while u.op in MOVEMENT: u = u.src[0]
  return u.op is Ops.CONST
