"""Testing helpers: hypothesis strategies for minitensor's inputs and a NumPy oracle.

    shapes(...)                 array shapes, size-0 and size-1 axes included
    dtypes()                    the dtypes minitensor supports
    arrays(dtype, shape)        ndarrays with dtype-aware values: NaN, inf, -0.0 for floats; extremes for ints
    broadcastable_shapes(shape) shapes that broadcast with `shape`
    axes(ndim)                  an `axis` argument: None, an int, or a tuple of distinct (possibly negative) axes
    movement_chains(shape)      a chain of movement steps (reshape, transpose, broadcast_to, slicing, pad, flip,
                                concatenate, stack, squeeze, expand_dims); `chain.apply(x)` runs it on a Tensor
                                with minitensor's functions or on an ndarray with NumPy's
    assert_matches_numpy(fn, *arrays)
                                fn on the ndarrays and on Tensors of them: same values, shapes and dtypes, or the
                                same exception type; the failure message shows the generated C
    check_grads(f, *arrays)     mt.grad of a scalar f against central finite differences of f, in float64

A fuzz test of your own code is a few lines:

    from hypothesis import given, strategies as st
    import minitensor.testing as mtt

    @given(data=st.data())
    def test_softmax_after_any_movement(data):
        shape = data.draw(mtt.shapes(min_dims=1, min_side=1))
        x = data.draw(mtt.arrays(np.float32, shape, elements=st.floats(-10, 10, width=32)))
        chain = data.draw(mtt.movement_chains(shape))
        mtt.assert_matches_numpy(lambda a: my_softmax(chain.apply(a)), x)

This module needs hypothesis (`pip install hypothesis`); importing minitensor itself does not. The strategies
live in minitensor.testing_strategies; import them from here.
"""
from __future__ import annotations
import inspect
import types
import warnings
from typing import Any, Callable, Sequence
import numpy as np
from hypothesis import strategies as st
import minitensor as mt
from minitensor.testing_strategies import DTYPES, arrays, axes, broadcastable_shapes, dtypes, elements, shapes

__all__ = ["DTYPES", "shapes", "dtypes", "arrays", "elements", "broadcastable_shapes", "axes", "movement_chains",
           "MovementChain", "Step", "assert_matches_numpy", "default_tolerance", "check_grads"]

_TOL = {np.dtype("float16"): 1e-3, np.dtype("float32"): 1e-5, np.dtype("float64"): 1e-10, np.dtype("complex64"): 1e-5,
        np.dtype("complex128"): 1e-10}
MAX_CHAIN_SIZE = 1024     # movement_chains keeps every intermediate at most this many elements
MAX_CHAIN_NDIM = 6


# ---------------------------------------------------------------------- movement chains
def _ns(x):
  """minitensor for a Tensor, NumPy for anything else."""
  return mt if isinstance(x, mt.Tensor) else np


def _fmt_index(idx: tuple) -> str:
  def one(i) -> str:
    if i is None: return "None"
    if i is Ellipsis: return "..."
    if isinstance(i, slice):
      s = f"{'' if i.start is None else i.start}:{'' if i.stop is None else i.stop}"
      return s + (f":{i.step}" if i.step is not None else "")
    return repr(i)
  return f"[{', '.join(map(one, idx))}]" if idx else "[()]"


class Step:
  """One movement step: `apply(x)` uses minitensor's function on a Tensor and NumPy's on an ndarray."""
  def apply(self, x): raise NotImplementedError
  def __repr__(self) -> str: raise NotImplementedError


class _Call(Step):
  """ns.name(x, *args, **kwargs)."""
  def __init__(self, name: str, *args, **kwargs):
    self.name, self.args, self.kwargs = name, args, kwargs
  def apply(self, x): return getattr(_ns(x), self.name)(x, *self.args, **self.kwargs)
  def __repr__(self) -> str:
    args = self.args[0] if self.name == "reshape" and self.args[0] else self.args
    return f"{self.name}({', '.join([repr(a) for a in args] + [f'{k}={v!r}' for k, v in self.kwargs.items()])})"


class _Index(Step):
  def __init__(self, idx: tuple): self.idx = idx
  def apply(self, x): return x[self.idx]
  def __repr__(self) -> str: return _fmt_index(self.idx)


class _Join(Step):
  """concatenate or stack of x with x itself, a slice of x (concatenate) or a flip of x (stack)."""
  def __init__(self, name: str, axis, other: tuple | None, first: bool):
    self.name, self.axis, self.other, self.first = name, axis, other, first
  def _other(self, x):
    if self.other is None: return x
    if self.name == "stack": return _ns(x).flip(x, self.other[0])
    return x[self.other]
  def apply(self, x):
    o = self._other(x)
    return getattr(_ns(x), self.name)([x, o] if self.first else [o, x], axis=self.axis)
  def __repr__(self) -> str:
    o = "x" if self.other is None else f"flip(x, {self.other[0]})" if self.name == "stack" \
      else f"x{_fmt_index(self.other)}"
    return f"{self.name}([{'x, ' + o if self.first else o + ', x'}], axis={self.axis!r})"


class MovementChain(Sequence):
  """A sequence of movement Steps drawn for an input shape; `apply(x)` runs them in order.

  Attributes
  ----------
  steps : tuple of Step
  in_shape, out_shape : tuple of int
  """
  def __init__(self, steps: Sequence[Step], in_shape: tuple[int, ...], out_shape: tuple[int, ...]):
    self.steps, self.in_shape, self.out_shape = tuple(steps), tuple(in_shape), tuple(out_shape)
  def apply(self, x):
    """The chain applied to x: a Tensor (minitensor's functions) or an ndarray (NumPy's; the result an ndarray)."""
    for s in self.steps: x = s.apply(x)
    return x if isinstance(x, mt.Tensor) else np.asarray(x)
  def __call__(self, x): return self.apply(x)
  def __getitem__(self, i): return self.steps[i]
  def __len__(self) -> int: return len(self.steps)
  def __repr__(self) -> str: return " -> ".join(map(repr, self.steps)) if self.steps else "identity"


def _factor(n: int) -> list[int]:
  out, p = [], 2
  while p * p <= n:
    while n % p == 0: out.append(p); n //= p
    p += 1
  return out + ([n] if n > 1 else [])


def _slice(draw, n: int) -> slice:
  """A slice of an axis of size n: bounds in and out of range, negative bounds, steps +-1..3."""
  bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
  return slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, 3, -1, -2, -3])))


def _axis(draw, ndim: int) -> int:
  a = draw(st.integers(0, ndim - 1))
  return a - ndim if draw(st.booleans()) else a


def _draw_step(draw, x: np.ndarray) -> list[Step]:
  """One step (two for a broadcast that first inserts a size-1 axis) valid for the dummy array x."""
  s, nd = x.shape, x.ndim
  kinds = ["reshape", "transpose", "broadcast", "index", "flip", "stack", "expand_dims", "squeeze"]
  kinds += ["pad", "concatenate"] if nd else []
  k = draw(st.sampled_from(kinds))
  if k == "reshape":
    n = x.size
    r = draw(st.integers(0 if n == 1 else 1, 4))
    if n == 0: dims = [draw(st.integers(0, 3)) for _ in range(r)]; dims[draw(st.integers(0, r - 1))] = 0
    else:
      dims = [1] * r
      for p in _factor(n): dims[draw(st.integers(0, r - 1))] *= p
      if r and draw(st.booleans()): dims[draw(st.integers(0, r - 1))] = -1
    return [_Call("reshape", tuple(dims))]
  if k == "transpose":
    perm = draw(st.permutations(range(nd)))
    return [_Call("transpose", tuple(a - nd if a and draw(st.booleans()) else a for a in perm))]
  if k == "expand_dims": return [_Call("expand_dims", _axis(draw, nd + 1))]
  if k == "squeeze":
    ones = [a for a in range(nd) if s[a] == 1]
    if not ones or draw(st.booleans()): return [_Call("squeeze")]
    pick = draw(st.lists(st.sampled_from(ones), min_size=1, unique=True))
    ax = tuple(a - nd if draw(st.booleans()) else a for a in pick)
    return [_Call("squeeze", axis=ax[0] if len(ax) == 1 and draw(st.booleans()) else ax)]
  if k == "broadcast":
    pre: list[Step] = []
    if 1 not in s:
      pre = [_Call("expand_dims", _axis(draw, nd + 1))]
      x = pre[0].apply(x)
      s = x.shape
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    target = lead + tuple(draw(st.sampled_from([0, 1, 2, 3, 3])) if m == 1 else m for m in s)
    return pre + [_Call("broadcast_to", target)]
  if k == "index":
    one = lambda m: _slice(draw, m) if draw(st.integers(0, 4)) or not m else draw(st.integers(-m, m - 1))
    lead = draw(st.integers(0, nd))
    # an Ellipsis, then trailing axes
    trail = draw(st.integers(0, nd - lead)) if draw(st.integers(0, 3)) == 0 else None
    items: list = [one(m) for m in s[:lead]]
    if trail is not None: items += [Ellipsis] + [one(m) for m in s[nd - trail:]]
    if draw(st.integers(0, 3)) == 0: items.insert(draw(st.integers(0, len(items))), None)
    return [_Index(tuple(items))]
  if k == "flip":
    ax = draw(axes(nd))
    return [_Call("flip", axis=ax)]
  if k == "pad":
    widths = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nd))
    return [_Call("pad", widths, constant_values=draw(st.sampled_from([0, 1, 5, -0.0, 0.5])))]
  if k == "concatenate":
    if draw(st.integers(0, 7)) == 0: return [_Join("concatenate", None, None, draw(st.booleans()))]
    a = _axis(draw, nd)
    other = None if draw(st.booleans()) else (slice(None),) * (a % nd) + (_slice(draw, s[a]),)
    return [_Join("concatenate", a, other, draw(st.booleans()))]
  # stack: with x itself or with x flipped along its first axis
  other = (0,) if nd and draw(st.booleans()) else None
  return [_Join("stack", _axis(draw, nd + 1), other, draw(st.booleans()))]


@st.composite
def movement_chains(draw, shape: tuple[int, ...], max_steps: int = 6) -> MovementChain:
  """Chains of movement steps for an input of the given shape.

  Each step is one of: reshape (sometimes with a -1), transpose (a random permutation, axes sometimes
  negative), expand_dims, squeeze (all or some size-1 axes), broadcast_to (after inserting a size-1 axis when
  there is none; new leading axes too; size 0 included), basic indexing (slices with random bounds and steps
  +-1..3, integers, None, Ellipsis), pad (constant, per-axis widths), flip (None, an axis or a tuple),
  concatenate (with a copy of itself or a slice of it, or axis=None) and stack (with itself or a flipped copy).
  Every intermediate result has at most MAX_CHAIN_SIZE elements (or twice the input's, if more) and at most
  MAX_CHAIN_NDIM axes (or the input's, if more).

  Parameters
  ----------
  shape : tuple of int
      The shape of the arrays the chain will be applied to.
  max_steps : int
      The most steps a chain has (a broadcast that first inserts an axis counts as one).

  Returns
  -------
  SearchStrategy of MovementChain
      `chain.apply(x)` works on a Tensor (minitensor's functions) and on an ndarray (NumPy's), and its repr
      reads like ``reshape(3, -1) -> transpose((1, 0)) -> [::-2, 1:]``.
  """
  x = np.zeros(shape, np.int8)
  max_size, max_ndim = max(MAX_CHAIN_SIZE, 2 * x.size), max(MAX_CHAIN_NDIM, x.ndim)
  steps: list[Step] = []
  for _ in range(draw(st.integers(0, max_steps))):
    new = _draw_step(draw, x)
    y = x
    for s in new: y = np.asarray(s.apply(y))
    if y.size <= max_size and y.ndim <= max_ndim: steps += new; x = y
  return MovementChain(steps, shape, x.shape)


# ---------------------------------------------------------------------- the NumPy oracle
def default_tolerance(dtype) -> float:
  """The rtol (and atol) assert_matches_numpy uses for a result of dtype: 0 (exact) for bool and integers,
  1e-3 for float16, 1e-5 for float32 and complex64, 1e-10 for float64 and complex128 (each part of a complex
  value is compared on its own).

  Parameters
  ----------
  dtype : dtype-like

  Returns
  -------
  float
  """
  return _TOL.get(np.dtype(dtype), 0.0)


def _public_type(e: BaseException) -> type:
  """The exception type users catch: the first builtin or numpy.exceptions class in type(e)'s MRO."""
  for t in type(e).__mro__:
    if t.__module__ in ("builtins", "numpy.exceptions"): return t
  return type(e)


def _same_kind(got: BaseException, want: type) -> bool:
  """Whether got is of the public type want; for AxisError, a subclass of both ValueError and IndexError will do."""
  if want is np.exceptions.AxisError: return isinstance(got, ValueError) and isinstance(got, IndexError)
  return isinstance(got, want)


def _leaves(r, path: str = "") -> list[tuple[str, Any]]:
  """The arrays of a result: itself, or the items of (nested) tuples and lists, with their paths."""
  if isinstance(r, (tuple, list)):
    return [leaf for k, x in enumerate(r) for leaf in _leaves(x, f"{path}[{k}]")] if r else [(path, r)]
  return [(path, r)]


def _describe(a) -> str:
  a0 = np.asarray(a)
  s = f"{a0.dtype} {a0.shape}"
  if isinstance(a, np.ndarray) and a.ndim and not a.flags.c_contiguous: s += " (not C-contiguous)"
  if a0.size <= 24: s += ": " + np.array2string(a0, separator=", ", threshold=24).replace("\n", "")
  return s


def _differing(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> np.ndarray:
  """A boolean mask of the elements that differ (NaN matches NaN; exact when rtol == atol == 0, -0.0 included)."""
  if got.dtype.kind not in "fc" and want.dtype.kind not in "fc": return np.asarray(got != want)
  if "c" in (got.dtype.kind, want.dtype.kind):
    return _differing(got.real, want.real, rtol, atol) | _differing(np.imag(got), np.imag(want), rtol, atol)
  g, w = got.astype(np.float64), want.astype(np.float64)
  nan_g, nan_w = np.isnan(g), np.isnan(w)
  with np.errstate(invalid="ignore", over="ignore"):
    if rtol == 0 and atol == 0: same = (g == w) & (np.signbit(g) == np.signbit(w))
    else:
      inf = np.isinf(g) | np.isinf(w)
      same = np.where(inf, g == w, np.abs(g - w) <= atol + rtol * np.abs(w))
  return np.asarray(~((nan_g & nan_w) | (~nan_g & ~nan_w & same)))


def _native(d: np.dtype) -> np.dtype: return d if d.isnative else d.newbyteorder("=")


def _tolerance(tol, dtype: np.dtype, floor: float) -> float:
  """The tolerance for a float result of dtype: tol (a float, or a dict by dtype), else the larger of
  default_tolerance(dtype) and floor (the tolerance of the least precise float input)."""
  if isinstance(tol, dict): tol = {np.dtype(k): v for k, v in tol.items()}.get(_native(dtype))
  return max(default_tolerance(dtype), floor) if tol is None else float(tol)


def _compare(got, want, rtol, atol, floor: float = 0.0) -> list[str]:
  """What differs between one minitensor result and NumPy's, as message lines (none when they match)."""
  g, w = np.asarray(got), np.asarray(want)
  problems = []
  if g.shape != w.shape: return [f"shape: minitensor {g.shape}, NumPy {w.shape}"]
  if _native(g.dtype) != _native(w.dtype): problems.append(f"dtype: minitensor {g.dtype}, NumPy {w.dtype}")
  d = w.dtype if w.dtype.kind in "fc" or g.dtype.kind not in "fc" else g.dtype
  r, a = (_tolerance(t, d, floor) if d.kind in "fc" else 0.0 for t in (rtol, atol))
  bad = _differing(g, w, r, a)
  if bad.any():
    idx = np.argwhere(bad)
    how = "compared exactly" if r == a == 0 else f"rtol={r:g}, atol={a:g}"
    problems.append(f"values: {len(idx)} of {w.size} element(s) differ ({how}); the first:")
    for i in idx[:5]:
      t = tuple(int(v) for v in i)
      problems.append(f"  at {t}: minitensor {g[t]!r}, NumPy {w[t]!r}")
  return problems


def _c_source(graphs: list) -> str:
  try: ex = mt.explain(*(mt.Tensor(u) for u in graphs))
  except Exception as e: return f"(minitensor.explain failed: {type(e).__name__}: {e})"
  if not ex.kernels: return "(no kernel: the result is a view of the inputs, answered by NumPy without compiling)"
  return str(ex)


def _name(fn) -> str:
  """fn for a failure message: a function's name (a lambda's source line), else its repr."""
  if not isinstance(fn, types.FunctionType): return repr(fn)
  if fn.__name__ == "<lambda>":
    try: return inspect.getsource(fn).strip()
    except (OSError, TypeError): pass
  return fn.__qualname__


def assert_matches_numpy(fn: Callable, *arrays, rtol: float | dict | None = None,
                         atol: float | dict | None = None) -> None:
  """Assert that fn computes with minitensor what it computes with NumPy.

  fn is called twice: with the ndarrays, and with `minitensor.asarray` of each. The results (a Tensor or
  array, or a nested tuple/list of them) must have the same structure, shapes and dtypes, and the same
  values: NaN where NumPy has NaN, infinities equal, other values within the tolerances. When NumPy raises,
  minitensor must raise the same type of exception (its nearest builtin or numpy.exceptions class, e.g.
  TypeError for a ufunc loop error) while fn runs, not later when the result is computed.

  Parameters
  ----------
  fn : callable
      Works on ndarrays and on Tensors (the same names exist in `numpy` and `minitensor`; operators and
      methods too). Its repr is shown on failure, so a MovementChain or a named function reads best.
  *arrays : ndarray
      The inputs.
  rtol, atol : float or dict, optional
      Tolerances |mt - np| <= atol + rtol * |np| for float results: one value, or a dict {dtype: value}.
      Default (and for dtypes a dict leaves out) `default_tolerance` of the result dtype -- 1e-3 float16,
      1e-5 float32, 1e-10 float64 -- or of the least precise float input if that is larger (a float64
      result computed from float32 inputs gets 1e-5). Integer and bool results are always compared exactly.
      rtol=0 and atol=0 ask for identical floats, the sign of zero included. Byte order is not compared
      (minitensor computes in native byte order).

  Raises
  ------
  AssertionError
      With fn, the inputs' dtypes and shapes (and values when small), what differs (shape, dtype, the first
      differing indices with both values, or the exceptions) and the C source of the kernel(s) minitensor
      generated for the result.
  """
  header = [f"minitensor differs from NumPy for {_name(fn)}", "inputs:"] + \
           [f"  arg{k}: {_describe(a)}" for k, a in enumerate(arrays)]
  mt_res, mt_exc, when, graphs = _run_minitensor(fn, arrays)
  np_res, np_exc = _run_numpy(fn, arrays)
  fail = lambda lines, cause=None: _fail(header + lines, graphs, cause)
  if np_exc is not None:
    want = _public_type(np_exc)
    if mt_exc is None: fail([f"NumPy raised {want.__name__}: {np_exc}", "but minitensor returned a result"])
    if not _same_kind(mt_exc, want):
      fail([f"NumPy raised {want.__name__}: {np_exc}", f"minitensor raised {type(mt_exc).__name__}: {mt_exc}"], mt_exc)
    if when == "realize":
      fail([f"NumPy raised {want.__name__} at the call; minitensor raised {type(mt_exc).__name__} only when computing "
            f"the result: {mt_exc}"], mt_exc)
    return
  if mt_exc is not None:
    fail([f"minitensor raised {type(mt_exc).__name__} ({'in fn' if when == 'call' else 'when computing the result'}): "
          f"{mt_exc}", "NumPy returned a result"], mt_exc)
  if [p for p, _ in mt_res] != [p for p, _ in np_res]:
    fail([f"result structure: minitensor {[p or '.' for p, _ in mt_res]}, NumPy {[p or '.' for p, _ in np_res]}"])
  floor = max((default_tolerance(np.asarray(a).dtype) for a in arrays), default=0.0)
  lines = []
  for (p, g), (_, w) in zip(mt_res, np_res):
    if problems := _compare(g, w, rtol, atol, floor):
      lines += [f"output{p}:" if p else "output:"] + ["  " + x for x in problems]
  if lines: fail(lines)


def _run_minitensor(fn, arrays) -> tuple[list | None, Exception | None, str, list]:
  """(the leaves of fn's result as ndarrays, or the exception and whether fn ("call") or realizing raised it,
  the graphs of the Tensors in the result). Every Tensor of the result is realized in one schedule."""
  graphs: list = []
  try:
    res = fn(*(mt.asarray(a) for a in arrays))
    tensors = list({id(x): x for _, x in _leaves(res) if isinstance(x, mt.Tensor)}.values())
    graphs = [t.uop for t in tensors]          # kept to render the kernels on failure (realize replaces t.uop)
    try: mt.realize(*tensors)
    except Exception as e: return None, e, "realize", graphs
    return [(p, x.numpy() if isinstance(x, mt.Tensor) else x) for p, x in _leaves(res)], None, "", graphs
  except Exception as e: return None, e, "call", graphs


def _run_numpy(fn, arrays) -> tuple[list | None, Exception | None]:
  try:
    with np.errstate(all="ignore"), warnings.catch_warnings():
      warnings.simplefilter("ignore", RuntimeWarning)
      return _leaves(fn(*arrays)), None
  except Exception as e: return None, e


def _fail(lines: list[str], graphs: list, cause: BaseException | None):
  """Raise the AssertionError: the lines, then the C of the kernels that compute the graphs."""
  src = _c_source(graphs) if graphs else "(no Tensor result to explain)"
  msg = "\n".join(lines) + "\ngenerated C (minitensor.explain):\n" + "\n".join("  " + x for x in src.splitlines())
  raise AssertionError(msg) from cause


def check_grads(f: Callable, *arrays, eps: float = 1e-5, rtol: float = 1e-6) -> list[np.ndarray]:
  """Check `mt.grad(f, argnums=all)` at float64 copies of the arrays against central finite differences of f.

  Every element of every argument is perturbed by +-eps (f called on Tensors of the perturbed arrays; f returns
  a scalar Tensor). The largest error over an argument must be at most rtol times the largest finite-difference
  component of it (relative error, norm-wise). Returns the gradients (ndarrays).

  Parameters
  ----------
  f : callable of Tensors returning a scalar float Tensor
  *arrays : array_like
  eps : float, default 1e-5
  rtol : float, default 1e-6
  """
  xs = [np.array(a, np.float64) for a in arrays]
  gs = mt.grad(f, argnums=tuple(range(len(xs))))(*(mt.asarray(x) for x in xs))
  mt.realize(*gs)
  out = []
  for k, (x, g) in enumerate(zip(xs, gs)):
    g = np.asarray(g)
    assert g.shape == x.shape and g.dtype == x.dtype, \
      f"gradient {k}: {g.dtype} {g.shape} for an input {x.dtype} {x.shape}"
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
      vals = []
      for s in (eps, -eps):
        ys = [y.copy() for y in xs]
        ys[k][i] += s
        vals.append(float(f(*(mt.asarray(y) for y in ys))))
      fd[i] = (vals[0] - vals[1]) / (2 * eps)
    err, scale = np.abs(g - fd).max(initial=0.0), np.abs(fd).max(initial=0.0)
    if not err <= rtol * scale + 1e-12:
      raise AssertionError(f"{_name(f)}: gradient of argument {k} (shape {x.shape}) differs from finite differences "
                           f"by {err:.3g} (largest component {scale:.3g}, rtol {rtol})\n"
                           f"grad:\n{g}\nfinite differences:\n{fd}")
    out.append(g)
  return out
