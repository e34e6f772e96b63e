"""tracing: which function calls are being traced now (mt.jit, mt.grad), and what a jit trace forbids.

A jit trace (jit.py) calls f once on placeholder inputs and replays the compiled graph afterwards, so what f
does besides building that graph happens only when it traces. Three things would then change numbers silently,
and raise TracerError at the call instead:

    reading values     a value computed from a traced input (`float(x)`, `if x.sum() > 0`, a boolean mask of
                       x): the backend raises leaves.Unbound, which jit turns into TracerError
    writing outside f  into a Tensor that f did not create (a global, a closure's Tensor): the write would not
                       be replayed (writes into f's own arguments are replayed: jit writes their values back)
    drawing randomly   mt.random inside f would replay the same numbers each call

`born` records the Tensors created while a jit trace runs in this thread; views.assign asks `check_write`,
random_draws asks `check_draw`. ACTIVE counts the traces of all threads, so the Tensors made outside any trace
pay one list read.
"""
from __future__ import annotations
import threading
from minitensor.live import Held

ACTIVE = [0]                 # jit traces running now, in any thread
GRADS = [0]                  # grad/vjp traces of f running now (autodiff), in any thread
_local = threading.local()


class TracerError(TypeError):
  """A jit-traced function did something that its replays would not repeat (read a traced value, wrote into a
  Tensor it did not create, drew random numbers). As jax's ConcretizationTypeError, a TypeError."""


class Trace:
  """One jit trace in progress: the function's name (for messages), its argument Tensors and the Tensors born."""
  __slots__ = ("name", "inputs", "born")

  def __init__(self, name: str):
    self.name, self.inputs, self.born = name, Held(), Held()


def current() -> Trace | None:
  """The innermost jit trace of this thread, if any."""
  return (s[-1] if (s := getattr(_local, "stack", None)) else None) if ACTIVE[0] else None


def tracing() -> bool:
  """Whether a jit or grad trace is running (in any thread): a jitted function called then runs f inline."""
  return bool(ACTIVE[0] or GRADS[0])


def push(t: Trace) -> None:
  if getattr(_local, "stack", None) is None: _local.stack = []
  _local.stack.append(t)
  ACTIVE[0] += 1


def pop() -> None:
  _local.stack.pop()
  ACTIVE[0] -= 1


def born(t) -> None:
  """Tensor t was just created: inside a jit trace of this thread, f may write into it."""
  if (tr := current()) is not None: tr.born.add(t)


def check_write(root) -> None:
  """Before a write into root: TracerError inside a jit trace when root is neither an argument of f nor made by f."""
  if (tr := current()) is not None and root not in tr.born and root not in tr.inputs:
    raise TracerError(f"jit({tr.name}): f writes into a Tensor of shape {root.shape} and dtype {root.dtype} that it "
                      "did not create and that is not one of its arguments (a global or a closure's Tensor); a replay "
                      "would not repeat that write: pass it as an argument, or return the new value")


def check_draw(what: str) -> None:
  """Before a random draw: TracerError inside a jit trace (each replay would give the trace's numbers)."""
  if (tr := current()) is not None:
    raise TracerError(f"jit({tr.name}): f draws random numbers ({what}); every replay would return the numbers drawn "
                      "when it traced: draw them outside f and pass them as an argument")
