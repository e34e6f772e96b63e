"""Reverse-mode autodiff as a graph transform: grad, value_and_grad, vjp and stop_gradient (JAX's functional API).

    grad(f, argnums=0, has_aux=False)            a function returning the gradient of scalar f wrt the args
    value_and_grad(f, argnums=0, has_aux=False)  a function returning (f's value, the gradient)
    vjp(f, *primals, has_aux=False)              (f's value, vjp_fn): vjp_fn(cotangent) is one cotangent per primal
    stop_gradient(x)                             x's value, through which no gradient flows

How: each differentiated input (a Tensor, array or float; any pytree of tuples, lists and dicts of them) is
replaced for the call of f by a fresh leaf, so an input passed twice, or equal to a constant f builds, is still
its own variable. f runs once on those leaves and records its UOp graph as usual. `backward` walks the nodes
between the leaves and the outputs in reverse topological order and applies one rule per op (gradrules.py),
summing the cotangents of a node used several times. The leaves are then replaced by the inputs' own graphs:
the value and the gradients are lazy Tensors over the same nodes, so realizing them together (`mt.realize(loss,
*grads)`) computes the shared forward once and the kernelizer fuses forward and backward. Nothing is realized
but what f itself asks for, and the concrete indices of an integer-array gather (its adjoint is built from them).

A realized input's leaf holds its data, so f may read values of its inputs (`float(x)`, a mask from x); a lazy
input is traced symbolically and f must not read its values. Integer and bool inputs raise TypeError; integer
and bool intermediate values carry no gradient (as JAX: comparisons, floor, sign, argmax give zeros).
"""
from __future__ import annotations
from typing import Any, Callable, Sequence
import numpy as np
from minitensor import gradrules as R
from minitensor import tracing as T
from minitensor.backend.leaves import Unbound, buffer_of, placeholder
from minitensor.backend.uop import Ops, UOp
from minitensor.pytrees import flatten, unflatten
from minitensor.tensor import Tensor, asarray

__all__ = ["grad", "value_and_grad", "vjp", "stop_gradient"]



# ---------------------------------------------------------------------- the walk
def backward(roots: Sequence[UOp], seeds: Sequence[UOp], wrt: Sequence[UOp],
             concrete: Callable[[UOp], np.ndarray]) -> list[UOp | None]:
  """The cotangents of the nodes `wrt` given cotangents `seeds` of the nodes `roots` (None: none reaches it).

  Only float nodes on a path from a wrt node to a root are visited. `concrete(u)` is the value of an integer node
  (the indices of a gather)."""
  topo = UOp(Ops.SINK, tuple(roots)).toposort()[:-1]
  targets = set(wrt)
  live: dict[UOp, bool] = {}
  for u in topo:
    live[u] = u in targets or (u.dtype.is_float and u.op not in R.ZERO and not _stopped(u)
                               and any(live[s] for s in u.src))
  grads: dict[UOp, UOp] = {}
  for r, s in zip(roots, seeds):
    if live[r]: grads[r] = grads[r] + s if r in grads else s
  for u in reversed(topo):
    if u in targets or (g := grads.pop(u, None)) is None: continue
    for s, c in zip(u.src, _rule(u, g, tuple(live[s] for s in u.src), concrete)):
      if c is not None and live[s]: grads[s] = grads[s] + c if s in grads else c
  return [grads.get(w) for w in wrt]


def _stopped(u: UOp) -> bool: return u.op is Ops.CAST and u.src[0].dtype is u.dtype


def _rule(u: UOp, g: UOp, need: tuple[bool, ...], concrete) -> tuple:
  op = u.op
  if (f := R.UNARY.get(op)) is not None: return (f(g, u.src[0], u),)
  if (f := R.BINARY.get(op)) is not None: return f(u, g, need)
  if (f := R.MOVEMENT.get(op)) is not None: return f(u, g)
  if op is Ops.CAST: return (g.cast(u.src[0].dtype),)
  if op is Ops.BITCAST: return (u.src[0].const_like(0),)     # bits, not values: no derivative
  if op is Ops.INDEX: return (R.index_adjoint(u, g, concrete),)
  raise NotImplementedError(f"no gradient rule for {op.name}")


# ---------------------------------------------------------------------- tracing
class _Trace:
  """The fresh leaves standing for the differentiated inputs during one call of f, and the way back."""
  def __init__(self, api: str):
    self.api, self.subst, self.lazy = api, {}, False

  def leaf(self, x, where: str) -> Tensor:
    if isinstance(x, (bool, int)) or not isinstance(x, Tensor) and np.asarray(x).dtype.kind != "f":
      raise TypeError(f"{self.api}: input {where} is {type(x).__name__} {np.asarray(x).dtype}; only float inputs "
                      "are differentiable (pass floats, or cast integer data with astype)")
    t = asarray(x)
    if t.dtype.kind != "f":
      raise TypeError(f"{self.api}: input {where} has dtype {t.dtype} and shape {t.shape}; only float inputs are "
                      "differentiable (cast it with astype, or leave it out of argnums)")
    a = t._realized()
    self.lazy |= a is None
    buf = buffer_of(a) if a is not None else placeholder(t.uop.dtype, t.size)
    # a leaf holding the input's data computes what the input would; only a placeholder, or an input that may be
    # an enclosing trace's leaf (grad of grad), must be replaced by the input's graph afterwards. The variable is
    # the buffer, not its reshape to the input's shape: reshapes of reshapes fold (UOp.reshape), so f's graph may
    # read the buffer through a reshape of its own
    if a is None or T.GRADS[0]: self.subst[buf] = t.uop.reshape((t.size,))
    return Tensor(buf.reshape(t.shape))

  def back(self, *us: UOp) -> list[UOp]:
    """The graphs us over the inputs' own graphs (one walk for all of them)."""
    return list(UOp(Ops.SINK, us).substitute(self.subst).src) if self.subst and us else list(us)
  def tensor(self, x) -> Any: return Tensor(self.back(x.uop)[0]) if isinstance(x, Tensor) else x
  def concrete(self, u: UOp) -> np.ndarray: return Tensor(self.back(u)[0]).numpy()


def _argnums(argnums, n: int, api: str) -> tuple[int, ...]:
  nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
  for k in nums:
    if not isinstance(k, int) or not -n <= k < n:
      raise ValueError(f"{api}: argnums {argnums!r} out of range for {n} positional argument(s)")
  return tuple(k % n for k in nums)


def _trace(f: Callable, args: tuple, kwargs: dict, nums: tuple[int, ...], has_aux: bool, api: str):
  """Call f with the inputs `nums` replaced by fresh leaves: (trace, {argnum: (spec, leaves)}, output, aux)."""
  tr, args, inputs = _Trace(api), list(args), {}
  for k in nums:
    xs: list = []
    spec = flatten(args[k], xs)
    leaves = [tr.leaf(x, f"{k}" if spec is None else f"{k} (leaf {j})") for j, x in enumerate(xs)]
    args[k] = unflatten(spec, iter(leaves))
    inputs[k] = (spec, leaves)
  T.GRADS[0] += 1
  try: out = f(*args, **kwargs)
  except Unbound as e:
    if tr.lazy and T.current() is None:      # (inside a jit trace, jit names what was read)
      raise TypeError(f"{api}: f asked for the values of a graph over a lazy (unrealized) input it is differentiated "
                      "with respect to; realize that input first (x.realize()), or keep f from reading values") from e
    raise
  finally: T.GRADS[0] -= 1
  aux = None
  if has_aux:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise TypeError(f"{api}: with has_aux=True, f must return a pair (output, aux), got {type(out).__name__}")
    out, aux = out
    xs = []
    spec = flatten(aux, xs)
    aux = unflatten(spec, iter([tr.tensor(x) for x in xs]))
  return tr, inputs, out, aux


def _cotangents(tr: _Trace, inputs: dict, nums: tuple[int, ...], roots: list[UOp], seeds: list[UOp],
                extra: tuple[UOp, ...] = ()) -> tuple[list, list[UOp]]:
  """Per argnum, the gradient pytree (zeros where no gradient reaches a leaf), and the graphs `extra`, all over
  the inputs' own graphs."""
  shapes = [t.shape for k in nums for t in inputs[k][1]]
  wrt = [u.src[0] if (u := t.uop).op is Ops.RESHAPE else u for k in nums for t in inputs[k][1]]   # (the buffers)
  gs = [(g if g is not None else w.const_like(0)).reshape(s)
        for g, w, s in zip(backward(roots, seeds, wrt, tr.concrete), wrt, shapes)]
  it = iter(tr.back(*gs, *extra))
  out = [unflatten(inputs[k][0], iter([Tensor(next(it)) for _ in inputs[k][1]])) for k in nums]
  return out, list(it)


def value_and_grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
  """A function computing f's value and its gradient with respect to the positional arguments `argnums`.

  Parameters
  ----------
  f : callable taking Tensors (any pytree of tuples, lists and dicts of them) and returning a scalar float Tensor
      (or a pair (scalar, aux) with has_aux)
  argnums : int or sequence of ints, default 0
  has_aux : bool, default False

  Returns
  -------
  callable
      (*args, **kwargs) -> (value, grads), or ((value, aux), grads) with has_aux; grads has the structure of the
      argument (a tuple of them when argnums is a sequence). All lazy Tensors.
  """
  def vg(*args, **kwargs):
    nums = _argnums(argnums, len(args), "value_and_grad")
    tr, inputs, out, aux = _trace(f, args, kwargs, nums, has_aux, "grad")
    if not isinstance(out, Tensor) or out.ndim != 0 or out.dtype.kind != "f":
      what = f"a Tensor of shape {out.shape} and dtype {out.dtype}" if isinstance(out, Tensor) else type(out).__name__
      raise TypeError(f"grad: f must return a scalar (0-d) float Tensor, got {what}")
    gs, (v,) = _cotangents(tr, inputs, nums, [out.uop], [out.uop.const_like(1)], (out.uop,))
    value = Tensor(v)
    g = gs[0] if isinstance(argnums, int) else tuple(gs)
    return ((value, aux), g) if has_aux else (value, g)
  return vg


def grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
  """A function computing the gradient of scalar f with respect to the positional arguments `argnums`.

  Parameters
  ----------
  f : callable taking Tensors (any pytree of tuples, lists and dicts of them) and returning a scalar float Tensor
  argnums : int or sequence of ints, default 0
  has_aux : bool, default False (f returns (scalar, aux); the result is then (grads, aux))

  Returns
  -------
  callable
      (*args, **kwargs) -> grads with the structure of the argument(s), as lazy Tensors.
  """
  vg = value_and_grad(f, argnums, has_aux)
  def g(*args, **kwargs):
    (v, g_) = vg(*args, **kwargs)
    return (g_, v[1]) if has_aux else g_
  return g


def vjp(f: Callable, *primals, has_aux: bool = False):
  """f's value at primals and its vector-Jacobian product function.

  Parameters
  ----------
  f : callable taking the primals and returning a pytree of Tensors
  *primals : Tensors or pytrees of them (all differentiated)
  has_aux : bool, default False

  Returns
  -------
  (value, vjp_fn) or (value, vjp_fn, aux)
      vjp_fn(cotangent), with cotangent shaped like the value, returns a tuple with one cotangent per primal.
  """
  nums = tuple(range(len(primals)))
  tr, inputs, out, aux = _trace(f, primals, {}, nums, has_aux, "vjp")
  outs: list = []
  spec = flatten(out, outs)
  if not all(isinstance(o, Tensor) for o in outs): raise TypeError("vjp: f must return Tensors (or pytrees of them)")
  value = unflatten(spec, iter([Tensor(u) for u in tr.back(*(o.uop for o in outs))]))

  def vjp_fn(cotangent) -> tuple:
    cts: list = []
    if flatten(cotangent, cts) != spec or len(cts) != len(outs):
      raise ValueError("vjp: the cotangent must have the structure of f's output")
    roots, seeds = [], []
    for o, c in zip(outs, cts):
      c = asarray(c)
      if c.shape != o.shape: raise ValueError(f"vjp: cotangent of shape {c.shape} for an output of shape {o.shape}")
      if o.dtype.kind == "f": roots.append(o.uop); seeds.append(c.uop.cast(o.uop.dtype))
    return tuple(_cotangents(tr, inputs, nums, roots, seeds)[0])
  return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def stop_gradient(x) -> Tensor:
  """x's value as a Tensor through which no gradient flows (a constant for grad, value_and_grad and vjp)."""
  u = asarray(x).uop
  return Tensor(UOp(Ops.CAST, (u,), None, u.dtype))
