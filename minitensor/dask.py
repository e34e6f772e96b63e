"""minitensor as a dask chunk type: `import minitensor.dask` registers Tensors with dask's public API.

    import dask.array as da, minitensor as mt, minitensor.dask as mtd
    x = mtd.from_array(mt.asarray(a), chunks=(1024, -1))     # Tensor chunks, one slice per task
    p = mt.exp(x - x.max(axis=1, keepdims=True))              # a dask array whose chunks are Tensors
    p.compute()                                               # each task compiles and runs minitensor kernels

What importing this module registers (each with dask's own registry; nothing of dask is patched):

  da.register_chunk_type(Tensor)     dask arrays wrap Tensors as chunks, and do not defer to them in arithmetic
                                     (`t + dask_array` and `dask_array + t` are dask arrays: tensor.binop)
  dask.array.dispatch                concatenate, take, tensordot, einsum, empty, percentile (NumPy's, on the
                                     realized chunk), to_numpy (the realized buffer), and to_minitensor (ours:
                                     `x.to_backend("minitensor")`)
  dask.sizeof                        a Tensor's nbytes (what it holds once realized)
  dask.tokenize.normalize_token      a realized Tensor: its data, hashed once; a lazy one: its graph, with each
                                     leaf's data hashed once; never realizes anything
  the "array_optimize" option        dask's array optimization, then every task wrapped so that the Tensors it
                                     returns (also inside a tuple, list or dict) are realized in the task itself:
                                     workers compute in parallel, and what reaches the scheduler or another
                                     worker is data, never a graph to compute where it is unpickled. (Tasks
                                     fused by dask's linear fusion stay one lazy graph inside: one kernel. A
                                     block's chain that linear fusion leaves apart, such as a reduction's chunk
                                     step and its aggregate, is fused into one task first: `_fused`.)
                                     Only set when the user has not set that option.
  the "minitensor" array backend     `dask.config.set({"array.backend": "minitensor"})`: da.ones/zeros/empty/
                                     full/arange, da.random's RandomState functions and da.random.default_rng's
                                     Generator make Tensor chunks (NumPy's values).
                                     setup.cfg declares it as a `dask.array.backends` entry point, so the option
                                     works without importing this module first.

Tensor pickles as its realized buffer (tensor.py's __reduce__: the buffer itself, no copy, out of band under
pickle protocol 5; a lazy Tensor realizes once and keeps the result). Worker processes import this module when
they unpickle the first task wrapped as above; start them with `preload=["minitensor.dask"]`
(`dask worker --preload minitensor.dask`, or `LocalCluster(..., preload=["minitensor.dask"])`) so that every
registration is there before any task runs.
"""
from __future__ import annotations
import itertools
import dask
import dask.array as da
import numpy as np
from dask.array import dispatch as D
from dask.array.backends import ArrayBackendEntrypoint, array_creation_dispatch
from dask.array.core import normalize_chunks
from dask.core import flatten, get_deps
from dask.sizeof import sizeof
from dask.task_spec import Alias, Task
from dask.tokenize import normalize_token
from dask.utils import Dispatch
from minitensor import extra, manipulation, products
from minitensor.backend.uop import Ops
from minitensor.creation import full
from minitensor.einsum import einsum
from minitensor.tensor import Tensor, asarray, realize

__all__ = ["from_array", "optimize", "to_minitensor_dispatch", "RandomState", "PCG64", "MinitensorBackendEntrypoint"]

to_minitensor_dispatch = Dispatch("to_minitensor_dispatch")


# ---------------------------------------------------------------------- registrations
da.register_chunk_type(Tensor)
D.concatenate_lookup.register(Tensor, manipulation.concatenate)
D.take_lookup.register(Tensor, extra.take)
D.tensordot_lookup.register(Tensor, products.tensordot)
D.empty_lookup.register(Tensor, lambda shape, dtype=None, **kw: full(shape, 0, float if dtype is None else dtype))


@D.einsum_lookup.register(Tensor)
def _einsum_chunk(subscripts, *operands, dtype=None, **kwargs) -> Tensor:
  """dask's einsum chunk: minitensor's einsum (NumPy's casting/order/optimize keywords do not change values)."""
  return einsum(subscripts, *operands, dtype=dtype)


@D.percentile_lookup.register(Tensor)
def _percentile(a: Tensor, q, method: str = "linear"):
  """dask's per-chunk percentile: NumPy's (dask's own) on the realized chunk (minitensor has no percentile)."""
  return D.percentile_lookup.dispatch(np.ndarray)(np.asarray(a), q, method)


@D.to_numpy_dispatch.register(Tensor)
def _to_numpy(data: Tensor, **kwargs) -> np.ndarray:
  """A Tensor chunk as an ndarray: its realized buffer (read-only, no copy)."""
  return np.asarray(data)


@to_minitensor_dispatch.register((np.ndarray, Tensor, object))
def _to_minitensor(data, **kwargs) -> Tensor:
  """A chunk as a Tensor (a Tensor as it is)."""
  return asarray(data)


@sizeof.register(Tensor)
def _sizeof(t: Tensor) -> int:
  """The bytes a Tensor holds once realized: dask's memory accounting of a chunk."""
  return t.nbytes


@normalize_token.register(Tensor)
def _tokenize(t: Tensor):
  """A deterministic token of t's value without realizing it: the realized data (hashed once), or the lazy
  graph's structure with each leaf's data hashed once."""
  if (a := t._realized()) is not None: return "minitensor.Tensor", normalize_token(a)
  nodes = t.uop.toposort()
  index = {u: i for i, u in enumerate(nodes)}
  return "minitensor.Tensor", t.shape, t.dtype.str, [
    (u.op.name, u.dtype.name, normalize_token(u.data) if u.op is Ops.BUFFER else repr(u.arg),
     tuple(index[s] for s in u.src)) for u in nodes]


# ---------------------------------------------------------------------- tasks that realize their results
def _realize_result(value):
  """value with the Tensors it is or holds (in a tuple, list or dict) realized, together."""
  ts = [value] if isinstance(value, Tensor) else \
    [v for v in (value.values() if isinstance(value, dict) else value) if isinstance(v, Tensor)] \
    if isinstance(value, (tuple, list, dict)) else []
  if ts: realize(*ts)
  return value


def _wrapped(key, task):
  """task computing its result and then _realize_result of it (data and aliases as they are)."""
  if isinstance(task, Task): return Task(key, _realize_result, task)
  if type(task) is tuple and task and callable(task[0]): return (_realize_result, task)    # a legacy task
  return task


def optimize(dsk, keys, **kwargs):
  """dask.array's graph optimization, then a block's chain fused into one task (_fused), and each task wrapped so
  that it realizes the Tensors it returns."""
  outputs = set(flatten(keys if isinstance(keys, list) else [keys]))      # (flatten would take a tuple key apart)
  dsk = dict(da.optimization.optimize(dsk, keys, **kwargs))
  while len(fused := _fused(dsk, outputs)) < len(dsk): dsk = fused      # (two readers fused make one reader)
  return {k: _wrapped(k, v) for k, v in dsk.items()}


_NODES = (Task, Alias)     # (dask's linear fusion renames a fused chain's key: the old one is an Alias of it)


def _fused(dsk: dict, outputs: set) -> dict:
  """dsk with each link fused into the node that reads it. A link is a Task (or an Alias), not an output, read by
  one such node only, and the only link that reader reads: a reduction's chunk step read by its aggregate in the
  same block, say, which dask's linear fusion leaves apart where the block's values are also read elsewhere
  (softmax's row max and sum: 8 tasks a block; optimize fuses until no link is left: 1). A fused task computes its
  links as lazy Tensors, inside its own graph, so the steps of a block fuse into its kernels, with fewer tasks to
  schedule; nothing is computed twice (one reader each), and a task reading many blocks' results (a tree
  reduction's aggregate) still gets them from their own tasks, computed in parallel."""
  deps, dependents = get_deps(dsk)
  single = {k: next(iter(d)) for k, d in dependents.items()
            if len(d) == 1 and k not in outputs and isinstance(dsk.get(k), _NODES)
            and isinstance(dsk.get(next(iter(d))), _NODES)}
  reader = {k: r for k, r in single.items() if sum(j in single for j in deps[r]) == 1}
  if not reader: return dsk
  groups: dict = {}
  for k in reader:
    r = reader[k]
    while r in reader: r = reader[r]       # (the first reader that is no link: the group's task)
    groups.setdefault(r, []).append(dsk[k])
  out = {k: v for k, v in dsk.items() if k not in reader}
  for r, tasks in groups.items(): out[r] = Task.fuse(*tasks, dsk[r], key=r)
  return out


if dask.config.get("array_optimize", None) is None: dask.config.set({"array_optimize": optimize})


# ---------------------------------------------------------------------- from_array
def from_array(x, chunks="auto", name: str | None = None) -> da.Array:
  """A dask array of Tensor chunks, each a slice of x made here (as dask.array.from_array does for an ndarray),
  so a task carries its own chunk and not all of x. A lazy x is realized once first; a row chunk of the
  realized buffer is a view of it (no copy), other chunks are contiguous copies.

  Parameters
  ----------
  x : Tensor or array_like
  chunks : int, tuple, "auto" or dict
      As dask.array.from_array's.
  name : str, optional
      The key prefix (default: "array-" and the token of x and chunks).

  Returns
  -------
  dask.array.Array
  """
  a = np.asarray(asarray(x))
  chunks = normalize_chunks(chunks, a.shape, dtype=a.dtype)
  name = name or "array-" + dask.base.tokenize(a, chunks)
  starts = [np.cumsum((0,) + c) for c in chunks]
  dsk = {}
  for idx in itertools.product(*(range(len(c)) for c in chunks)):
    slc = tuple(slice(int(s[i]), int(s[i + 1])) for s, i in zip(starts, idx))
    dsk[(name,) + idx] = Tensor._of(np.ascontiguousarray(a[slc]))
  return da.Array(dsk, name, chunks, meta=Tensor._of(np.empty((0,) * a.ndim, a.dtype)), dtype=a.dtype)


# ---------------------------------------------------------------------- the "minitensor" array backend
class RandomState:
  """NumPy's RandomState whose draws are Tensors (dask's backend RandomState: one per chunk, seeded by dask)."""
  def __init__(self, seed=None):
    self._state = np.random.RandomState(seed)

  def __getattr__(self, name: str):
    f = getattr(self._state, name)
    if not callable(f): return f
    def draw(*args, **kwargs):
      r = f(*args, **kwargs)
      return asarray(r) if isinstance(r, np.ndarray) else r
    return draw


class PCG64(np.random.PCG64):
  """NumPy's PCG64 (the same streams), defined in minitensor so that dask's Generator, which picks the library
  by its bit generator's module, draws each chunk with minitensor.random.default_rng: Tensor chunks."""


def _with_tensor_meta(name: str, *args, meta=None, **kwargs) -> da.Array:
  """dask.array's creation function `name` (NumPy's backend) with Tensor chunks."""
  with dask.config.set({"array.backend": "numpy"}):
    x = getattr(da, name)(*args, **kwargs)
  return x.map_blocks(asarray, dtype=x.dtype, meta=Tensor._of(np.empty((0,) * x.ndim, x.dtype)))


class MinitensorBackendEntrypoint(ArrayBackendEntrypoint):
  """The "minitensor" value of dask's "array.backend" option: creation functions make Tensor chunks."""
  @classmethod
  def to_backend_dispatch(cls) -> Dispatch:
    """The dispatch that turns a chunk into a Tensor."""
    return to_minitensor_dispatch

  @classmethod
  def to_backend(cls, data: da.Array, **kwargs) -> da.Array:
    """data with Tensor chunks (data itself if its chunks are Tensors already)."""
    if isinstance(data._meta, Tensor): return data
    return data.map_blocks(to_minitensor_dispatch, **kwargs)

  @property
  def RandomState(self) -> type:
    """The RandomState class dask's da.random functions draw each chunk from."""
    return RandomState

  @property
  def default_bit_generator(self) -> type:
    """The bit generator of da.random.default_rng: NumPy's PCG64, as minitensor's (Tensor chunks)."""
    return PCG64

  @staticmethod
  def ones(*args, **kwargs) -> da.Array:
    """da.ones with Tensor chunks."""
    return _with_tensor_meta("ones", *args, **kwargs)

  @staticmethod
  def zeros(*args, **kwargs) -> da.Array:
    """da.zeros with Tensor chunks."""
    return _with_tensor_meta("zeros", *args, **kwargs)

  @staticmethod
  def empty(*args, **kwargs) -> da.Array:
    """da.empty with Tensor chunks (zeros: minitensor has no uninitialized memory)."""
    return _with_tensor_meta("zeros", *args, **kwargs)

  @staticmethod
  def full(*args, **kwargs) -> da.Array:
    """da.full with Tensor chunks."""
    return _with_tensor_meta("full", *args, **kwargs)

  @staticmethod
  def arange(*args, like=None, **kwargs) -> da.Array:
    """da.arange with Tensor chunks."""
    return _with_tensor_meta("arange", *args, **kwargs)


array_creation_dispatch.register_backend("minitensor", MinitensorBackendEntrypoint())
