"""The IR: Ops and the hash-consed UOp (its type rules are typerules.py's, applied as each node is built).

One node type serves both worlds. In the *shape world* (what the frontend records) nodes have shapes and
movement ops rearrange them; in the *loop world* (what rangeify produces) every value is a scalar inside
RANGE loops and memory is touched through INDEX, LOAD and STORE, ordered by AFTER and END.

    op        src                          arg                      shape / dtype
    CONST     ()                           python scalar            () / given
    BUFFER    ()                           ParamArg(slot, dt, (n,)) (n,) flat, global memory
    ALLOC     ()                           ParamArg(slot, dt, (n,)) (n,) a local accumulator
    RANGE     ()                           RangeArg(size, idx, kind, var) () / index: 0..size-1, or 0..var-1
    VAR       ()                           VarArg(idx, lo, hi)      () / index: a size, argument s<idx> of the C
    INDEX     (x, *i)                      None                     i.shape + x.shape[len(i):]: pops leading
                                                                    axes (a gather when the i have a shape)
    LOAD      (INDEX,)                     None                     ()
    STORE     (INDEX, value)               None                     () / void
    AFTER     (x, *deps)                   None                     x's: x once deps have happened
    END       (body, *ranges)              None                     closes loops
    SINK      (*effects)                   None                     the program
    RESHAPE EXPAND PERMUTE SHRINK (x,)     shape / perm / ((b, e),) movement: index maps, no data moves
    REDUCE    (x,)                         (op, n)                  pops the last n axes with op
    SCAN      (x,)                         (op, axis)               x.shape: inclusive prefixes along axis, combined
                                                                    in order (element k = scan[k-1] op x[k])
    STACK     (*xs)                        None                     (len(xs), *xs[0].shape)
    STAGE     (x,)                         None                     materialization marker
    PAD       (x,)                         (((b, a), ...), value)   guarded padding (composite.py: why primitive)
    FLIP      (x,)                         axes                     reverses the axes (composite.py: why primitive)
    CAST      (x,)                         None                     x.shape / given
    BITCAST   (x,)                         None                     x.shape / given: x's bits as that dtype (the same
                                                                    item size; not bool or complex)

A shape-world node is at most NumPy's size: its byte size over its non-zero axes below 2**63 (MAX_BYTES). The ops
that make a larger shape from smaller ones (EXPAND, PAD, STACK, INDEX, RESHAPE of an empty array) refuse more, so no
operation can build a graph that would loop 2**63 times; the error is NumPy's ValueError, naming the minitensor
function the user called and the shape.

Nodes are immutable and hash-consed: structurally equal nodes are the same object, so `is` is structural
equality and a dict keyed on UOps is a CSE table. The cons table holds nodes weakly. For that reason `==`
keeps Python's identity meaning; comparisons that build nodes are `<`, `<=`, `>`, `>=`, `.eq()` and `.ne()`.
Every malformed node raises UOpError when it is built.

Ops and the table of the ALU ops (arity, dtype rule, C spelling, cost, NumPy ufunc) are ops.py's, re-exported here;
the type rule of an ALU op reads that table. The walkers are walk.py's, re-exported here too: `rewrite(root, fn)`
is the one walker that rebuilds a graph bottom-up (substitute, simplify and kernelize use it), `memo_walk` runs
rangeify's rules, and `bounds(u)` (also `u.vmin`, `u.vmax`) is the range of an integer or bool node's value from
RANGE sizes, VAR limits and constants, cached on the node; symbolic.py simplifies with it.
"""
from __future__ import annotations
import math
import weakref
from _weakref import _remove_dead_weakref as _uncons  # del d[k] if d[k] is a dead weakref (C, atomic)
from typing import Any
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.ops import ALU, BINARY, COMPARE, COMPLEX_OK, MOVEMENT, REDUCE_OPS, UNARY, Ops
from minitensor.backend.typerules import (
  ALU_NO_CAST,
  COMMON_NODE,
  COMMON_RULES,
  FLOAT_ARG,
  MAX_BYTES,
  AxisType,
  ParamArg,
  RangeArg,
  UOpError,
  VarArg,
  accumulates,
  argkey,
  bind,
  cast_rule,
  fits,
  infer,
  infer_alu,
  memory_of,
  pad_rule,
  prod,
)
from minitensor.backend.walk import bounds, memo_walk, rewrite

# (the builders' members as globals: on Python 3.11 an Enum member read through its class costs about 90 ns, four
# times a global's, because EnumType defines __getattr__; graph building reads several per node)
_CONST, _BUFFER, _PAD, _CAST, _RESHAPE, _EXPAND, _PERMUTE, _SHRINK, _REDUCE, _ADD, _MUL, _SINK = (
  Ops.CONST, Ops.BUFFER, Ops.PAD, Ops.CAST, Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.SHRINK, Ops.REDUCE, Ops.ADD,
  Ops.MUL, Ops.SINK)

# the op table's names are re-exported: stages import the IR from here
__all__ = ["ALU", "BINARY", "COMPARE", "COMPLEX_OK", "MAX_BYTES", "MOVEMENT", "REDUCE_OPS", "UNARY", "Ops", "UOp",
           "UOpError", "AxisType", "ParamArg", "RangeArg", "VarArg", "accumulates", "argkey", "bounds", "buf", "fits",
           "live_nodes", "memo_walk", "memory_of", "prod", "range_", "rewrite", "sink", "var"]


# the cons table: key -> weakref of the node; a node's death removes its entry (only while it is that dead weakref:
# the key may hold a newer node by then). A plain dict: WeakValueDictionary's methods are Python-level calls.
_CONS: dict[tuple, weakref.ref] = {}


class _Entry(weakref.ref):
  """A cons-table entry: a weakref of a node that holds its key, so one callback serves every node (a lambda made
  per node cost about 50 ns of each node's construction)."""
  __slots__ = ("key",)


def _dropped(e: _Entry) -> None: _uncons(_CONS, e.key)


def _node(op: Ops, x: UOp, shape: tuple[int, ...]) -> UOp:
  """The movement node UOp(op, (x,), shape) of a RESHAPE or EXPAND whose result is `shape` (its argument) in x's
  dtype, for a caller that has checked it (UOp.broadcast): UOp.__new__'s common path without the rule
  (the same cons key and fields: a change to one is a change to both)."""
  key = (op, (x,), shape, None)
  if (r := _CONS.get(key)) is not None and (u := r()) is not None: return u
  u = object.__new__(UOp)
  u.op, u.src, u.arg, u.dtype, u.shape = op, (x,), shape, x.dtype, shape
  u._ranges = u._bounds = u._key = u._simp = u.data = u._tree = u._order = None
  u.depth = x.depth + 1
  (e := _Entry(u, _dropped)).key = key
  _CONS[key] = e
  return u


def live_nodes() -> int:
  """The number of entries in the hash-cons table (live nodes, and dead ones not yet swept)."""
  return len(_CONS)
_GIVEN_DTYPE = {Ops.CONST, Ops.CAST, Ops.BITCAST}
_LIKE: dict[tuple, UOp] = {}      # (dtype, shape, type, argkey) -> a broadcast constant (UOp.const_like)
LIKE_SIZE = 4096
_PY_SCALAR = frozenset((bool, int, float, complex))


class UOp:
  __slots__ = ("op", "src", "arg", "dtype", "shape", "_ranges", "_bounds", "_key", "_simp", "data", "depth",
               "_tree", "_order", "__weakref__")
  op: Ops
  src: tuple[UOp, ...]
  arg: Any
  dtype: DType
  shape: tuple[int, ...]
  data: Any            # a realized BUFFER's ndarray (set by the runtime; None everywhere else)
  depth: int           # the longest path to a leaf (a value held since it was built counts as the graph it was)

  def __new__(cls, op: Ops, src: tuple[UOp, ...] = (), arg: Any = None, dtype: DType | None = None):
    if dtype is None and arg is None and op in ALU_NO_CAST:       # the hot path: an ALU node
      key = (op, src, None, None)
      if (r := _CONS.get(key)) is not None and (u := r()) is not None: return u
      if type(src) is not tuple: raise UOpError(f"{op.name}: sources must be a tuple of UOps")
      for s in src:
        if type(s) is not UOp: raise UOpError(f"{op.name}: sources must be UOps")
      dt, shape = infer_alu(op, src)
    elif op in COMMON_NODE and dtype is None:       # the shape world's most common nodes
      key = (op, src, arg, None)
      if (r := _CONS.get(key)) is not None and (u := r()) is not None: return u
      dt, shape = COMMON_RULES[op](src, arg, None) or infer(op, src, arg, None)
    elif op is _CONST and type(dtype) is DType and not src and dtype is not dtypes.void:   # (a scalar)
      arg = dtype.python(arg)
      key = (op, (), argkey(arg), dtype)
      if (r := _CONS.get(key)) is not None and (u := r()) is not None: return u
      src, dt, shape = (), dtype, ()
    elif op is _BUFFER and type(arg) is ParamArg and not src and dtype is None and type(arg.dtype) is DType and \
        type(s := arg.shape) is tuple and len(s) == 1 and type(s[0]) is int and s[0] >= 0:        # (a leaf)
      key = (op, (), arg, None)
      if (r := _CONS.get(key)) is not None and (u := r()) is not None: return u
      src, dt, shape = (), arg.dtype, s
    elif op is _PAD and dtype is None and type(arg) is tuple and len(arg) == 2:   # (argkey of its fill alone)
      key = (op, src, (arg[0], argkey(arg[1])), None)
      if (r := _CONS.get(key)) is not None and (u := r()) is not None: return u
      dt, shape = pad_rule(src, arg, None) or infer(op, src, arg, None)
    elif op is _CAST and dtype is not None:        # (its result is always `dtype`)
      key = (op, src, arg, dtype)
      if (r := _CONS.get(key)) is not None and (u := r()) is not None: return u
      dt, shape = cast_rule(src, arg, dtype) or infer(op, src, arg, dtype)
    else:
      if op is _CONST and isinstance(dtype, DType): arg = dtype.python(arg)
      key = (op, src, argkey(arg) if op in FLOAT_ARG else arg, dtype if op in _GIVEN_DTYPE else None)
      if (r := _CONS.get(key)) is not None and (u := r()) is not None:
        if dtype is not None and u.dtype is not dtype:
          raise UOpError(f"{op.name}: result is {u.dtype.name}, not {dtype.name}")
        return u
      dt, shape = infer(op, src, arg, dtype)
      if dtype is not None and dt is not dtype: raise UOpError(f"{op.name}: result is {dt.name}, not {dtype.name}")
    u = object.__new__(cls)
    u.op, u.src, u.arg, u.dtype, u.shape = op, src, arg, dt, shape
    u._ranges = u._bounds = u._key = u._simp = u.data = u._tree = u._order = None
    n = len(src)
    if n == 2: u.depth = (a if (a := src[0].depth) > (b := src[1].depth) else b) + 1    # (max() is a call)
    else: u.depth = 0 if not n else src[0].depth + 1 if n == 1 else max([s.depth for s in src]) + 1
    (e := _Entry(u, _dropped)).key = key
    _CONS[key] = e
    return u

  def broadcast(self, shape: tuple[int, ...]) -> UOp:
    """self broadcast to `shape` by NumPy's rule, where `shape` is the broadcast of self's shape with others'
    (numpy_rules.broadcast_shapes computed it, or self is a scalar: either way it holds): the RESHAPE adding leading
    ones and the EXPAND that UOp.reshape and UOp.expand would make, built without their rules' checks but NumPy's
    size limit (ValueError as theirs). An operator on operands of two shapes builds these for each (x.T - x: 2.1 ->
    0.5 us a node), and a loop multiplying by a new number each step (`p * i`) for the number (5.6 -> 1.6 us)."""
    if (have := self.shape) == shape: return self
    if not fits(shape, self.dtype.itemsize): return self.reshape((1,) * (len(shape) - len(have)) + have).expand(shape)
    u = self if len(have) == len(shape) else self.reshape((1,) * (len(shape) - len(have)) + have) \
      if self.op is _RESHAPE else _node(_RESHAPE, self, (1,) * (len(shape) - len(have)) + have)   # (folds)
    return u if u.shape == shape else _node(_EXPAND, u, shape)

  def __reduce__(self): return (UOp, (self.op, self.src, self.arg, self.dtype if self.op in _GIVEN_DTYPE else None))
  def __repr__(self) -> str:
    if self.op is Ops.CONST: return f"UOp.const({self.arg!r}, {self.dtype!r})"
    if self.op is Ops.RANGE: return f"range_({self.arg.size}, {self.arg.idx}, {self.arg.kind})"
    return f"UOp({self.op}, <{len(self.src)} src>, {self.arg!r}) : {self.dtype.name} {self.shape}"
  def __bool__(self): raise TypeError("a UOp has no truth value; compare with `is`, or simplify() and read .arg")

  # ---- graph utilities
  def toposort(self, known=()) -> list[UOp]:
    """Every node reachable from self, each after its sources; nodes in `known` are neither listed nor entered
    (a walk that continues an earlier one). Iterative: graphs may be far deeper than Python's stack. A SINK keeps
    its order: the lowering stages walk a kernel's SINK some ten times (a list is returned, theirs to change)."""
    if (order := self._order) is not None and not known: return [*order, self]
    seen: dict[UOp, None] = {}
    stack: list[tuple[UOp, bool]] = [(self, False)]
    while stack:
      u, done = stack.pop()
      if u in seen: continue
      if done: seen[u] = None; continue
      if u in known: continue
      stack.append((u, True))
      stack.extend((s, False) for s in reversed(u.src) if s not in seen)
    order = list(seen)
    # (without the SINK itself, the last: a cycle through it would keep a dead graph's nodes, and the values they
    # hold, alive until the garbage collector runs, and hash-consing would hand them to new graphs)
    if self.op is _SINK and not known: self._order = tuple(order[:-1])
    return order

  def replace(self, **kw) -> UOp:
    d = dict(op=self.op, src=self.src, arg=self.arg, dtype=self.dtype if self.op in _GIVEN_DTYPE else None)
    d.update(kw)
    return UOp(d["op"], d["src"], d["arg"], d["dtype"])

  def substitute(self, mapping: dict[UOp, UOp]) -> UOp:
    """self with every node in `mapping` replaced, the rest rebuilt on top of the replacements."""
    return rewrite(self, memo=dict(mapping))

  def localize(self) -> tuple[UOp, tuple[int, ...]]:
    """self with its BUFFER slots renumbered 0..k-1 in slot order, and the old slots in that order: equal kernels
    over other buffers become the same graph (one function, one structural key)."""
    bufs = sorted({u for u in self.toposort() if u.op is Ops.BUFFER}, key=lambda b: b.arg.slot)
    mapping = {b: UOp(Ops.BUFFER, (), ParamArg(k, b.arg.dtype, b.arg.shape)) for k, b in enumerate(bufs)}
    return self.substitute(mapping), tuple(b.arg.slot for b in bufs)

  @property
  def ranges(self) -> frozenset[UOp]:
    """The RANGE nodes this node mentions (syntactically)."""
    if self._ranges is None:
      for u in self.toposort():
        if u._ranges is None:
          u._ranges = frozenset((u,)) if u.op is Ops.RANGE else frozenset().union(*(s._ranges for s in u.src))
    return self._ranges

  @property
  def key(self) -> bytes:
    """A structural digest, stable across processes: the graph-cache and canonical-order key."""
    if self._key is None:
      from minitensor.backend.diskcache import blake2b
      for u in self.toposort():
        if u._key is None:
          a = (u.arg.size, u.arg.idx, u.arg.kind.name, None if u.arg.var is None else u.arg.var.key) \
            if u.op is Ops.RANGE else (u.arg.slot, u.arg.dtype.name, u.arg.shape) \
            if u.op in (Ops.BUFFER, Ops.ALLOC) else (u.arg[0].name, u.arg[1]) if u.op in (Ops.REDUCE, Ops.SCAN) \
            else argkey(u.arg)
          h = blake2b(repr((u.op.name, u.dtype.name, a)).encode(), digest_size=16)
          for s in u.src: h.update(s._key)
          u._key = h.digest()
    return self._key

  @property
  def vmin(self): return bounds(self)[0]
  @property
  def vmax(self): return bounds(self)[1]

  # ---- builders
  @staticmethod
  def const(v, dtype: DType | None = None) -> UOp:
    if dtype is None:
      dtype = dtypes.bool if isinstance(v, bool) else dtypes.index if isinstance(v, int) else dtypes.float32
    return UOp(Ops.CONST, (), v, dtype)

  def const_like(self, v) -> UOp:
    """A constant of self's dtype and shape (a scalar CONST broadcast with RESHAPE + EXPAND). The last
    LIKE_SIZE broadcast constants of Python scalars are kept (they hold no data): graph building asks for the same
    few again and again (the -1 of every subtraction), which the weak cons table would otherwise build anew."""
    if not self.shape: return UOp.const(v, self.dtype)
    if type(v) not in _PY_SCALAR:        # (a NumPy scalar's -0.0 equals 0.0 as a key: built, not kept)
      return UOp.const(v, self.dtype).reshape((1,) * len(self.shape)).expand(self.shape)
    key = (self.dtype, self.shape, type(v), argkey(v))
    if (u := _LIKE.get(key)) is None:
      if len(_LIKE) >= LIKE_SIZE: _LIKE.clear()
      u = _LIKE[key] = UOp.const(v, self.dtype).reshape((1,) * len(self.shape)).expand(self.shape)
    return u

  def index(self, *idx: UOp | int) -> UOp:
    return UOp(Ops.INDEX, (self, *(i if isinstance(i, UOp) else UOp.const(i) for i in idx)))
  def load(self) -> UOp: return UOp(Ops.LOAD, (self,))
  def store(self, v: UOp | int | float) -> UOp:
    return UOp(Ops.STORE, (self, v if isinstance(v, UOp) else UOp.const(v, self.dtype)))
  def after(self, *deps: UOp) -> UOp: return UOp(Ops.AFTER, (self, *deps)) if deps else self
  def end(self, *ranges: UOp) -> UOp: return UOp(Ops.END, (self, *ranges)) if ranges else self
  def cast(self, dtype: DType) -> UOp: return self if self.dtype is dtype else UOp(_CAST, (self,), None, dtype)
  def bitcast(self, dtype: DType) -> UOp:
    """self's bits read as `dtype` (of the same item size)."""
    return self if self.dtype is dtype else UOp(Ops.BITCAST, (self,), None, dtype)
  def stage(self) -> UOp: return UOp(Ops.STAGE, (self,))

  # the movement builders return self when they would not move anything (reshape or expand to self's shape, the
  # identity permutation)
  def reshape(self, shape: tuple[int, ...]) -> UOp:
    if type(shape) is tuple and shape == self.shape: return self
    shape = tuple(map(int, shape))
    if shape == self.shape: return self
    if self.op is _RESHAPE and self.data is None and (not shape or min(shape) > 0) and \
        math.prod(shape) == math.prod(self.shape):
      # (a valid reshape of an unrealized reshape is one reshape of its source: chains that end alike are one graph,
      # one program; an invalid one is refused below, naming the shapes it was asked with)
      x = self.src[0]
      return x if shape == x.shape else UOp(_RESHAPE, (x,), shape)
    return UOp(_RESHAPE, (self,), shape)
  def expand(self, shape: tuple[int, ...]) -> UOp:
    if type(shape) is tuple and shape == self.shape: return self
    shape = tuple(map(int, shape))
    return self if shape == self.shape else UOp(_EXPAND, (self,), shape)
  def permute(self, p: tuple[int, ...]) -> UOp:
    p = tuple(map(int, p))
    return self if p == tuple(range(len(self.shape))) else UOp(_PERMUTE, (self,), p)
  def shrink(self, arg: tuple[tuple[int, int], ...]) -> UOp:
    arg = tuple((int(b), int(e)) for b, e in arg)
    return self if arg == tuple((0, s) for s in self.shape) else UOp(_SHRINK, (self,), arg)
  def reduce(self, op: Ops, n: int) -> UOp: return UOp(_REDUCE, (self,), (op, n))
  def scan(self, op: Ops, axis: int) -> UOp: return UOp(Ops.SCAN, (self,), (op, axis))
  def pad(self, pads: tuple[tuple[int, int], ...], value=0) -> UOp:
    pads = tuple((int(b), int(a)) for b, a in pads)
    if len(pads) == len(self.shape) and all(p == (0, 0) for p in pads): return self
    return UOp(_PAD, (self,), (pads, self.dtype.python(value)))
  def flip(self, axes: tuple[int, ...]) -> UOp:
    if not all(isinstance(a, int) and 0 <= a < len(self.shape) for a in axes):
      return UOp(Ops.FLIP, (self,), tuple(axes))
    axes = tuple(sorted(a for a in axes if self.shape[a] > 1))
    return UOp(Ops.FLIP, (self,), axes) if axes else self

  # ---- ALU
  def _operand(self, x) -> UOp: return x if isinstance(x, UOp) else self.const_like(x)
  def alu(self, op: Ops, *src) -> UOp:
    if len(src) == 1:                                                  # (no generator: dispatch, W9)
      return UOp(op, (self, x if isinstance(x := src[0], UOp) else self.const_like(x)))
    return UOp(op, (self, *[self._operand(s) for s in src]))
  def where(self, a, b) -> UOp:
    a = a if isinstance(a, UOp) else (b.const_like(a) if isinstance(b, UOp) else
                                      UOp.const(a).reshape((1,) * len(self.shape)).expand(self.shape) if self.shape
                                      else UOp.const(a))
    return UOp(Ops.WHERE, (self, a, a._operand(b)))
  def __add__(self, x): return self.alu(_ADD, x)
  def __radd__(self, x): return self._operand(x).alu(_ADD, self)
  def __mul__(self, x): return self.alu(_MUL, x)
  def __rmul__(self, x): return self._operand(x).alu(_MUL, self)
  def __neg__(self):
    # a broadcast number negated is the negated number broadcast (`x - 2.0` is x + -2.0: one lifted constant, what
    # replay's constant key recognizes, instead of a product of two built anew at each call)
    c = self
    while c.op is _EXPAND or c.op is _RESHAPE: c = c.src[0]
    if c.op is _CONST and c.data is None and not c.src and (d := c.dtype).kind in "iuf" and \
        type(v := c.arg) in (int, float):
      return self.const_like(-float(v) if d.kind == "f" else d.python(-v))
    return self * -1
  def __sub__(self, x): return self + (-self._operand(x))
  def __rsub__(self, x): return self._operand(x) + (-self)
  def __truediv__(self, x): return self.alu(Ops.FDIV, x)
  def __rtruediv__(self, x): return self._operand(x).alu(Ops.FDIV, self)
  def __floordiv__(self, x): return self.alu(Ops.FLOORDIV, x)
  def __rfloordiv__(self, x): return self._operand(x).alu(Ops.FLOORDIV, self)
  def __mod__(self, x): return self.alu(Ops.FLOORMOD, x)
  def __rmod__(self, x): return self._operand(x).alu(Ops.FLOORMOD, self)
  def __and__(self, x): return self.alu(Ops.AND, x)
  def __or__(self, x): return self.alu(Ops.OR, x)
  def __xor__(self, x): return self.alu(Ops.XOR, x)
  def __lshift__(self, x): return self.alu(Ops.SHL, x)
  def __rshift__(self, x): return self.alu(Ops.SHR, x)
  def __lt__(self, x): return self.alu(Ops.CMPLT, x)
  def __le__(self, x): return self.alu(Ops.CMPLE, x)
  def __gt__(self, x): return self._operand(x).alu(Ops.CMPLT, self)
  def __ge__(self, x): return self._operand(x).alu(Ops.CMPLE, self)
  def eq(self, x) -> UOp: return self.alu(Ops.CMPEQ, x)
  def ne(self, x) -> UOp: return self.alu(Ops.CMPNE, x)
  def maximum(self, x) -> UOp: return self.alu(Ops.MAX, x)
  def minimum(self, x) -> UOp: return self.alu(Ops.MIN, x)
  __hash__ = object.__hash__
  __eq__ = object.__eq__


bind(UOp)


def range_(size: int, idx: int, kind: AxisType = AxisType.LOOP, var: UOp | None = None) -> UOp:
  return UOp(Ops.RANGE, (), RangeArg(size, idx, kind, var))


def var(idx: int, lo: int, hi: int) -> UOp:
  """A size known only when the kernel runs (its C argument `s<idx>`), in [lo, hi]."""
  return UOp(Ops.VAR, (), VarArg(idx, lo, hi))

def sink(*srcs: UOp) -> UOp: return UOp(Ops.SINK, tuple(srcs))

def buf(slot: int, size: int, dtype: DType = dtypes.float32) -> UOp:
  """A flat BUFFER of `size` elements, bound to argument `slot` of the kernel."""
  return UOp(Ops.BUFFER, (), ParamArg(slot, dtype, (size,)))
