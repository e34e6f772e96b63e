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

This module needs hypothesis (`pip install 'minitensor[test]'`); importing minitensor itself does not, and without
hypothesis `import minitensor.testing` raises ImportError saying so (`hasattr(mt, "testing")` is False). The strategies
live in minitensor.testing_strategies and the movement chains in minitensor.testing_chains; import them from here.
"""
from __future__ import annotations
import inspect
import types
import warnings
from typing import Any, Callable
import numpy as np

try:
  import hypothesis  # noqa: F401
except ImportError:
  raise ImportError("minitensor.testing needs hypothesis, which is not installed: pip install 'minitensor[test]'") \
    from None
import minitensor as mt

# hypothesis also draws constants found in the source of the modules loaded while a test runs (its local constants:
# code outside site-packages, an editable minitensor's included). The compiler's stages are otherwise imported by the
# first compile, which a warm kernel cache never makes: imported here, the same modules are loaded in every run, and
# derandomized examples are the same with a cold or a warm cache (they were not after the sixth of the README's)
import minitensor.backend.attention  # noqa: F401  (and the lowerings' own imports, made where a kernel needs them)
import minitensor.backend.fpstatus  # noqa: F401
import minitensor.backend.gemm  # noqa: F401
import minitensor.backend.kernelize  # noqa: F401
import minitensor.backend.opt  # noqa: F401
import minitensor.backend.realize  # noqa: F401
import minitensor.backend.scan  # noqa: F401
import minitensor.backend.search  # noqa: F401
import minitensor.backend.split  # noqa: F401
import minitensor.backend.traced  # noqa: F401
import minitensor.inspect  # noqa: F401
from minitensor.testing_chains import MAX_CHAIN_NDIM as MAX_CHAIN_NDIM
from minitensor.testing_chains import MAX_CHAIN_SIZE as MAX_CHAIN_SIZE
from minitensor.testing_chains import MovementChain, Step, movement_chains
from minitensor.testing_chains import _Call as _Call  # `x as x`: re-exported, tests build chains with them
from minitensor.testing_chains import _fmt_index as _fmt_index
from minitensor.testing_chains import _Index as _Index
from minitensor.testing_chains import _Join as _Join
from minitensor.testing_strategies import DTYPES, arrays, axes, broadcastable_shapes, dtypes, elements, shapes

__all__ = ["DTYPES", "shapes", "dtypes", "arrays", "elements", "broadcastable_shapes", "axes", "movement_chains",
           "MovementChain", "Step", "assert_matches_numpy", "default_tolerance", "check_grads"]

_TOL = {np.dtype("float16"): 1e-3, np.dtype("float32"): 1e-5, np.dtype("float64"): 1e-10, np.dtype("complex64"): 1e-5,
        np.dtype("complex128"): 1e-10}


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
