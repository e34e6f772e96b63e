"""Ufuncs as objects, as NumPy's: `mt.add` is a `ufunc` with `__call__` (out=, where=, dtype=, casting=), `reduce`,
`accumulate`, `outer`, `reduceat`, `at`, and NumPy's `nin nout nargs identity types ntypes signature __name__`.

Each object wraps the NumPy ufunc it mirrors (its oracle for loop dtypes, casting errors and identities) and the
minitensor function that computes it (`impl`: the ufunc table through apply_ufunc, or a composite such as hypot).
Every method stays lazy:

    __call__             impl, inputs first cast to NumPy's loop when dtype= or casting= asks; out= is written in
                         place (interop.copyto: its aliases and views see it) under the casting rule
    reduce               add multiply maximum minimum logical_and logical_or: Tensor.sum prod max min all any;
                         fmax fmin: max/min over NaN replaced by -inf/+inf (NaN where a slice is all NaN); other
                         reorderable ufuncs (NumPy's: commutative and associative) a balanced tree of lazy ops over
                         halves of the axis; the rest a left fold over the axis (as NumPy's loop), the accumulator
                         realized every FOLD_CHUNK steps so the graph stays bounded
    accumulate           add multiply maximum minimum logical_and logical_or: one SCAN; reorderable ufuncs the
                         Hillis-Steele scan (log2(n) lazy steps over shifted slices); the rest the prefixes of the
                         left fold, stacked
    outer                __call__ of A reshaped to A.shape + (1,) * B.ndim with B
    reduceat             a reduce per segment, joined
    at                   NumPy's unbuffered in-place operation on the realized values, written back (interop.ufunc_at)

The result dtype of reduce/accumulate/reduceat is the one NumPy gives for the input's dtype (asked of NumPy on a
one-element array: add.reduce of int8 is int64, bitwise_and.reduce stays int8), and the input is cast to it first,
as NumPy's loop does. `np.add.reduce(t)` and `np.subtract.outer(t, t)` reach these methods through
Tensor.__array_ufunc__ (interop.py).
"""
from __future__ import annotations
import inspect
import numpy as np
from minitensor.backend.uop import Ops
from minitensor.creation import full
from minitensor.interop import copyto, to_numpy, ufunc_at
from minitensor.manipulation import concatenate
from minitensor.numpy_rules import broadcast_shapes, normalize_axes
from minitensor.tensor import Tensor, apply_ufunc, asarray
from minitensor.tensor import where as select

__all__ = ["ufunc"]

FOLD_CHUNK = 32       # left-fold steps recorded before the accumulator is realized
_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")
# NumPy's reorderable binary ufuncs (commutative and associative: reduce accepts several axes)
REORDERABLE = frozenset([np.add, np.multiply, np.maximum, np.minimum, np.fmax, np.fmin, np.logical_and,
                         np.logical_or, np.logical_xor, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.gcd, np.lcm])
_REDUCE = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min", np.logical_and: "all",
           np.logical_or: "any"}
_SCAN = {np.add: "cumsum", np.multiply: "cumprod", np.maximum: "max", np.minimum: "min", np.logical_and: "min",
         np.logical_or: "max"}
_KW = {"out": None, "where": True, "casting": "same_kind", "order": "K", "dtype": None, "subok": True,
       "signature": None}


def _signature(nin: int, nout: int) -> inspect.Signature:
  P = inspect.Parameter
  names = ["x"] if nin == 1 else [f"x{k + 1}" for k in range(nin)]
  params = [P(n, P.POSITIONAL_ONLY) for n in names] + [P("out", P.POSITIONAL_OR_KEYWORD, default=None)]
  params += [P(k, P.KEYWORD_ONLY, default=v) for k, v in _KW.items() if k != "out"]
  return inspect.Signature(params)


def _outs(out, nout: int, name: str) -> tuple | None:
  """out= as NumPy takes it (an array, or a tuple of nout arrays or Nones) as a tuple, or None."""
  if out is None: return None
  out = out if isinstance(out, tuple) else (out,)
  if len(out) != nout: raise ValueError(f"{name}: 'out' tuple must have exactly {nout} entries, got {len(out)}")
  if all(o is None for o in out): return None
  for o in out:
    if o is not None and not isinstance(o, (Tensor, np.ndarray)):
      raise TypeError(f"{name}: return arrays must be of ArrayType (a Tensor or an ndarray), got {type(o).__name__}")
  return out


def _write(r: Tensor, o, casting: str, where, name: str) -> None:
  """r written into the output array o, as NumPy's ufunc writes out= (casting rule, broadcast to o's shape)."""
  if not np.can_cast(r.dtype, o.dtype, casting):
    raise TypeError(f"Cannot cast ufunc {name!r} output from {r.dtype!r} to {o.dtype!r} with casting rule "
                    f"{casting!r}")
  if broadcast_shapes(r.shape, o.shape, op=name) != o.shape:
    raise ValueError(f"{name}: non-broadcastable output operand with shape {o.shape} doesn't match the broadcast "
                     f"shape {r.shape}")
  if isinstance(o, Tensor): copyto(o, r, casting="unsafe", where=where)
  else: np.copyto(o, r._value(), casting="unsafe", where=to_numpy(where))


class ufunc:
  """A universal function, as NumPy's ``numpy.ufunc``: elementwise over broadcast operands with NumPy's loop dtypes,
  lazily; called as ``f(x1, x2, out=None, *, where=True, casting='same_kind', dtype=None)``, and with the methods
  ``reduce``, ``accumulate``, ``outer``, ``reduceat`` and ``at``. ``repr(mt.add)`` is ``<ufunc 'add'>``."""

  def __init__(self, np_ufunc: np.ufunc, impl=None):
    self._np = np_ufunc
    self._impl = impl if impl is not None else (lambda *xs: apply_ufunc(np_ufunc, *xs))
    self.__name__ = self.__qualname__ = np_ufunc.__name__
    self.__module__ = "minitensor"        # where pickle finds it by name (mt.add), as NumPy's ufuncs in numpy
    self.__signature__ = _signature(np_ufunc.nin, np_ufunc.nout)

  nin = property(lambda self: self._np.nin, doc="The number of inputs.")
  nout = property(lambda self: self._np.nout, doc="The number of outputs.")
  nargs = property(lambda self: self._np.nargs, doc="The number of arguments (inputs and outputs).")
  identity = property(lambda self: self._np.identity, doc="The value of an empty reduction (None: none).")
  types = property(lambda self: self._np.types, doc="NumPy's loops, as 'ii->i' strings.")
  ntypes = property(lambda self: self._np.ntypes, doc="The number of NumPy's loops.")
  signature = property(lambda self: None, doc="The core signature of a generalized ufunc: None (elementwise).")

  def __repr__(self) -> str: return f"<ufunc {self.__name__!r}>"
  def __reduce__(self): return self.__name__       # pickled by name: the module attribute of minitensor

  # ------------------------------------------------------------------ call
  def __call__(self, *args, **kwargs):
    """self(*inputs): the elementwise result (a lazy Tensor; a tuple for several outputs). out= (also the
    positional arrays after the inputs) receives it in place, cast under `casting`; where= (with out=) keeps
    out's elements where it is false; dtype= picks NumPy's loop with that output dtype."""
    nin, name = self._np.nin, self.__name__
    if not kwargs and len(args) == nin: return self._impl(*args)
    bad = set(kwargs) - set(_KW)
    if bad: raise TypeError(f"{name}() got an unexpected keyword argument {sorted(bad)[0]!r}")
    if len(args) < nin: raise TypeError(f"{name}() takes from {nin} to {self._np.nargs} positional arguments but "
                                        f"{len(args)} were given")
    out = kwargs.get("out")
    if len(args) > nin:
      if out is not None: raise TypeError(f"{name}: cannot specify 'out' as both a positional and keyword argument")
      out = args[nin:] if len(args) > nin + 1 else args[nin]
    outs = _outs(out, self._np.nout, name)
    casting, dtype, where_ = kwargs.get("casting", "same_kind"), kwargs.get("dtype"), kwargs.get("where", True)
    if casting not in _CASTINGS: raise ValueError(f"{name}: casting must be one of {_CASTINGS}, got {casting!r}")
    if kwargs.get("order", "K") not in ("K", "A", "C", "F", None):
      raise ValueError(f"{name}: order must be one of 'K', 'A', 'C', 'F', got {kwargs['order']!r}")
    if kwargs.get("subok", True) is not True or kwargs.get("signature") is not None:
      raise TypeError(f"{name}: minitensor supports only the defaults of subok= and signature= (use dtype=)")
    r = self._compute(args[:nin], dtype, casting)
    if outs is None:
      if where_ is not True:
        raise TypeError(f"{name}: where= without out= leaves the masked elements undefined; pass out= too")
      return r
    rs = r if isinstance(r, tuple) else (r,)
    for o, v in zip(outs, rs):
      if o is not None: _write(v, o, casting, where_, name)
    res = tuple(v if o is None else o for o, v in zip(outs, rs))
    return res if len(res) > 1 else res[0]

  def _compute(self, inputs: tuple, dtype, casting: str):
    if dtype is None and casting == "same_kind": return self._impl(*inputs)
    ts = [x if isinstance(x, Tensor) or type(x) in (bool, int, float, complex) else asarray(x) for x in inputs]
    types = tuple(t.dtype if isinstance(t, Tensor) else np.dtype(bool) if type(t) is bool else type(t) for t in ts)
    sig = None if dtype is None else (None,) * self._np.nin + (np.dtype(dtype),) * self._np.nout
    dts = self._np.resolve_dtypes(types + (None,) * self._np.nout, casting=casting,
                                  **({} if sig is None else {"signature": sig}))
    r = self._impl(*[t.astype(d) if isinstance(t, Tensor) else t for t, d in zip(ts, dts)])
    if isinstance(r, tuple): return tuple(v.astype(d) for v, d in zip(r, dts[self._np.nin:]))
    return r.astype(dts[-1]) if r.dtype != dts[-1] else r

  # ------------------------------------------------------------------ reduce
  def _binary(self, method: str) -> None:
    if self._np.nin != 2 or self._np.nout != 1:
      raise ValueError(f"{self.__name__}.{method}: {method} only supported for binary functions")

  def _result_dtype(self, method: str, dt: np.dtype, dtype, *extra) -> np.dtype:
    """NumPy's result dtype of this method for input dtype dt (and its TypeError where it has no loop)."""
    with np.errstate(all="ignore"):
      return getattr(self._np, method)(np.zeros(1, dt), *extra, dtype=dtype).dtype

  def reduce(self, array, axis=0, dtype=None, out=None, keepdims: bool = False, initial=np._NoValue, where=True):
    """Reduce `array` along `axis` by applying the ufunc left to right (a lazy Tensor).

    Parameters
    ----------
    array : array_like
    axis : None, int or tuple of ints, default 0
        Several axes (or None, all) only for reorderable ufuncs (add, multiply, maximum, ...), as NumPy.
    dtype : data-type, optional
        The dtype the reduction computes in.
    out : Tensor or ndarray, optional
        Receives the result.
    keepdims : bool, default False
    initial : scalar, optional
        The first value of the reduction; the result of an empty one.
    where : array_like of bool, optional
        Only these elements take part (needs an identity or initial).

    Returns
    -------
    Tensor
    """
    self._binary("reduce")
    name, f = self.__name__, self._np
    t = asarray(array)
    outs = _outs(out, 1, f"{name}.reduce")
    rd = self._result_dtype("reduce", t.dtype, dtype)
    axes = normalize_axes(axis, t.ndim, f"{name}.reduce") if not (t.ndim == 0 and axis in (0, -1)) else ()
    if len(axes) > 1 and f not in REORDERABLE:
      raise ValueError(f"reduction operation {name!r} is not reorderable, so at most one axis may be specified")
    has_init = initial is not np._NoValue and initial is not None
    if where is not True and f.identity is None and not has_init:
      raise ValueError(f"reduction operation {name!r} does not have an identity, so to use a where mask one has to "
                       "specify 'initial'")
    if f.identity is None and not has_init and any(t.shape[a] == 0 for a in axes):
      raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    if f in _REDUCE and (f not in (np.maximum, np.minimum) or t.dtype.kind != "c"):
      kw = {"where": where} if where is not True else {}
      if has_init and f in (np.add, np.multiply, np.maximum, np.minimum): kw["initial"], has_init = initial, False
      x = t.astype(rd) if f in (np.maximum, np.minimum) else t
      if f in (np.add, np.multiply): kw["dtype"] = rd
      r = getattr(x, _REDUCE[f])(axis=axes, keepdims=keepdims, **kw)
    else:
      x, init = t.astype(rd), asarray(np.asarray(initial).astype(rd)) if has_init else None
      m = None if where is True else asarray(where).astype(bool).broadcast_to(t.shape)
      if f in REORDERABLE:      # masked elements read as the identity (or as initial: these ufuncs are idempotent)
        r = _tree(self, x if m is None else select(m, x, _identity(f, rd) if f.identity is not None else init), axes)
      else: r = _left_fold(self, x, axes[0], m, init) if axes else x if init is None else self(init, x)
      if keepdims: r = r.reshape(tuple(1 if k in axes else n for k, n in enumerate(t.shape)))
      has_init = has_init and f in REORDERABLE
    if has_init: r = self(asarray(np.asarray(initial)).astype(rd), r)
    r = r.astype(rd) if r.dtype != rd else r
    if outs is None: return r
    _write(r, outs[0], "unsafe", True, name)
    return outs[0]

  # ------------------------------------------------------------------ accumulate
  def accumulate(self, array, axis: int = 0, dtype=None, out=None):
    """The running reduction along `axis`: result[i] = reduce(array[:i + 1]) (a lazy Tensor).

    Parameters
    ----------
    array : array_like
    axis : int, default 0
    dtype : data-type, optional
    out : Tensor or ndarray, optional

    Returns
    -------
    Tensor
    """
    self._binary("accumulate")
    name = self.__name__
    t = asarray(array)
    if not isinstance(axis, (int, np.integer)):
      raise ValueError("accumulate does not allow multiple axes")
    if t.ndim == 0: raise ValueError(f"{name}.accumulate: cannot accumulate on a scalar")
    (ax,) = normalize_axes(axis, t.ndim, f"{name}.accumulate")
    outs = _outs(out, 1, f"{name}.accumulate")
    rd = self._result_dtype("accumulate", t.dtype, dtype)
    x = t.astype(rd)
    kind = _SCAN.get(self._np) if rd.kind != "c" or self._np in (np.add, np.multiply) else None
    if kind in ("cumsum", "cumprod"): r = getattr(x, kind)(axis=ax, dtype=rd)
    elif kind is not None: r = _scan(x, ax, kind)
    else: r = _prefixes(self, x, ax, rd)
    r = r.astype(rd) if r.dtype != rd else r
    if outs is None: return r
    _write(r, outs[0], "unsafe", True, name)
    return outs[0]

  # ------------------------------------------------------------------ outer, reduceat, at
  def outer(self, A, B, /, **kwargs):
    """self(a, b) for every pair of elements: result[i..., j...] = self(A[i...], B[j...]) (a lazy Tensor).

    Parameters
    ----------
    A, B : array_like
    **kwargs
        As __call__ (out=, dtype=, casting=, where=).

    Returns
    -------
    Tensor
    """
    self._binary("outer")
    a, b = asarray(A), asarray(B)
    return self(a.reshape(a.shape + (1,) * b.ndim), b, **kwargs)

  def reduceat(self, array, indices, axis: int = 0, dtype=None, out=None):
    """Reductions over the segments array[indices[i]:indices[i + 1]] along `axis` (the last up to the end); where
    indices[i] >= indices[i + 1] the segment is the one element array[indices[i]], as NumPy's.

    Parameters
    ----------
    array : array_like
    indices : array_like of int
        1-D; read now.
    axis : int, default 0
    dtype : data-type, optional
    out : Tensor or ndarray, optional

    Returns
    -------
    Tensor
    """
    self._binary("reduceat")
    name = self.__name__
    t = asarray(array)
    idx = np.asarray(to_numpy(indices))
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
      raise TypeError(f"{name}.reduceat: indices must be a 1-D array of integers, got {idx.dtype} of shape {idx.shape}")
    (ax,) = normalize_axes(axis, max(t.ndim, 1), f"{name}.reduceat")
    outs = _outs(out, 1, f"{name}.reduceat")
    rd = self._result_dtype("reduceat", t.dtype, dtype, [0])
    n = t.shape[ax]
    for i in idx:
      if not 0 <= i < n: raise IndexError(f"index {i} out-of-bounds in {name}.reduceat [0, {n})")
    pieces, sl = [], [slice(None)] * t.ndim
    for k, i in enumerate(idx.tolist()):
      j = idx[k + 1] if k + 1 < len(idx) else n
      sl[ax] = slice(i, j) if i < j else slice(i, i + 1)
      pieces.append(self.reduce(t[tuple(sl)], axis=ax, dtype=rd, keepdims=True))
    shape = t.shape[:ax] + (0,) + t.shape[ax + 1:]
    r = concatenate(pieces, axis=ax) if pieces else full(shape, 0, rd)
    r = r.astype(rd) if r.dtype != rd else r
    if outs is None: return r
    _write(r, outs[0], "unsafe", True, name)
    return outs[0]

  def at(self, a, indices, b=None) -> None:
    """Unbuffered in place: a[indices] = self(a[indices], b), repeated indices applied again (NumPy's ufunc.at).
    Into a Tensor the result is written so that its aliases and views see it; an ndarray NumPy changes itself.

    Parameters
    ----------
    a : Tensor or ndarray
    indices : index
    b : array_like, optional
        The second operand of a binary ufunc.
    """
    if isinstance(a, Tensor): ufunc_at(self._np, a, indices, b)
    else: self._np.at(a, to_numpy(indices), *(() if b is None else (to_numpy(b),)))


# ---------------------------------------------------------------------- the lazy folds
def _identity(f: np.ufunc, dt: np.dtype):
  """f's identity in dtype dt, as NumPy casts it (bitwise_and's -1 is 255 in uint8)."""
  return np.array(f.identity).astype(dt)[()]


def _sl(t: Tensor, ax: int, i, j=None) -> Tensor: return t[(slice(None),) * ax + ((i if j is None else slice(i, j)),)]


def _tree(u: ufunc, x: Tensor, axes: tuple[int, ...]) -> Tensor:
  """The reduction of x over axes by a reorderable ufunc: halves combined until one element is left per axis."""
  f = u._np
  for ax in sorted(axes, reverse=True):
    if x.shape[ax] == 0:
      x = full(x.shape[:ax] + x.shape[ax + 1:], _identity(f, x.dtype), x.dtype)
      continue
    if f in (np.fmax, np.fmin) and x.dtype.kind == "f":     # max/min over NaN as -inf/+inf, NaN if all are
      nan = apply_ufunc(np.isnan, x)
      r = getattr(select(nan, -np.inf if f is np.fmax else np.inf, x), "max" if f is np.fmax else "min")(axis=ax)
      x = select(nan.all(axis=ax), np.nan, r)
      continue
    while (m := x.shape[ax]) > 1:
      h = m // 2
      y = u(_sl(x, ax, 0, h), _sl(x, ax, h, 2 * h))
      x = concatenate([y, _sl(x, ax, 2 * h, m)], axis=ax) if m % 2 else y
    x = x.reshape(x.shape[:ax] + x.shape[ax + 1:])
  return x


def _left_fold(u: ufunc, x: Tensor, ax: int, m: Tensor | None, init: Tensor | None) -> Tensor:
  """((init op x0) op x1) op ...: NumPy's reduction loop along ax; masked-out elements are skipped. The
  accumulator is realized every FOLD_CHUNK steps, so the graph stays bounded."""
  n, acc, shape = x.shape[ax], init, x.shape[:ax] + x.shape[ax + 1:]
  if acc is None and (m is not None or n == 0): acc = full(shape, _identity(u._np, x.dtype), x.dtype)
  for i in range(n):
    v = _sl(x, ax, i)
    nxt = v if acc is None else u(acc, v)
    if nxt.dtype != x.dtype: nxt = nxt.astype(x.dtype)
    acc = nxt if m is None else select(_sl(m, ax, i), nxt, acc)
    if i and i % FOLD_CHUNK == 0: acc.realize()
  return acc if acc.shape == shape else acc.broadcast_to(shape)


def _scan(x: Tensor, ax: int, kind: str) -> Tensor:
  return Tensor(x.uop.scan(Ops.MAX if kind == "max" else Ops.MIN, ax))


def _prefixes(u: ufunc, x: Tensor, ax: int, rd: np.dtype) -> Tensor:
  """Every prefix reduction of x along ax: Hillis-Steele for reorderable ufuncs, else the left fold's steps."""
  n = x.shape[ax]
  if n == 0: return x
  if u._np in REORDERABLE:
    s = 1
    while s < n:
      x = concatenate([_sl(x, ax, 0, s), u(_sl(x, ax, 0, n - s), _sl(x, ax, s, n)).astype(rd)], axis=ax)
      s *= 2
    return x
  acc = _sl(x, ax, 0, 1)
  steps = [acc]
  for i in range(1, n):
    acc = u(acc, _sl(x, ax, i, i + 1)).astype(rd)
    if i % FOLD_CHUNK == 0: acc.realize()
    steps.append(acc)
  return concatenate(steps, axis=ax) if len(steps) > 1 else steps[0]
