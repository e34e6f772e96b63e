"""fpstatus: NumPy's floating-point warnings (divide by zero, overflow, underflow, invalid) for compiled kernels.

    instrument(c, name, sink)  the C of kernel `name` collecting its floating-point status flags in a last argument
    slot()                     this thread's flags word: the kernels' last argument (an int32_t* cdata)
    confirmable(src), spurious(src)  the flags a tier-1 run must confirm at tier 0; those it drops
    ignored()                  the flags np.errstate ignores
    report(fp, src)            after a run that raised any (fp[0] != 0): the flags as NumPy reports them

A kernel clears its thread's status flags on entry and ORs them into `*mt_fp` on exit (render_c's PRELUDE has
mt_fp_clear/mt_fp_test: MXCSR on x86-64 with gcc, fenv.h elsewhere and in tcc); each OpenMP parallel region clears
its threads' flags when it starts and ORs them together (`reduction(|:mt_fe)`), so a worker's flags of an earlier
kernel never leak in. The flags are read once per kernel and region, never per element. A fused attention kernel
(attention.py) takes the argument but reports nothing: its online softmax computes -inf - -inf and compares NaN
where NumPy's composition does not. The bits are MXCSR's: INVALID 1, DIVIDE 4, OVERFLOW 8, UNDERFLOW 16 (inexact
and denormal are ignored, as NumPy ignores them).

After a realize whose kernels raised any, report() handles them in NumPy's order (divide, over, under, invalid),
each by np.geterr(): ignore; warn (a RuntimeWarning "divide by zero encountered in divide", pointing at the caller's
line outside minitensor, so `warnings` filters apply); raise (FloatingPointError); call (np.geterrcall()(words,
NumPy's status bits)), print (stderr) and log (np.geterrcall().write) as NumPy words them. The operation named is
NumPy's name of the first operation of the kernels that can raise the flag (a kernel fuses many; instrument writes
them into the C as a comment, so a plan read from disk names them too). Tier 1's vector math raises flags where
NumPy does not (glibc's vector sin and cos raise OVERFLOW on huge arguments, its exp INVALID on inf):
realize.Compiled.flags takes those (confirmable) from the plan's tier-0 code. A kernel with accumulators that
compares floats keeps gcc's vector compares, which signal INVALID on NaN (the other kernels' are quiet): that
INVALID is confirmed too where an operation could raise it, else dropped (spurious).

np.errstate applies where NumPy computes: at the call. A lazy operation built under np.errstate that ignores a flag
(scikit-learn's incremental variance divides 0 by 0 inside `np.errstate(invalid="ignore")`) but realized after it
is noted quiet for those flags (`note_quiet`, by the frontend when it builds a Tensor under a non-default
errstate). A realize that raised a flag drops it when every operation of its graph that can raise that flag was
built ignoring it (`realizing` names the graph; nothing is noted or looked at while no errstate was ever entered).
"""
from __future__ import annotations
import os
import re
import sys
import threading
import warnings
import weakref
import numpy as np
from minitensor.backend.dtype import dtypes
from minitensor.backend.ops import ALU_OPS
from minitensor.backend.uop import Ops, UOp, accumulates

INVALID, DIVIDE, OVERFLOW, UNDERFLOW = 1, 4, 8, 16
# (flag bit, np.geterr key, NumPy's words, NumPy's own bit for np.seterrcall) in the order NumPy handles them
_KINDS = ((DIVIDE, "divide", "divide by zero", 1), (OVERFLOW, "over", "overflow", 2),
          (UNDERFLOW, "under", "underflow", 4), (INVALID, "invalid", "invalid value", 8))
_NAMES = {Ops.FDIV: "divide", Ops.FLOORDIV: "floor_divide", Ops.FLOORMOD: "remainder", Ops.MUL: "multiply",
          Ops.ADD: "add", Ops.POW: "power", Ops.CAST: "cast", Ops.EXP: "exp", Ops.EXP2: "exp2", Ops.EXPM1: "expm1",
          Ops.LOG: "log", Ops.LOG2: "log2", Ops.LOG10: "log10", Ops.LOG1P: "log1p", Ops.SQRT: "sqrt",
          Ops.SIN: "sin", Ops.COS: "cos", Ops.TAN: "tan", Ops.ASIN: "arcsin", Ops.ACOS: "arccos",
          Ops.SINH: "sinh", Ops.COSH: "cosh", Ops.ACOSH: "arccosh", Ops.ATANH: "arctanh"}
# the operations that can raise each flag, by their NumPy names (a kernel's first such operation names the warning)
_CAN = {DIVIDE: {"divide", "floor_divide", "remainder", "log", "log2", "log10", "log1p", "power", "arctanh"},
        OVERFLOW: {"exp", "exp2", "expm1", "power", "sinh", "cosh", "multiply", "divide", "add", "subtract", "cast",
                   "floor_divide"},
        UNDERFLOW: {"multiply", "divide", "exp", "exp2", "power", "cast"},
        INVALID: {"cast", "sqrt", "log", "log2", "log10", "log1p", "arcsin", "arccos", "arccosh", "arctanh", "sin",
                  "cos", "tan", "remainder", "floor_divide", "power", "divide", "multiply", "add", "subtract"}}
_DEFAULT = {DIVIDE: "divide", OVERFLOW: "multiply", UNDERFLOW: "multiply", INVALID: "add"}
# tier 1 calls these from glibc's vector math library (libmvec), which raises flags its scalar functions do not
_VECTOR = {_NAMES.get(op, d.ufunc or op.name.lower()) for op, d in ALU_OPS.items() if d.simd}
_OPS_LINE = re.compile(r"/\* mt_fp_ops: ([a-z0-9_ ]*) \*/")
# (_ops' marks: a kernel with accumulators compares floats, PRELUDE's rmax_; a kernel computes complex values)
_SIGNALING, _COMPLEX = "signaling_compare", "complex"
_ORDERED = (Ops.CMPLT, Ops.CMPLE, Ops.MAX, Ops.MIN)


def _ops(sink: UOp) -> list[str]:
  """NumPy's names of the operations of a kernel that can raise a flag and of its vector math functions, in the
  order the kernel computes them, and marks: whether it compares floats signaling INVALID, and whether it computes
  complex values (whose operations can raise INVALID too: confirmable)."""
  out: list[str] = []
  neg = lambda v: v.op is Ops.MUL and any(s.op is Ops.CONST and s.arg == -1 for s in v.src)     # x * -1: -x
  signaling = accumulates(sink)
  for u in sink.toposort():
    if (d := ALU_OPS.get(u.op)) is not None and d.simd and u.dtype.is_float:
      if (n := _NAMES.get(u.op, d.ufunc or u.op.name.lower())) not in out: out.append(n)
    if signaling and u.op in _ORDERED and u.src[0].dtype.is_float and _SIGNALING not in out: out.append(_SIGNALING)
    if u.dtype.is_complex and _COMPLEX not in out: out.append(_COMPLEX)
    if (n := _NAMES.get(u.op)) is None or u.dtype is dtypes.index or neg(u): continue
    if u.op is Ops.ADD and any(neg(s) for s in u.src): n = "subtract"
    if n not in out and (u.src[0].dtype.is_float or u.op in (Ops.FLOORDIV, Ops.FLOORMOD)): out.append(n)
  return out


_PARALLEL_FOR = re.compile(r"^(\s*)#pragma omp parallel for (.*?)\s*(if\(.*\))?$")
_PARALLEL = re.compile(r"^(\s*)#pragma omp parallel (if\(.*\))$")


def _end(lines: list[str], k: int) -> int:
  """The index of the last line of the C statement that starts at lines[k] (a loop with or without braces, a block)."""
  depth = 0
  for j in range(k, len(lines)):
    depth += lines[j].count("{") - lines[j].count("}")
    if depth == 0 and (lines[j].rstrip().endswith(";") or "{" in lines[k]): return j
  raise ValueError("fpstatus.instrument: a parallel region without its end")


def instrument(c: str, name: str, sink: UOp, reports: bool = True) -> str:
  """The C text c, whose last function is the kernel `name` computing sink, with a last parameter
  `int32_t* restrict mt_fp` receiving the OR of the status flags its code raised, in every thread, and a comment
  naming the operations that can raise them (for report's messages: a plan on disk keeps only the C). reports
  False (a fused attention kernel, whose flags are not NumPy's): the parameter is taken and nothing is written."""
  head, sep, rest = c.rpartition(f"void {name}(")
  params, sep2, body = rest.partition(") {\n")
  lines = body.rstrip().split("\n")
  if not sep or not sep2 or lines[-1] != "}":
    raise ValueError(f"fpstatus.instrument: the C does not end with the function {name}")
  lines = lines[:-1]
  if not reports:
    return head + f"void {name}({params}, int32_t* restrict mt_fp) {{\n" + "\n".join(lines) + "\n}\n"
  before: dict[int, list[str]] = {}
  after: dict[int, list[str]] = {}
  for k, line in enumerate(lines):
    if (m := _PARALLEL_FOR.match(line)) is not None:            # a parallel loop: a region around it
      ind, j = m[1], _end(lines, k + 1)
      lines[k] = "\n".join([f"{ind}mt_fe |= mt_fp_test();", f"{ind}#pragma omp parallel {m[3] or ''} "
                            "reduction(|:mt_fe)", f"{ind}{{", f"{ind}mt_fp_clear();", f"{ind}#pragma omp for {m[2]}"])
      after[j] = [f"{ind}mt_fe |= mt_fp_test();", f"{ind}}}"] + after.get(j, [])     # (an inner region first)
    elif (m := _PARALLEL.match(line)) is not None:              # a region (its block follows)
      ind, j = m[1], _end(lines, k + 1)
      lines[k] = f"{ind}mt_fe |= mt_fp_test();\n{ind}#pragma omp parallel {m[2]} reduction(|:mt_fe)"
      after.setdefault(k + 1, []).append(f"{ind}  mt_fp_clear();")
      before.setdefault(j, []).append(f"{ind}  mt_fe |= mt_fp_test();")
    elif line.strip() == "return;": lines[k] = line.replace("return;", "{ *mt_fp |= mt_fe | mt_fp_test(); return; }")
  out = [f"  /* mt_fp_ops: {' '.join(_ops(sink))} */", "  int mt_fe = 0;", "  mt_fp_clear();"]
  for k, line in enumerate(lines): out += before.get(k, []) + [line] + after.get(k, [])
  out.append("  *mt_fp |= mt_fe | mt_fp_test();")
  return head + f"void {name}({params}, int32_t* restrict mt_fp) {{\n" + "\n".join(out) + "\n}\n"


class _Flags(threading.local):
  """Each thread's flags word (`word`), made when the thread first reads it."""
  def __init__(self):
    import _cffi_backend as backend
    self.word = backend.newp(backend.new_pointer_type(backend.new_primitive_type("int32_t")), 0)


FLAGS = _Flags()         # FLAGS.word: slot() without the call (replay's hot path reads it)


def slot():
  """This thread's flags word, an int32_t* cdata passed as the kernels' last argument: they OR their flags in, and
  report() resets it to 0."""
  return FLAGS.word


_names: dict[tuple[int, int], str] = {}
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # the minitensor package


def _op(bit: int, src: str) -> str:
  """NumPy's name of the first operation in the kernels of src that can raise `bit`."""
  key = (bit, hash(src))
  if (name := _names.get(key)) is None:
    ops = [n for line in _OPS_LINE.findall(src) for n in line.split()]
    name = _names[key] = next((n for n in ops if n in _CAN[bit]), _DEFAULT[bit])
  return name


def confirmable(src: str) -> int:
  """The flags a tier-1 run of the kernels of src may raise where NumPy does not, to be confirmed by their tier-0
  code: every flag when they call vector math (libmvec's sin and cos raise overflow and invalid, its exp invalid,
  for arguments where NumPy's raise nothing); INVALID when a kernel with accumulators compares floats (gcc's
  vector compares signal it on NaN: typerules.accumulates) and some kernel has an operation that can raise it
  too; else none. (The other kernels' compares are quiet, PRELUDE's lt_/le_; and gcc if-converts no operation
  that can raise a flag, so a branch not taken computes nothing: what else they raise, the tier-0 code raises.)"""
  return _kinds(src)[0]


def spurious(src: str) -> int:
  """The flags a tier-1 run of the kernels of src raises only where NumPy does not: INVALID when kernels with
  accumulators compare floats and no operation of any kernel can raise it (a count of x > 0, a max, an argmax on
  data with NaN): dropped without a tier-0 run."""
  return _kinds(src)[1]


def _kinds(src: str) -> tuple[int, int]:
  if (c := _confirm.get(src)) is None:
    ops = {n for line in _OPS_LINE.findall(src) for n in line.split()}
    if ops & _VECTOR: c = (INVALID | DIVIDE | OVERFLOW | UNDERFLOW, 0)
    elif _SIGNALING not in ops: c = (0, 0)
    else: c = (INVALID, 0) if ops & _CAN[INVALID] or _COMPLEX in ops else (0, INVALID)
    _confirm[src] = c
  return c


def ignored() -> int:
  """The flags np.errstate ignores now."""
  modes = np.geterr()
  return sum(bit for bit, key, _, _ in _KINDS if modes[key] == "ignore")


_confirm: dict[str, tuple[int, int]] = {}     # src -> (confirmable, spurious)


def _caller_level() -> int:
  """warnings.warn's stacklevel, called from report, of the first frame outside minitensor."""
  f, level = sys._getframe(2), 2
  while f is not None and f.f_code.co_filename.startswith(_HERE):
    f, level = f.f_back, level + 1
  return level


QUIET: dict[int, tuple] = {}        # id(node) -> (weakref of it, the flags np.errstate ignored when it was built)
_realizing = threading.local()


def note_quiet(u: UOp, bits: int) -> None:
  """u, the root of an operation just built under an np.errstate that ignores the flags `bits`, and the casts and
  movements directly below it (one NumPy call's own nodes), are quiet for them."""
  for _ in range(4):
    if u.data is None and (u.op in ALU_OPS or u.op in (Ops.CAST, Ops.REDUCE)):
      QUIET[id(u)] = (weakref.ref(u, lambda _, k=id(u), held=QUIET: held.pop(k, None)), bits)
    if not u.src or u.op not in (Ops.CAST, Ops.RESHAPE, Ops.EXPAND): break
    u = u.src[0]


def realizing(outputs) -> None:
  """The graph whose kernels run next in this thread (None after): report asks it which flags are quiet."""
  _realizing.outputs = outputs


def _quiet(flags: int) -> int:
  """The flags among `flags` that every operation able to raise them in the graph being realized was built
  ignoring (note_quiet)."""
  outs = getattr(_realizing, "outputs", None)
  if not outs: return 0
  quiet = flags
  for u in UOp(Ops.SINK, tuple(outs)).toposort():
    if u.data is not None and u.op is not Ops.SINK: continue
    name = _NAMES.get(u.arg[0] if u.op is Ops.REDUCE else u.op)
    if name is None: continue
    can = sum(bit for bit in (DIVIDE, OVERFLOW, UNDERFLOW, INVALID) if name in _CAN[bit]) & quiet
    if can and (r := QUIET.get(id(u))) is not None and r[0]() is u: can &= ~r[1]
    quiet &= ~can
    if not quiet: break
  return quiet


def report(fp, src: str) -> None:
  """The flags in this thread's word fp (slot()), raised by the kernels of C source src, reported as NumPy reports
  them under np.errstate (module docstring); the word is reset first."""
  flags, fp[0] = fp[0], 0
  if QUIET: flags &= ~_quiet(flags)
  modes = np.geterr()
  status = sum(b for bit, _, _, b in _KINDS if flags & bit)
  for bit, key, words, _ in _KINDS:
    if not flags & bit or (mode := modes[key]) == "ignore": continue
    msg = f"{words} encountered in {_op(bit, src)}"
    if mode == "warn": warnings.warn(msg, RuntimeWarning, stacklevel=_caller_level())
    elif mode == "raise": raise FloatingPointError(msg)
    elif mode == "print": print(f"Warning: {msg}", file=sys.stderr)
    elif mode == "call": np.geterrcall()(words, status)
    elif mode == "log": np.geterrcall().write(f"Warning: {msg}\n")
