"""typerules: the type rule of every op (uop.py's table of ops, their sources, args, shapes and dtypes): the dtype and
shape a node gets, or UOpError at construction naming the op and the offending shapes or dtypes. The ALU ops' rules
read the op table (ops.py); the args of the loop world's nodes are defined here (ParamArg, RangeArg, VarArg)."""
from __future__ import annotations
import math
import sys
from enum import Enum, auto
from typing import Any, NamedTuple
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.ops import ALU_OPS, COMPARE, COMPLEX_OK, REDUCE_OPS, Ops

# the node class, bound by uop.py once it is defined (the rules check that their sources are nodes)
UOp: type = type(None)


def bind(node_class: type) -> None:
  """Bind the node class the rules check sources against (uop.UOp)."""
  global UOp
  UOp = node_class


def memory_of(x: UOp) -> UOp:
  """The BUFFER or ALLOC that x (an INDEX's first source) is, under the AFTERs that order accesses to it."""
  while x.op is Ops.AFTER: x = x.src[0]
  return x


def accumulates(sink: UOp) -> bool:
  """Whether a kernel has an ALLOC: a reduction's accumulator (or a value it stages). Its float compares stay the C
  compiler's own (PRELUDE's rmax_: vectorized, they signal INVALID on NaN), the others' are quiet (max_, lt_)."""
  return any(u.op is Ops.ALLOC for u in sink.toposort())


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
ALU_NO_CAST = frozenset(ALU_OPS)
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


def infer(op: Ops, src: tuple[UOp, ...], arg: Any, dtype: DType | None) -> tuple[DType, tuple[int, ...]]:
  """The type rule of every op: (dtype, shape) of a well-formed node, else UOpError."""
  if type(op) is not Ops: raise UOpError(f"not an op: {op!r}")
  if type(src) is not tuple: raise UOpError(f"{op.name}: sources must be a tuple of UOps")
  for s in src:
    if type(s) is not UOp: raise UOpError(f"{op.name}: sources must be UOps")
  if op in ALU_NO_CAST: return infer_alu(op, src)
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
                   f"{src[0].dtype.name if src and hasattr(src[0], 'dtype') else src} -> {dtype}")
    return dtype, src[0].shape
  return _infer_shape(op, src, arg)


# The common well-formed case of the shape world's most frequent nodes (graph building makes many): its (dtype, shape)
# by the rule of infer, or None, and infer decides (with its messages). Sources must be one UOp; shapes are tuples of
# non-negative ints; permutations and reductions take ints.
def _reshape_rule(src: tuple, arg, dtype) -> tuple[DType, tuple[int, ...]] | None:
  if len(src) == 1 and type(x := src[0]) is UOp and dtype is None and type(arg) is tuple and \
     _INT.issuperset(map(type, arg)) and min(arg, default=0) >= 0 and (n := math.prod(arg)) == math.prod(x.shape) \
     and n:                                   # (an empty shape may be too big: infer decides)
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


def _shrink_rule(src: tuple, arg, dtype) -> tuple[DType, tuple[int, ...]] | None:
  if len(src) == 1 and type(x := src[0]) is UOp and dtype is None and type(arg) is tuple and \
     len(arg) == len(s := x.shape) and _pairs(arg, s, True):
    return x.dtype, tuple([e - b for b, e in arg])
  return None


def pad_rule(src: tuple, arg, dtype) -> tuple[DType, tuple[int, ...]] | None:
  if len(src) == 1 and type(x := src[0]) is UOp and dtype is None and type(arg) is tuple and len(arg) == 2 and \
     type(pads := arg[0]) is tuple and len(pads) == len(s := x.shape) and _pairs(pads, s, False) and \
     fits(shape := tuple([b + m + a for (b, a), m in zip(pads, s)]), x.dtype.itemsize):
    return x.dtype, shape
  return None


def cast_rule(src: tuple, arg, dtype) -> tuple[DType, tuple[int, ...]] | None:
  if len(src) == 1 and type(x := src[0]) is UOp and type(dtype) is DType and dtype is not dtypes.void:
    return dtype, x.shape
  return None


COMMON_RULES = {Ops.RESHAPE: _reshape_rule, Ops.EXPAND: _expand_rule, Ops.PERMUTE: _permute_rule,
                Ops.REDUCE: _reduce_rule, Ops.SHRINK: _shrink_rule, Ops.CAST: cast_rule}
COMMON_NODE = frozenset((Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.REDUCE, Ops.SHRINK))  # (their dtype is the source's)
_INT = frozenset((int,))


def infer_alu(op: Ops, src: tuple[UOp, ...]) -> tuple[DType, tuple[int, ...]]:
  # the hot path of graph building: a unary or binary op on operands of one dtype and shape that type-checked before
  n = len(src)
  if n == 2:
    a, b = src
    if a.dtype is b.dtype and a.shape == b.shape and (dt := _ALU_SEEN.get((op, a.dtype, 2))) is not None:
      return dt, a.shape
  elif n == 1 and (dt := _ALU_SEEN.get((op, src[0].dtype, 1))) is not None: return dt, src[0].shape
  elif n == 3:            # (a WHERE: its condition's dtype and the values' one)
    a, b, c = src
    if b.dtype is c.dtype and a.shape == b.shape == c.shape and \
        (dt := _ALU_SEEN.get((op, a.dtype, b.dtype))) is not None: return dt, a.shape
  dt, shape = _check_alu(op, src)
  _ALU_SEEN[(op, src[0].dtype, n) if n < 3 else (op, src[0].dtype, src[1].dtype)] = dt
  return dt, shape


# (op, operand dtype, arity) that passed _check_alu -> the result dtype; a ternary op: (op, condition, values' dtype)
_ALU_SEEN: dict[tuple, DType] = {}


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
  if t is float:     # (hex tells signed zeros apart and is exact; a NaN's sign by copysign: hex says "nan")
    return ("f", arg.hex()) if arg == arg else ("f", math.copysign(1.0, arg), "nan")
  if t is complex: return ("c", repr(arg))        # repr tells signed zeros apart, and names NaN parts
  if t is tuple and any(type(a) is not int for a in arg): return tuple(argkey(a) for a in arg)
  return arg


FLOAT_ARG = {Ops.CONST, Ops.PAD}      # the ops whose arg may hold a float (keyed by argkey); the others hold ints


def _ints(xs) -> bool: return all(isinstance(x, int) and not isinstance(x, bool) for x in xs)
