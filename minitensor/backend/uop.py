"""The IR: Ops, the hash-consed UOp, and its type checker.

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
import sys
import weakref
from _weakref import _remove_dead_weakref as _uncons  # del d[k] if d[k] is a dead weakref (C, atomic)
from enum import Enum, auto
from typing import Any, NamedTuple
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.ops import ALU, ALU_OPS, BINARY, COMPARE, COMPLEX_OK, MOVEMENT, REDUCE_OPS, UNARY, Ops
from minitensor.backend.walk import bounds, memo_walk, rewrite

# the op table's names are re-exported: stages import the IR from here
__all__ = ["ALU", "BINARY", "COMPARE", "COMPLEX_OK", "MAX_BYTES", "MOVEMENT", "REDUCE_OPS", "UNARY", "Ops", "UOp",
           "UOpError", "AxisType", "ParamArg", "RangeArg", "VarArg", "argkey", "bounds", "buf", "fits", "live_nodes",
           "memo_walk", "memory_of", "prod", "range_", "rewrite", "sink", "var"]


class UOpError(ValueError):
  """A node that breaks a type rule. Raised at construction, with the op and the offending shapes/dtypes."""


class AxisType(Enum):
  LOOP = auto(); REDUCE = auto(); THREAD = auto(); VECTOR = auto()
  __hash__ = object.__hash__


class ParamArg(NamedTuple):
  slot: int
  dtype: DType
  shape: tuple[int, ...]


class RangeArg(NamedTuple):
  size: int                        # the extent (for a symbolic loop: the size it was lowered at, for cost estimates)
  idx: int
  kind: AxisType = AxisType.LOOP
  # a symbolic loop's extent: a VAR, bound when the kernel is called, or an index expression of VARs and of the
  # loops around it (the last, partial block of a split loop: min(f, n - block*f))
  var: UOp | None = None


class VarArg(NamedTuple):
  """A size that is an argument of the kernel (`int64_t s<idx>`), known to lie in [lo, hi]."""
  idx: int
  lo: int
  hi: int


# the dtype rule of the ALU ops, read from the op table (ops.py)
_FLOAT_ONLY = frozenset(o for o, d in ALU_OPS.items() if d.operands == "float")
_INT_ONLY = frozenset(o for o, d in ALU_OPS.items() if d.operands in ("int", "bits"))
_BITS = frozenset(o for o, d in ALU_OPS.items() if d.operands == "bits")           # integers and bool
_NOT_BOOL = frozenset(o for o, d in ALU_OPS.items() if d.operands == "num")
_OF_PARTS = frozenset(o for o, d in ALU_OPS.items() if d.operands in ("complex", "parts"))   # REAL, IMAG, CMPLX
_TO_REAL = frozenset(o for o, d in ALU_OPS.items() if d.result == "real")                   # ABS, REAL, IMAG
_ALU_NO_CAST = frozenset(ALU_OPS)
# per ALU op: (arity, float only, int only, bits, not bool, of parts, compare), so its type check is one lookup
_ALU_RULE = {o: (d.arity, o in _FLOAT_ONLY, o in _INT_ONLY, o in _BITS, o in _NOT_BOOL, o in _OF_PARTS, o in COMPARE)
             for o, d in ALU_OPS.items()}


def prod(xs) -> int:
  out = 1
  for x in xs: out *= x
  return out


MAX_BYTES = 2 ** 63      # NumPy's limit: an array's byte size (of its non-zero axes) fits a signed 64-bit integer


def fits(shape: tuple[int, ...], itemsize: int) -> bool:
  """Whether an array of `shape` with elements of itemsize bytes is within NumPy's size limit."""
  n = math.prod(shape)
  return (n or math.prod([s for s in shape if s])) * itemsize < MAX_BYTES


def _sized(op: Ops, dtype: DType, shape: tuple[int, ...]) -> tuple[DType, tuple[int, ...]]:
  """(dtype, shape) of a node that may have grown past NumPy's size limit; NumPy's ValueError if it has (the
  user's error, not a malformed node)."""
  if not fits(shape, dtype.itemsize):
    raise ValueError(f"{_called()}: array is too big; {op.name} to shape {shape} of {dtype.name} would be larger "
                     "than the maximum possible size")
  return dtype, shape


def _called() -> str:
  """The minitensor function the user called (the outermost frame of the package), which a size error names."""
  f, name = sys._getframe(1), "minitensor"
  while f is not None and ((m := f.f_globals.get("__name__", "")) == "minitensor" or m.startswith("minitensor.")):
    name, f = f.f_code.co_name, f.f_back
  return name.strip("_")


def _check(cond: bool, msg) -> None:
  """Raise UOpError(msg()) unless cond; msg is a callable so the message is only built on failure."""
  if not cond: raise UOpError(msg() if callable(msg) else msg)


def _shape(s) -> tuple[int, ...]:
  _check(isinstance(s, tuple) and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in s),
         lambda: f"bad shape {s!r}: a tuple of non-negative ints")
  return s


def _infer(op: Ops, src: tuple[UOp, ...], arg: Any, dtype: DType | None) -> tuple[DType, tuple[int, ...]]:
  """The type rule of every op: (dtype, shape) of a well-formed node, else UOpError."""
  if type(op) is not Ops: raise UOpError(f"not an op: {op!r}")
  if type(src) is not tuple: raise UOpError(f"{op.name}: sources must be a tuple of UOps")
  for s in src:
    if type(s) is not UOp: raise UOpError(f"{op.name}: sources must be UOps")
  if op in _ALU_NO_CAST: return _infer_alu(op, src)
  n = op._name_
  if op is Ops.CONST:
    _check(not src and isinstance(dtype, DType) and dtype is not dtypes.void,
           lambda: "CONST: needs a dtype and no sources")
    return dtype, ()
  if op in (Ops.BUFFER, Ops.ALLOC):
    _check(not src and isinstance(arg, ParamArg) and len(_shape(arg.shape)) == 1,
           lambda: f"{n}: arg must be ParamArg(slot, dtype, (size,))")
    return arg.dtype, arg.shape
  if op is Ops.RANGE:
    _check(not src and isinstance(arg, RangeArg) and (arg.var is None or arg.var.dtype is dtypes.index) and
           arg.size >= (1 if arg.var is None else 0),
           lambda: f"RANGE: arg must be RangeArg(size >= 1 (0 with an extent), idx, kind, index extent or None), "
                   f"got {arg!r}")
    return dtypes.index, ()
  if op is Ops.VAR:
    _check(not src and isinstance(arg, VarArg) and 0 <= arg.lo <= arg.hi,
           lambda: f"VAR: arg must be VarArg(idx, lo <= hi), got {arg!r}")
    return dtypes.index, ()
  if op in (Ops.SINK, Ops.END, Ops.STORE, Ops.LOAD, Ops.AFTER): return _infer_effect(op, src)
  if op is Ops.INDEX:
    _check(len(src) >= 2, "INDEX: needs a value and at least one index")
    x, idx = src[0], src[1:]
    _check(len(idx) <= len(x.shape), lambda: f"INDEX: {len(idx)} indices for shape {x.shape}")
    for i in idx:
      _check(i.dtype.is_int, lambda: f"INDEX: indices must be integers, got {i.dtype.name}")
      _check(i.shape == idx[0].shape, lambda: f"INDEX: index shapes differ: {idx[0].shape} vs {i.shape}")
    return _sized(op, x.dtype, idx[0].shape + x.shape[len(idx):])
  if op is Ops.CAST:
    _check(len(src) == 1 and isinstance(dtype, DType) and dtype is not dtypes.void,
           "CAST: one source and a target dtype")
    return dtype, src[0].shape
  if op is Ops.BITCAST:
    _check(len(src) == 1 and isinstance(dtype, DType) and dtype.itemsize == src[0].dtype.itemsize and
           not {dtype.kind, src[0].dtype.kind} & set("bcxv"),
           lambda: f"BITCAST: one source and a target dtype of its item size (no bool, complex or index), got "
                   f"{src[0].dtype.name if src and isinstance(src[0], UOp) else src} -> {dtype}")
    return dtype, src[0].shape
  return _infer_shape(op, src, arg)


# The common well-formed case of the shape world's most frequent nodes (graph building makes many): its (dtype, shape)
# by the rule of _infer, or None, and _infer decides (with its messages). Sources must be one UOp; shapes are tuples of
# non-negative ints; permutations and reductions take ints.
def _reshape_rule(src: tuple, arg, dtype) -> tuple[DType, tuple[int, ...]] | None:
  if len(src) == 1 and type(x := src[0]) is UOp and dtype is None and type(arg) is tuple and \
     _INT.issuperset(map(type, arg)) and min(arg, default=0) >= 0 and (n := math.prod(arg)) == math.prod(x.shape) \
     and n:                                   # (an empty shape may be too big: _infer decides)
    return x.dtype, arg
  return None


def _expand_rule(src: tuple, arg, dtype) -> tuple[DType, tuple[int, ...]] | None:
  if len(src) == 1 and type(x := src[0]) is UOp and dtype is None and type(arg) is tuple and \
     len(arg) == len(s := x.shape) and _INT.issuperset(map(type, arg)) and min(arg, default=0) >= 0:
    for a, b in zip(s, arg):
      if a != b and a != 1: return None
    if not fits(arg, x.dtype.itemsize): return None
    return x.dtype, arg
  return None


def _permute_rule(src: tuple, arg, dtype) -> tuple[DType, tuple[int, ...]] | None:
  if len(src) == 1 and type(x := src[0]) is UOp and dtype is None and type(arg) is tuple and \
     _INT.issuperset(map(type, arg)) and sorted(arg) == list(range(len(s := x.shape))):
    return x.dtype, tuple([s[i] for i in arg])
  return None


def _reduce_rule(src: tuple, arg, dtype) -> tuple[DType, tuple[int, ...]] | None:
  if len(src) == 1 and type(x := src[0]) is UOp and dtype is None and type(arg) is tuple and len(arg) == 2 and \
     arg[0] in REDUCE_OPS and type(n := arg[1]) is int and 0 <= n <= len(s := x.shape) and \
     (x.dtype is not dtypes.bool or arg[0] is Ops.MAX or arg[0] is Ops.MIN):
    return x.dtype, s[:len(s) - n]
  return None


def _cast_rule(src: tuple, arg, dtype) -> tuple[DType, tuple[int, ...]] | None:
  if len(src) == 1 and type(x := src[0]) is UOp and type(dtype) is DType and dtype is not dtypes.void:
    return dtype, x.shape
  return None


_COMMON = {Ops.RESHAPE: _reshape_rule, Ops.EXPAND: _expand_rule, Ops.PERMUTE: _permute_rule, Ops.REDUCE: _reduce_rule,
           Ops.CAST: _cast_rule}
_COMMON_NODE = frozenset((Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.REDUCE))    # (their dtype is their source's)
_INT = frozenset((int,))


def _infer_alu(op: Ops, src: tuple[UOp, ...]) -> tuple[DType, tuple[int, ...]]:
  # the hot path of graph building: a unary or binary op on operands of one dtype and shape that type-checked before
  n = len(src)
  if n == 2:
    a, b = src
    if a.dtype is b.dtype and a.shape == b.shape and (dt := _ALU_SEEN.get((op, a.dtype, 2))) is not None:
      return dt, a.shape
  elif n == 1 and (dt := _ALU_SEEN.get((op, src[0].dtype, 1))) is not None: return dt, src[0].shape
  dt, shape = _check_alu(op, src)
  if n < 3: _ALU_SEEN[(op, src[0].dtype, n)] = dt
  return dt, shape


_ALU_SEEN: dict[tuple, DType] = {}     # (op, operand dtype, arity) that passed _check_alu -> the result dtype


def _check_alu(op: Ops, src: tuple[UOp, ...]) -> tuple[DType, tuple[int, ...]]:
  # plain tests, messages made only on failure
  arity, fonly, ionly, bits, notbool, parts, cmp = _ALU_RULE[op]
  if len(src) != arity: raise UOpError(f"{op.name}: takes {arity} sources, got {len(src)}")
  shape = src[0].shape
  vals = src[1:] if arity == 3 else src
  d = vals[0].dtype
  for s in src:
    if s.shape != shape: raise UOpError(f"{op.name}: shape mismatch {shape} vs {s.shape} (broadcast with EXPAND)")
  for s in vals:
    if s.dtype is not d: raise UOpError(f"{op.name}: dtype mismatch {d.name} vs {s.dtype.name} (insert a CAST)")
  if d is dtypes.void: raise UOpError(f"{op.name}: operand has no value (void)")
  if arity == 3 and src[0].dtype is not dtypes.bool:
    raise UOpError(f"WHERE: condition must be bool, got {src[0].dtype.name}")
  if parts or d.kind == "c": return _infer_complex(op, d, shape)
  if fonly and not d.is_float: raise UOpError(f"{op.name}: needs a float operand, got {d.name}")
  if ionly and not (d.is_int or (d.is_bool and bits)):
    raise UOpError(f"{op.name}: needs an integer operand, got {d.name}")
  if notbool and d.is_bool: raise UOpError(f"{op.name}: not defined for bool")
  return (dtypes.bool if cmp else d), shape


def _infer_complex(op: Ops, d: DType, shape: tuple[int, ...]) -> tuple[DType, tuple[int, ...]]:
  if op is Ops.CMPLX:
    if d not in (dtypes.float32, dtypes.float64): raise UOpError(f"CMPLX: needs float32 or float64 parts, got {d.name}")
    return (dtypes.complex64 if d is dtypes.float32 else dtypes.complex128), shape
  if d.kind != "c" or op not in COMPLEX_OK: raise UOpError(f"{op.name}: not defined for {d.name}")
  return (d.real if op in _TO_REAL else dtypes.bool if op in COMPARE else d), shape


def _infer_effect(op: Ops, src: tuple[UOp, ...]) -> tuple[DType, tuple[int, ...]]:
  if op is Ops.SINK: return dtypes.void, ()
  if op is Ops.END:
    _check(len(src) >= 1 and all(r.op is Ops.RANGE for r in src[1:]), "END: (body, *ranges)")
    return dtypes.void, ()
  if op is Ops.AFTER:
    _check(len(src) >= 1, "AFTER: needs the value it orders")
    return src[0].dtype, src[0].shape
  _check(len(src) >= 1 and src[0].op is Ops.INDEX and src[0].shape == (),
         lambda: f"{op.name}: needs an INDEX to a scalar element")
  base = memory_of(src[0].src[0])
  _check(base.op in (Ops.BUFFER, Ops.ALLOC),
         lambda: f"{op.name}: can only address a BUFFER or ALLOC, got {base.op.name}")
  if op is Ops.LOAD:
    _check(len(src) == 1, "LOAD: takes one INDEX")
    return src[0].dtype, ()
  _check(len(src) == 2, "STORE: (INDEX, value)")
  _check(src[1].shape == () and src[1].dtype is src[0].dtype,
         lambda: f"STORE: value {src[1].dtype.name} {src[1].shape} into {src[0].dtype.name} element")
  return dtypes.void, ()


def _infer_shape(op: Ops, src: tuple[UOp, ...], arg: Any) -> tuple[DType, tuple[int, ...]]:
  n = op._name_
  if op is Ops.STACK:
    _check(len(src) >= 1, "STACK: needs at least one source")
    for s in src[1:]:
      _check(s.shape == src[0].shape and s.dtype is src[0].dtype,
             lambda: f"STACK: sources differ: {src[0].dtype.name} {src[0].shape} vs {s.dtype.name} {s.shape}")
    return _sized(op, src[0].dtype, (len(src), *src[0].shape))
  _check(len(src) == 1, lambda: f"{n}: takes one source, got {len(src)}")
  x = src[0]
  s = x.shape
  if op is Ops.STAGE: return x.dtype, s
  if op is Ops.RESHAPE:
    _check(isinstance(arg, tuple) and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in arg)
           and prod(arg) == prod(s), lambda: f"RESHAPE {s} -> {arg}")
    return _sized(op, x.dtype, arg)
  if op is Ops.EXPAND:
    _check(isinstance(arg, tuple) and len(_shape(arg)) == len(s) and all(a == b or a == 1 for a, b in zip(s, arg)),
           lambda: f"EXPAND {s} -> {arg}")
    return _sized(op, x.dtype, arg)
  if op is Ops.PERMUTE:
    _check(isinstance(arg, tuple) and _ints(arg) and sorted(arg) == list(range(len(s))),
           lambda: f"PERMUTE {arg} of {s}")
    return x.dtype, tuple(s[i] for i in arg)
  if op is Ops.SHRINK:
    _check(type(arg) is tuple and len(arg) == len(s) and _pairs(arg, s, True), lambda: f"SHRINK {arg} of {s}")
    return x.dtype, tuple([e - b for b, e in arg])
  if op is Ops.PAD:
    _check(type(arg) is tuple and len(arg) == 2 and type(arg[0]) is tuple and len(arg[0]) == len(s) and
           _pairs(arg[0], s, False), lambda: f"PAD {arg} of {s}")
    return _sized(op, x.dtype, tuple([b + m + a for (b, a), m in zip(arg[0], s)]))
  if op is Ops.FLIP:
    _check(isinstance(arg, tuple) and _ints(arg) and all(0 <= a < len(s) for a in arg) and len(set(arg)) == len(arg),
           lambda: f"FLIP {arg} of {s}")
    return x.dtype, s
  if op is Ops.REDUCE:
    _check(isinstance(arg, tuple) and len(arg) == 2 and arg[0] in REDUCE_OPS and isinstance(arg[1], int)
           and 0 <= arg[1] <= len(s), lambda: f"REDUCE {arg} of {s}")
    _check(not x.dtype.is_bool or arg[0] in (Ops.MAX, Ops.MIN), lambda: f"REDUCE {arg[0].name} of bool: cast first")
    return x.dtype, s[:len(s) - arg[1]]
  if op is Ops.SCAN:
    _check(isinstance(arg, tuple) and len(arg) == 2 and arg[0] in REDUCE_OPS and isinstance(arg[1], int)
           and 0 <= arg[1] < len(s), f"SCAN {arg} of {s}")
    _check(not x.dtype.is_bool or arg[0] in (Ops.MAX, Ops.MIN), lambda: f"SCAN {arg[0].name} of bool: cast first")
    return x.dtype, s
  raise UOpError(f"no type rule for {op}")


def _pairs(arg: tuple, shape: tuple[int, ...], window: bool) -> bool:
  """Every entry a pair of ints: a window 0 <= b <= e <= size (window), else two non-negative amounts."""
  for p, m in zip(arg, shape):
    if type(p) is not tuple or len(p) != 2: return False
    b, e = p
    if type(b) is not int or type(e) is not int or b < 0 or (e < b or e > m if window else e < 0): return False
  return True


def argkey(arg):
  """arg as structure compares it: -0.0 and 0.0 differ, a NaN equals itself (Python's == says otherwise)."""
  t = type(arg)
  if t is float: return ("f", math.copysign(1.0, arg), repr(arg))
  if t is complex: return ("c", repr(arg))        # repr tells signed zeros apart, and names NaN parts
  if t is tuple and any(type(a) is not int for a in arg): return tuple(argkey(a) for a in arg)
  return arg


FLOAT_ARG = {Ops.CONST, Ops.PAD}      # the ops whose arg may hold a float (keyed by argkey); the others hold ints


def _ints(xs) -> bool: return all(isinstance(x, int) and not isinstance(x, bool) for x in xs)


# the cons table: key -> weakref of the node; a node's death removes its entry (only while it is that dead weakref:
# the key may hold a newer node by then). A plain dict: WeakValueDictionary's methods are Python-level calls.
_CONS: dict[tuple, weakref.ref] = {}


def memory_of(x: UOp) -> UOp:
  """The BUFFER or ALLOC that x (an INDEX's first source) is, under the AFTERs that order accesses to it."""
  while x.op is Ops.AFTER: x = x.src[0]
  return x


def live_nodes() -> int:
  """The number of entries in the hash-cons table (live nodes, and dead ones not yet swept)."""
  return len(_CONS)
_GIVEN_DTYPE = {Ops.CONST, Ops.CAST, Ops.BITCAST}
_LIKE: dict[tuple, UOp] = {}      # (dtype, shape, type, argkey) -> a broadcast constant (UOp.const_like)
LIKE_SIZE = 4096
_PY_SCALAR = frozenset((bool, int, float, complex))


class UOp:
  __slots__ = ("op", "src", "arg", "dtype", "shape", "_ranges", "_bounds", "_key", "_simp", "data", "depth",
               "__weakref__")
  op: Ops
  src: tuple[UOp, ...]
  arg: Any
  dtype: DType
  shape: tuple[int, ...]
  data: Any            # a realized BUFFER's ndarray (set by the runtime; None everywhere else)
  depth: int           # the longest path to a leaf (a value held since it was built counts as the graph it was)

  def __new__(cls, op: Ops, src: tuple[UOp, ...] = (), arg: Any = None, dtype: DType | None = None):
    if dtype is None and arg is None and op in _ALU_NO_CAST:       # the hot path: an ALU node
      key = (op, src, None, None)
      if (r := _CONS.get(key)) is not None and (u := r()) is not None: return u
      if type(src) is not tuple: raise UOpError(f"{op.name}: sources must be a tuple of UOps")
      for s in src:
        if type(s) is not UOp: raise UOpError(f"{op.name}: sources must be UOps")
      dt, shape = _infer_alu(op, src)
    elif op in _COMMON_NODE and dtype is None:       # the shape world's most common nodes
      key = (op, src, arg, None)
      if (r := _CONS.get(key)) is not None and (u := r()) is not None: return u
      dt, shape = _COMMON[op](src, arg, None) or _infer(op, src, arg, None)
    elif op is Ops.CAST and dtype is not None:        # (its result is always `dtype`)
      key = (op, src, arg, dtype)
      if (r := _CONS.get(key)) is not None and (u := r()) is not None: return u
      dt, shape = _cast_rule(src, arg, dtype) or _infer(op, src, arg, dtype)
    else:
      if op is Ops.CONST and isinstance(dtype, DType): arg = dtype.python(arg)
      key = (op, src, argkey(arg) if op in FLOAT_ARG else arg, dtype if op in _GIVEN_DTYPE else None)
      if (r := _CONS.get(key)) is not None and (u := r()) is not None:
        if dtype is not None and u.dtype is not dtype:
          raise UOpError(f"{op.name}: result is {u.dtype.name}, not {dtype.name}")
        return u
      dt, shape = _infer(op, src, arg, dtype)
      if dtype is not None and dt is not dtype: raise UOpError(f"{op.name}: result is {dt.name}, not {dtype.name}")
    u = object.__new__(cls)
    u.op, u.src, u.arg, u.dtype, u.shape = op, src, arg, dt, shape
    u._ranges = u._bounds = u._key = u._simp = u.data = None
    n = len(src)
    u.depth = 0 if not n else src[0].depth + 1 if n == 1 else max(src[0].depth, src[1].depth) + 1 if n == 2 else \
      max([s.depth for s in src]) + 1
    _CONS[key] = weakref.ref(u, lambda _, k=key, d=_CONS, f=_uncons: f(d, k))
    return u

  def __reduce__(self): return (UOp, (self.op, self.src, self.arg, self.dtype if self.op in _GIVEN_DTYPE else None))
  def __repr__(self) -> str:
    if self.op is Ops.CONST: return f"UOp.const({self.arg!r}, {self.dtype!r})"
    if self.op is Ops.RANGE: return f"range_({self.arg.size}, {self.arg.idx}, {self.arg.kind})"
    return f"UOp({self.op}, <{len(self.src)} src>, {self.arg!r}) : {self.dtype.name} {self.shape}"
  def __bool__(self): raise TypeError("a UOp has no truth value; compare with `is`, or simplify() and read .arg")

  # ---- graph utilities
  def toposort(self, known=()) -> list[UOp]:
    """Every node reachable from self, each after its sources; nodes in `known` are neither listed nor entered
    (a walk that continues an earlier one). Iterative: graphs may be far deeper than Python's stack."""
    seen: dict[UOp, None] = {}
    stack: list[tuple[UOp, bool]] = [(self, False)]
    while stack:
      u, done = stack.pop()
      if u in seen: continue
      if done: seen[u] = None; continue
      if u in known: continue
      stack.append((u, True))
      stack.extend((s, False) for s in reversed(u.src) if s not in seen)
    return list(seen)

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
      import hashlib
      for u in self.toposort():
        if u._key is None:
          a = (u.arg.size, u.arg.idx, u.arg.kind.name, None if u.arg.var is None else u.arg.var.key) \
            if u.op is Ops.RANGE else (u.arg.slot, u.arg.dtype.name, u.arg.shape) \
            if u.op in (Ops.BUFFER, Ops.ALLOC) else (u.arg[0].name, u.arg[1]) if u.op in (Ops.REDUCE, Ops.SCAN) \
            else argkey(u.arg)
          h = hashlib.blake2b(repr((u.op.name, u.dtype.name, a)).encode(), digest_size=16)
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
  def cast(self, dtype: DType) -> UOp: return self if self.dtype is dtype else UOp(Ops.CAST, (self,), None, dtype)
  def bitcast(self, dtype: DType) -> UOp:
    """self's bits read as `dtype` (of the same item size)."""
    return self if self.dtype is dtype else UOp(Ops.BITCAST, (self,), None, dtype)
  def stage(self) -> UOp: return UOp(Ops.STAGE, (self,))

  # the movement builders return self when they would not move anything (reshape or expand to self's shape, the
  # identity permutation)
  def reshape(self, shape: tuple[int, ...]) -> UOp:
    if type(shape) is tuple and shape == self.shape: return self
    shape = tuple(map(int, shape))
    return self if shape == self.shape else UOp(Ops.RESHAPE, (self,), shape)
  def expand(self, shape: tuple[int, ...]) -> UOp:
    if type(shape) is tuple and shape == self.shape: return self
    shape = tuple(map(int, shape))
    return self if shape == self.shape else UOp(Ops.EXPAND, (self,), shape)
  def permute(self, p: tuple[int, ...]) -> UOp:
    p = tuple(map(int, p))
    return self if p == tuple(range(len(self.shape))) else UOp(Ops.PERMUTE, (self,), p)
  def shrink(self, arg: tuple[tuple[int, int], ...]) -> UOp:
    arg = tuple((int(b), int(e)) for b, e in arg)
    return self if arg == tuple((0, s) for s in self.shape) else UOp(Ops.SHRINK, (self,), arg)
  def reduce(self, op: Ops, n: int) -> UOp: return UOp(Ops.REDUCE, (self,), (op, n))
  def scan(self, op: Ops, axis: int) -> UOp: return UOp(Ops.SCAN, (self,), (op, axis))
  def pad(self, pads: tuple[tuple[int, int], ...], value=0) -> UOp:
    pads = tuple((int(b), int(a)) for b, a in pads)
    if len(pads) == len(self.shape) and all(p == (0, 0) for p in pads): return self
    return UOp(Ops.PAD, (self,), (pads, self.dtype.python(value)))
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
  def __add__(self, x): return self.alu(Ops.ADD, x)
  def __radd__(self, x): return self._operand(x).alu(Ops.ADD, self)
  def __mul__(self, x): return self.alu(Ops.MUL, x)
  def __rmul__(self, x): return self._operand(x).alu(Ops.MUL, self)
  def __neg__(self): return self * -1
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


def range_(size: int, idx: int, kind: AxisType = AxisType.LOOP, var: UOp | None = None) -> UOp:
  return UOp(Ops.RANGE, (), RangeArg(size, idx, kind, var))


def var(idx: int, lo: int, hi: int) -> UOp:
  """A size known only when the kernel runs (its C argument `s<idx>`), in [lo, hi]."""
  return UOp(Ops.VAR, (), VarArg(idx, lo, hi))

def sink(*srcs: UOp) -> UOp: return UOp(Ops.SINK, tuple(srcs))

def buf(slot: int, size: int, dtype: DType = dtypes.float32) -> UOp:
  """A flat BUFFER of `size` elements, bound to argument `slot` of the kernel."""
  return UOp(Ops.BUFFER, (), ParamArg(slot, dtype, (size,)))
