"""jit: a function-level trace cache (as jax.jit and tinygrad's TinyJit): f is traced once per structure of its
arguments, and each later call with that structure runs the compiled graph of the trace.

    step = mt.jit(f, static_argnums=(), static_argnames=())
    step(*args, **kwargs)        f's results: Tensors computed by the trace's program

Arguments. The arrays among the arguments (ndarrays, Tensors and NumPy scalars, also inside tuples, lists and
dicts) are traced: each call binds their values (their memory as it is then: an array mutated between calls is
read anew). Everything else is static, part of the key: Python numbers, strings, None, other objects, and the
arguments named by static_argnums / static_argnames, which must be hashable. The key is the arguments' structure,
each array's shape and dtype, the static values and the mode (MINITENSOR_CHECK, MINITENSOR_TIER); a new key
traces f again (at most MAX_TRACES kept per function, the least recently used dropped). A Python number is a
kernel argument in the compiled graph, so tracing again for a new value compiles nothing; pass a 0-d array for
a number that changes every call and no trace is repeated either.

Tracing. f runs once on placeholder Tensors (leaves without data) and builds its graph as usual; the graphs of
its Tensor results, and of the arguments it wrote into, are compiled together (backend/traced.py). What a
replay would not repeat raises tracing.TracerError (a TypeError, as jax's ConcretizationTypeError) at the
trace: reading a value computed from an argument (`float(x)`, `if x.sum() > 0:`, a boolean mask of x, `x.tolist()`),
writing into a Tensor f did not create and was not passed (a global, a closure's Tensor), drawing random numbers
(draw them outside and pass them in). Tensors and arrays f reads from elsewhere (closures, globals) are
constants of the trace, as in jax: their values when f traced. Python side effects (print, appending to a list)
happen when f traces. Results that are not Tensors are returned as f returned them when it traced.

Writes into arguments are replayed: when f writes into an argument (`x[i] = v`, `x += 1`), each call writes the
new value back into the array or Tensor passed, as NumPy code that mutates its inputs does. Such a function's
arguments must not share memory with each other (ValueError), and an array it writes must be writeable.

Composition. Called while a jit, grad, value_and_grad or vjp trace runs, a jitted function runs f inline: the
outer trace records f's graph. So mt.grad(mt.jit(f)) differentiates f, and mt.jit(mt.value_and_grad(f))
replays the value and the gradient as one compiled graph (a training step; README "mt.jit").
"""
from __future__ import annotations
import inspect
from collections import OrderedDict
from typing import Any, Callable, Sequence
import numpy as np
from minitensor import tracing as T
from minitensor.backend.dtype import dtypes
from minitensor.backend.leaves import Unbound, placeholder
from minitensor.pytrees import flatten, unflatten
from minitensor.tensor import Tensor
from minitensor.tracing import TracerError

__all__ = ["jit", "Jitted", "TracerError"]

MAX_TRACES = 64       # traces kept per jitted function


def _is_array(x) -> bool: return isinstance(x, (np.ndarray, Tensor, np.generic))


def _contiguous(x) -> np.ndarray:
  """An argument array's value as a C-contiguous ndarray of its shape (a Tensor's realized value; an ndarray's own
  memory; a NumPy scalar as a 0-d array)."""
  if type(x) is np.ndarray and x.flags.c_contiguous: return x
  if isinstance(x, Tensor): return x._value()
  return np.ascontiguousarray(x).reshape(np.shape(x))       # (ascontiguousarray makes 0-d values 1-d)


class _Trace:
  """One trace of f: the compiled graphs (backend Traced), the output structure with its static results, and
  which arguments f writes into."""
  __slots__ = ("traced", "spec", "static", "slots", "writes")

  def __init__(self, traced, spec, static: list, slots: list[int], writes: list[int]):
    self.traced, self.spec, self.static, self.slots, self.writes = traced, spec, static, slots, writes

  def call(self, arrays: list[np.ndarray], targets: list, mode) -> Any:
    if self.writes: _check_disjoint(arrays, self.writes)
    res = self.traced.run(arrays, mode) if self.traced is not None else []
    n = len(self.slots)
    for k, r in zip(self.writes, res[n:]):
      if isinstance(t := targets[k], Tensor): t[...] = Tensor._of(r)
      else: np.copyto(t, r.reshape(t.shape))
    values = list(self.static)
    for k, r in zip(self.slots, res): values[k] = Tensor._of(r)
    return unflatten(self.spec, iter(values))


def _check_disjoint(arrays: list[np.ndarray], writes: list[int]) -> None:
  for k in writes:
    for j, a in enumerate(arrays):
      if j != k and np.may_share_memory(arrays[k], a):
        raise ValueError(f"jit: f writes into argument array {k} (shape {arrays[k].shape}), which shares memory "
                         f"with argument array {j}; pass separate arrays")


class Jitted:
  """A jitted function (mt.jit): call it as f (`__wrapped__` is f; help(f) shows f's docstring). `traces` counts
  the times f was traced."""

  def __init__(self, f: Callable, static_argnums: Sequence[int], static_argnames: Sequence[str]):
    self.__wrapped__ = f
    self.__name__ = getattr(f, "__name__", type(f).__name__)
    self.__qualname__ = getattr(f, "__qualname__", self.__name__)
    self._f, self._nums, self._names = f, frozenset(static_argnums), frozenset(static_argnames)
    self._sorted = (tuple(sorted(self._nums)), tuple(sorted(self._names)))
    self._cache: OrderedDict = OrderedDict()
    self.traces = 0

  def __call__(self, *args, **kwargs):
    if T.tracing(): return self._f(*args, **kwargs)       # inside another trace: its graph records f's
    if not kwargs and not self._nums and (flat := self._flat_key(args)) is not None:
      if (tr := self._cache.get(flat)) is not None:       # (the arguments are arrays only: no pytree to walk)
        return tr.call([_contiguous(a) for a in args], args, flat[1])
    leaves: list = []
    nums, names = self._sorted
    static = tuple([(k, args[k]) for k in nums if k < len(args)] + [(n, kwargs[n]) for n in names if n in kwargs]) \
      if nums or names else ()
    dyn = ([a for k, a in enumerate(args) if k not in self._nums],
           {n: kwargs[n] for n in sorted(kwargs) if n not in self._names})
    spec = flatten(dyn, leaves)
    kinds, arrays, where = [], [], []
    for k, x in enumerate(leaves):
      if _is_array(x):
        kinds.append((x.shape, x.dtype))
        arrays.append(_contiguous(x))
        where.append(k)
      else: kinds.append((type(x), x))
    key = (spec, static, tuple(kinds), _mode())
    try: tr = self._cache.get(key)
    except TypeError:
      raise TypeError(f"jit({self.__name__}): a static argument is not hashable ({_unhashable(static, leaves)}); "
                      "pass arrays as ndarrays or Tensors, or other values that hash") from None
    if tr is None:
      tr = self._trace(args, kwargs, leaves, arrays, where, spec)
      self._cache[key] = tr
      if not kwargs and not self._nums and (flat := self._flat_key(args)) is not None: self._cache[flat] = tr
      while len(self._cache) > MAX_TRACES: self._cache.popitem(last=False)
    else: self._cache.move_to_end(key)
    return tr.call(arrays, [leaves[k] for k in where], key[3])

  @staticmethod
  def _flat_key(args: tuple) -> tuple | None:
    """The key of positional arguments that are all ndarrays or Tensors (the common call), else None."""
    key: list = ["flat", _mode()]
    for a in args:
      if (tp := type(a)) is not np.ndarray and tp is not Tensor: return None
      key.append(a.shape)
      key.append(a.dtype)
    return tuple(key)

  def _trace(self, args, kwargs, leaves: list, arrays: list[np.ndarray], where: list[int], spec) -> _Trace:
    name = self.__name__
    trace = T.Trace(name)
    phs = [placeholder(dtypes.from_numpy(a.dtype), a.size) for a in arrays]
    tensors = [Tensor(p.reshape(a.shape)) for p, a in zip(phs, arrays)]
    nodes = [t.uop for t in tensors]
    for t in tensors: trace.inputs.add(t)
    vals = list(leaves)
    for k, t in zip(where, tensors): vals[k] = t
    pos, kw = unflatten(spec, iter(vals))
    pos = iter(pos)
    call_args = [args[k] if k in self._nums else next(pos) for k in range(len(args))]
    kw.update({n: kwargs[n] for n in self._names if n in kwargs})
    self.traces += 1
    T.push(trace)
    try: out = self._f(*call_args, **kw)
    except Unbound as e:
      raise TracerError(f"jit({name}): f reads the value of a Tensor computed from its traced arguments "
                        f"({_reader(e.__traceback__)}); a replay would not read it again. Compute with mt.where and "
                        "reductions instead of float(x), bool(x), boolean masks or x.tolist(); functions that compute "
                        "on realized values (sort, fft, linalg's decompositions, unique) run outside f; or make the "
                        "argument static (static_argnums)") from e
    finally: T.pop()
    outs: list = []
    out_spec = flatten(out, outs)
    slots = [k for k, o in enumerate(outs) if isinstance(o, Tensor)]
    static = [None if isinstance(o, Tensor) else o for o in outs]
    writes = [k for k, (t, u) in enumerate(zip(tensors, nodes)) if t._uop is not u]
    for k in writes:
      target = leaves[where[k]]
      if not isinstance(target, Tensor) and not (isinstance(target, np.ndarray) and target.flags.writeable):
        raise ValueError(f"jit({name}): f writes into argument array {k} (shape {arrays[k].shape}), which is "
                         f"{'read-only' if isinstance(target, np.ndarray) else 'a NumPy scalar'}")
    graph = [outs[k].uop for k in slots] + [tensors[k].uop for k in writes]
    from minitensor.backend.traced import Traced  # (the compiler is imported at the first realize)
    return _Trace(Traced(graph, phs) if graph else None, out_spec, static, slots, writes)


def _reader(tb) -> str:
  """Where a trace read a value: the first minitensor function the traced code called on the way to the read."""
  frames = []
  while tb is not None:
    frames.append(tb.tb_frame)
    tb = tb.tb_next
  inside = [f for f in frames[1:] if f.f_globals.get("__name__", "").startswith("minitensor")]
  if not inside: return "in f"
  f = inside[0]
  return f"in {f.f_globals['__name__']}.{f.f_code.co_name}"


def _mode():
  """The backend's mode now (realize.modes, bound at the first call: importing minitensor imports no compiler)."""
  global _mode
  from minitensor.backend.realize import modes
  _mode = modes
  return modes()


def _unhashable(static: tuple, leaves: list) -> str:
  for v in [v for _, v in static] + leaves:
    try: hash(v)
    except TypeError: return f"a {type(v).__name__}"
  return "?"


def jit(f: Callable | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = ()) -> Jitted | Callable[[Callable], Jitted]:
  """f traced once per structure of its arguments and compiled; later calls replay the compiled graph.

  Parameters
  ----------
  f : callable taking arrays (ndarrays, Tensors; any pytree of tuples, lists and dicts of them) and other values,
      returning Tensors (or pytrees of them). Without f, a decorator: @mt.jit(static_argnums=1).
  static_argnums : int or sequence of ints, optional
      Positional arguments that are static even when they are arrays (part of the key, hashable).
  static_argnames : str or sequence of str, optional
      Keyword arguments that are static. Positional arguments and keywords of f's signature are matched both ways,
      as jax.jit does.

  Returns
  -------
  Jitted
      Called as f; module docstring of minitensor.jit for what is traced and what raises TracerError.
  """
  nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
  names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
  if f is None: return lambda g: jit(g, static_argnums=nums, static_argnames=names)
  if not callable(f): raise TypeError(f"jit: expected a function, got {type(f).__name__}")
  for k in nums:
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
      raise ValueError(f"jit: static_argnums must be non-negative ints, got {static_argnums!r}")
  try: params = list(inspect.signature(f).parameters.values())
  except (TypeError, ValueError): params = []
  positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  nums_all = set(nums) | {positional.index(n) for n in names if n in positional}
  names_all = set(names) | {positional[k] for k in nums if k < len(positional)}
  return Jitted(f, sorted(nums_all), sorted(names_all))
