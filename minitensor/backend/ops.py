"""Ops and the op table: one entry per elementwise (ALU) op, read by every stage.

An entry says everything a stage needs to know of an op, so adding an elementwise primitive is a new member of Ops,
its line in ALU_OPS and its case in symbolic.exec_alu (the Python interpreter of the ops, for constant folding):

    stage                  reads
    uop.py (type check)    arity, operands (the dtype rule), result, cplx (defined for complex operands)
    symbolic.py            cost (transcendental float functions are not folded), ufunc (exec_alu on floats)
    render_c.py            c / ci / cplx (the C spelling), simd (the libmvec declarations of the PRELUDE)
    kernelize.py           cost (a transcendental value is not recomputed more than HEAVY_LIMIT times)
    ufuncs.py              ufunc (np.<ufunc> -> the op, where minitensor mirrors NumPy's ufunc with the op itself)
    uir.py                 arity (via UNARY / BINARY)

C spellings, on operands of the entry's kind: `name` a <math.h> function (`namef` for float32; `cname` of
<complex.h> likewise), `name_` a PRELUDE helper suffixed with the operand type (`floordiv_i32`, `cmul_c64`), anything
else an infix operator. render_c keeps three forms of its own: CAST, WHERE's `?:` and CMPLX's MT_CMPLX macro, and
the wrapping integer ABS, + and * of data integers.
"""
from __future__ import annotations
from enum import Enum, auto
from typing import Callable, NamedTuple


class Ops(Enum):
  # loop world
  CONST = auto(); BUFFER = auto(); ALLOC = auto(); RANGE = auto(); INDEX = auto(); LOAD = auto()
  STORE = auto(); AFTER = auto(); END = auto(); SINK = auto(); CAST = auto(); VAR = auto()
  # unary ALU
  EXP = auto(); EXP2 = auto(); EXPM1 = auto(); LOG = auto(); LOG2 = auto(); LOG10 = auto(); LOG1P = auto()
  SQRT = auto(); SIN = auto(); COS = auto(); TAN = auto(); ASIN = auto(); ACOS = auto(); ATAN = auto()
  SINH = auto(); COSH = auto(); TANH = auto(); ERF = auto(); FLOOR = auto(); CEIL = auto(); TRUNC = auto()
  RINT = auto(); ABS = auto(); ASINH = auto(); ACOSH = auto(); ATANH = auto(); REAL = auto(); IMAG = auto()
  # binary ALU
  ADD = auto(); MUL = auto(); FDIV = auto(); FLOORDIV = auto(); FLOORMOD = auto(); MAX = auto(); MIN = auto()
  POW = auto(); ATAN2 = auto(); AND = auto(); OR = auto(); XOR = auto(); SHL = auto(); SHR = auto()
  CMPLT = auto(); CMPLE = auto(); CMPEQ = auto(); CMPNE = auto(); CMPLX = auto()
  # ternary
  WHERE = auto()
  # shape world
  RESHAPE = auto(); EXPAND = auto(); PERMUTE = auto(); SHRINK = auto(); REDUCE = auto(); STACK = auto()
  STAGE = auto(); PAD = auto(); FLIP = auto(); SCAN = auto()
  # unary ALU added later (appended, so the values of the members above stay what they were)
  SIGNBIT = auto()
  # a value's bits read as another dtype of the same item size (a dtype view), beside CAST
  BITCAST = auto()

  def __repr__(self) -> str: return f"Ops.{self.name}"
  __hash__ = object.__hash__       # members are singletons; Enum's own hash is a Python-level call


class OpDef(NamedTuple):
  """One ALU op. operands (the dtype rule of the operands, all of one dtype): "float" floats only, "int" integers
  only, "bits" integers and bool, "num" anything but bool, "any" every real dtype, "complex" complex only, "parts"
  float32 or float64 (the parts of a complex); complex operands are taken wherever cplx is given. result: "same" the
  operands' dtype, "bool", "real" (of a complex operand: its part's dtype), "complex" (built from two parts)."""
  arity: int
  operands: str
  result: str
  cost: str                   # "cheap", or "transcendental": a libm call, worth not computing twice
  c: str | None               # the C spelling on float operands (and on the others, unless ci says otherwise)
  ci: str | None = None       # the C spelling on integer and bool operands, where it differs from c
  cplx: str | None = None     # the C spelling on complex operands; None: not defined for complex
  ufunc: str | None = None    # NumPy's ufunc that this op is, where minitensor builds it with the op alone
  simd: bool = False          # glibc's libmvec has a vector version (declared for gcc in render_c's PRELUDE)
  grad: Callable | None = None  # reserved for the gradient rule (gradrules.py keeps its own tables for now)


T, C = "transcendental", "cheap"
_UF = dict(operands="float", result="same")        # a unary float function
ALU_OPS: dict[Ops, OpDef] = {
  Ops.EXP:      OpDef(1, **_UF, cost=T, c="exp", cplx="cexp", ufunc="exp", simd=True),
  Ops.EXP2:     OpDef(1, **_UF, cost=T, c="exp2", cplx="cexp2_", ufunc="exp2", simd=True),
  Ops.EXPM1:    OpDef(1, **_UF, cost=T, c="expm1", cplx="cexpm1_", ufunc="expm1", simd=True),
  Ops.LOG:      OpDef(1, **_UF, cost=T, c="log", cplx="clog", ufunc="log", simd=True),
  Ops.LOG2:     OpDef(1, **_UF, cost=T, c="log2", cplx="clog2_", ufunc="log2", simd=True),
  Ops.LOG10:    OpDef(1, **_UF, cost=T, c="log10", cplx="clog10_", ufunc="log10", simd=True),
  Ops.LOG1P:    OpDef(1, **_UF, cost=T, c="log1p", cplx="clog1p_", ufunc="log1p", simd=True),
  Ops.SQRT:     OpDef(1, **_UF, cost=C, c="sqrt", cplx="csqrt", ufunc="sqrt"),
  Ops.SIN:      OpDef(1, **_UF, cost=T, c="sin", cplx="csin", ufunc="sin", simd=True),
  Ops.COS:      OpDef(1, **_UF, cost=T, c="cos", cplx="ccos", ufunc="cos", simd=True),
  Ops.TAN:      OpDef(1, **_UF, cost=T, c="tan", cplx="ctan", ufunc="tan", simd=True),
  Ops.ASIN:     OpDef(1, **_UF, cost=T, c="asin", cplx="casin", ufunc="arcsin", simd=True),
  Ops.ACOS:     OpDef(1, **_UF, cost=T, c="acos", cplx="cacos", ufunc="arccos", simd=True),
  Ops.ATAN:     OpDef(1, **_UF, cost=T, c="atan", cplx="catan", ufunc="arctan", simd=True),
  Ops.SINH:     OpDef(1, **_UF, cost=T, c="sinh", cplx="csinh", ufunc="sinh", simd=True),
  Ops.COSH:     OpDef(1, **_UF, cost=T, c="cosh", cplx="ccosh", ufunc="cosh", simd=True),
  Ops.TANH:     OpDef(1, **_UF, cost=T, c="tanh", cplx="ctanh", ufunc="tanh", simd=True),
  Ops.ERF:      OpDef(1, **_UF, cost=T, c="erf", simd=True),
  Ops.FLOOR:    OpDef(1, **_UF, cost=C, c="floor", ufunc="floor"),
  Ops.CEIL:     OpDef(1, **_UF, cost=C, c="ceil", ufunc="ceil"),
  Ops.TRUNC:    OpDef(1, **_UF, cost=C, c="trunc", ufunc="trunc"),
  Ops.RINT:     OpDef(1, **_UF, cost=C, c="rint", ufunc="rint"),
  # mt.arcsinh/arccosh/arctanh of real operands are elementwise.py's formulas; only complex ones use these ops
  Ops.ASINH:    OpDef(1, **_UF, cost=T, c="asinh", cplx="casinh"),
  Ops.ACOSH:    OpDef(1, **_UF, cost=T, c="acosh", cplx="cacosh"),
  Ops.ATANH:    OpDef(1, **_UF, cost=T, c="atanh", cplx="catanh"),
  Ops.ABS:      OpDef(1, "num", "real", C, c="fabs", cplx="cabs_", ufunc="absolute"),  # integers: render_c
  Ops.SIGNBIT:  OpDef(1, "float", "bool", C, c="signbit_", ufunc="signbit"),   # the sign bit (also of -0.0, -NaN)
  Ops.REAL:     OpDef(1, "complex", "real", C, c=None, cplx="creal"),
  Ops.IMAG:     OpDef(1, "complex", "real", C, c=None, cplx="cimag"),
  Ops.ADD:      OpDef(2, "num", "same", C, c="+", cplx="+", ufunc="add"),
  Ops.MUL:      OpDef(2, "num", "same", C, c="*", cplx="cmul_", ufunc="multiply"),
  Ops.FDIV:     OpDef(2, "float", "same", C, c="/", cplx="cdiv_", ufunc="true_divide"),
  Ops.FLOORDIV: OpDef(2, "num", "same", C, c="floordiv_", ufunc="floor_divide"),
  Ops.FLOORMOD: OpDef(2, "num", "same", C, c="floormod_", ufunc="remainder"),
  Ops.MAX:      OpDef(2, "any", "same", C, c="max_", cplx="max_", ufunc="maximum"),
  Ops.MIN:      OpDef(2, "any", "same", C, c="min_", cplx="min_", ufunc="minimum"),
  Ops.POW:      OpDef(2, "num", "same", T, c="pow", ci="ipow_", cplx="cpow_", ufunc="power", simd=True),
  Ops.ATAN2:    OpDef(2, "float", "same", T, c="atan2", ufunc="arctan2", simd=True),
  Ops.AND:      OpDef(2, "bits", "same", C, c="&", ufunc="bitwise_and"),
  Ops.OR:       OpDef(2, "bits", "same", C, c="|", ufunc="bitwise_or"),
  Ops.XOR:      OpDef(2, "bits", "same", C, c="^", ufunc="bitwise_xor"),
  Ops.SHL:      OpDef(2, "int", "same", C, c="shl_", ufunc="left_shift"),
  Ops.SHR:      OpDef(2, "int", "same", C, c="shr_", ufunc="right_shift"),
  Ops.CMPLT:    OpDef(2, "any", "bool", C, c="<", ufunc="less"),
  Ops.CMPLE:    OpDef(2, "any", "bool", C, c="<=", ufunc="less_equal"),
  Ops.CMPEQ:    OpDef(2, "any", "bool", C, c="==", cplx="==", ufunc="equal"),
  Ops.CMPNE:    OpDef(2, "any", "bool", C, c="!=", cplx="!=", ufunc="not_equal"),
  Ops.CMPLX:    OpDef(2, "parts", "complex", C, c=None),                      # render_c: MT_CMPLX(re, im)
  Ops.WHERE:    OpDef(3, "any", "same", C, c="?:", cplx="?:"),               # operands: the two values
}

# views of the table, as sets (the type checker's hot path tests membership)
UNARY = frozenset(o for o, d in ALU_OPS.items() if d.arity == 1)
BINARY = frozenset(o for o, d in ALU_OPS.items() if d.arity == 2)
COMPARE = frozenset(o for o, d in ALU_OPS.items() if d.result == "bool")
COMPLEX_OK = frozenset(o for o, d in ALU_OPS.items() if d.cplx is not None)
TRANSCENDENTAL = frozenset(o for o, d in ALU_OPS.items() if d.cost == T)
ALU = frozenset(ALU_OPS) | {Ops.CAST, Ops.BITCAST}
MOVEMENT = frozenset({Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.SHRINK, Ops.PAD, Ops.FLIP})
REDUCE_OPS = (Ops.ADD, Ops.MUL, Ops.MAX, Ops.MIN)
