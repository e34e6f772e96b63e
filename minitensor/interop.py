"""NumPy interoperability: what `np.exp(t)`, `ndarray + t` and `np.sum(t)` do with a Tensor.

Policy (NumPy's result where minitensor cannot compute lazily, never a silent approximation):

  ufuncs (Tensor.__array_ufunc__)
    ufunc(...) for a ufunc in ufuncs.TABLE     a lazy Tensor with NumPy's dtypes (`ndarray + t`, `np.exp(t)`)
    ufunc(..., keywords) and the methods reduce, accumulate, outer, reduceat, at of a ufunc minitensor
    exports as a ufunc object (mt.add, mt.hypot, ...: ufunc_objects.py)
                                               that object's method: lazy Tensors with NumPy's keywords
        dtype=, casting=                       NumPy's loop and casting rules
        out=ndarray(s)                         realized and written into them; returns out
        out=Tensor                             written into it as `out[...] = result` (its aliases and views
                                               see it, as NumPy's); returns out
        where=mask                             only with out= (positions where mask is false keep out's values)
        at                                     NumPy on the realized values, written back into the Tensor
    ufunc(...) for another ufunc minitensor exports under its NumPy name (np.matmul)
                                               minitensor's function, when called without keywords
    anything else (methods and keywords of ufuncs minitensor lacks)
                                               NumPy on the realized arrays: an ndarray
  functions (Tensor.__array_function__)
    a NumPy function minitensor exports under the same name (np.sum, np.mean, np.concatenate, np.where,
    np.clip, np.reshape, np.transpose, ...; np.linalg.* and np.fft.* from mt.linalg and mt.fft), called with
    arguments minitensor's signature accepts
                                               minitensor's function: Tensors
    any other function (np.median, np.percentile, ...), call (np.sum(t, out=a)), or a case minitensor's
    function does not implement (it raises NotImplementedError: np.pad(t, 1, mode="reflect"))
                                               NumPy on the realized arrays (Tensors inside lists and tuples
                                               too): NumPy's result

NumPy's function -> minitensor's is a lookup at call time: NumPy's own name for it (np.permute_dims is
np.transpose: "transpose") in the `minitensor` namespace (numpy.linalg's in mt.linalg, numpy.fft's in mt.fft),
when that object is a function defined in minitensor.
"""
from __future__ import annotations
import contextlib
import functools
import importlib
import inspect
import operator
from typing import Callable
import numpy as np
from minitensor import ufuncs as U
from minitensor import views as V
from minitensor.tensor import Tensor, apply_ufunc, asarray, foreign, tensor_methods
from minitensor.tensor import where as where_

_SUBMODULES = ("linalg", "fft", "emath", "lib.stride_tricks")     # numpy.<sub>.<name> -> minitensor.<sub>.<name>
_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "signature": None, "where": True, "dtype": None,
             "out": None, "keepdims": False}


def implementation(func) -> Callable | None:
  """minitensor's function for NumPy's `func` (a function or ufunc of the numpy namespace): the one minitensor
  exports under func's name, looked up at each call, so functions added to minitensor later are found too (the
  namespace and name a NumPy function maps to are found once: _home)."""
  if (home := _HOMES.get(func, _HOMES)) is _HOMES: home = _home(func)
  if home is None: return None
  f = getattr(home[0], home[1], None)
  if not callable(f) or isinstance(f, type) or not getattr(f, "__module__", "").startswith("minitensor"): return None
  return f


_HOMES: dict = {}        # NumPy's function -> (the minitensor module that would export it, its name), or None


def _home(func) -> tuple | None:
  name = getattr(func, "__name__", None)
  home = None
  if isinstance(name, str):
    sub = next((m for m in _SUBMODULES if getattr(operator.attrgetter(m)(np), name, None) is func), None)
    if sub is not None or getattr(np, name, None) is func:
      home = (importlib.import_module("minitensor" + ("." + sub if sub else "")), name)
  with contextlib.suppress(TypeError): _HOMES[func] = home       # (an unhashable callable is looked up each time)
  return home


def to_numpy(x):
  """x with every Tensor (also inside lists, tuples and dicts) replaced by its realized ndarray."""
  if isinstance(x, Tensor): return x._value()
  if isinstance(x, list): return [to_numpy(v) for v in x]
  if isinstance(x, tuple): return tuple(to_numpy(v) for v in x)
  if isinstance(x, dict): return {k: to_numpy(v) for k, v in x.items()}
  return x


def _given(kwargs: dict) -> dict:
  """The keywords whose values differ from NumPy's defaults."""
  return {k: v for k, v in kwargs.items()
          if not (k in _DEFAULTS and (v is _DEFAULTS[k] or (isinstance(v, str) and v == _DEFAULTS[k])))}


def copyto(dst, src, casting: str = "same_kind", where=True) -> None:
  """numpy.copyto: src (broadcast to dst's shape) written into dst where `where` is true, with NumPy's casting
  check. dst a Tensor: written in place (its aliases and views see it); dst an ndarray: NumPy writes it."""
  if not isinstance(dst, Tensor):
    np.copyto(dst, to_numpy(src), casting=casting, where=to_numpy(where))
    return
  s = src if isinstance(src, Tensor) or U.is_weak(src) else asarray(src)
  if not U.is_weak(s) and not np.can_cast(s.dtype, dst.dtype, casting):
    raise TypeError(f"Cannot cast array data from {s.dtype!r} to {dst.dtype!r} according to the rule {casting!r}")
  if where is True: dst[...] = s
  else:
    with V.WRITES: dst[...] = where_(where, s, dst)      # (reading dst and writing it are one step: views.py)


def ufunc_at(ufunc: np.ufunc, a: Tensor, indices, b=None, **kwargs) -> None:
  """ufunc.at(a, indices, b) on a Tensor: NumPy's unbuffered in-place operation on the realized values, written
  back into a (its aliases and views see it)."""
  with V.WRITES:                  # (reading a and writing it are one step: views.py)
    v = a.numpy()
    ufunc.at(v, *to_numpy((indices,) if b is None else (indices, b)), **kwargs)
    a[...] = asarray(v, copy=False)


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict):
  """Tensor.__array_ufunc__: see the module docstring for the policy."""
  out = kwargs.get("out")
  out = out if out is None or isinstance(out, tuple) else (out,)
  if any(foreign(x) for x in inputs + (out or ())): return NotImplemented      # NEP 13: theirs decides
  kw = _given(kwargs)
  kw.pop("out", None)
  if method == "__call__" and ufunc in U.TABLE and not kw and out is None: return apply_ufunc(ufunc, *inputs)
  if hasattr(f := implementation(ufunc), "nin") and callable(m := getattr(f, method, None)):
    return m(*inputs, **kwargs)      # minitensor's ufunc object: __call__ with keywords, reduce, outer, at, ...
  if method == "__call__" and not kw and out is None and f is not None: return f(*inputs)
  return getattr(ufunc, method)(*to_numpy(inputs), **to_numpy(kwargs))


@functools.lru_cache(maxsize=1024)
def _signature(f: Callable) -> inspect.Signature | None:
  try: return inspect.signature(f)
  except (TypeError, ValueError): return None


def _accepts(f: Callable, args: tuple, kwargs: dict) -> bool:
  """Whether f's signature binds these arguments (True when f has no introspectable signature). Binding depends
  only on how many positional arguments there are and which keywords: the answer is kept per such call."""
  key = (f, len(args), tuple(kwargs))
  if (ok := _BINDS.get(key)) is not None: return ok
  if (sig := _signature(f)) is None: ok = True
  else:
    try: sig.bind(*args, **kwargs)
    except TypeError: ok = False
    else: ok = True
  if len(_BINDS) >= 4096: _BINDS.clear()
  _BINDS[key] = ok
  return ok


_BINDS: dict = {}        # (function, number of positional arguments, keyword names) -> whether they bind


def array_function(func: Callable, types: tuple, args: tuple, kwargs: dict):
  """Tensor.__array_function__: see the module docstring for the policy."""
  if not all(issubclass(t, (Tensor, np.ndarray)) for t in types): return NotImplemented
  f = implementation(func)
  if f is not None and _accepts(f, args, kwargs):
    try: return f(*args, **kwargs)
    except NotImplementedError: pass          # a mode minitensor lacks: NumPy computes it below
  if isinstance(kwargs.get("out"), Tensor):
    raise TypeError(f"numpy.{func.__name__}: out= must be an ndarray, got a Tensor")
  return func(*to_numpy(args), **to_numpy(kwargs))


@tensor_methods
class _NumpyProtocols:
  def __array_ufunc__(self, ufunc, method, *inputs, **kwargs): return array_ufunc(ufunc, method, inputs, kwargs)
  def __array_function__(self, func, types, args, kwargs): return array_function(func, types, args, kwargs)
