"""The .uir text format: one statement per node. parse() reads it, print_uir() writes it.

    program    := { statement | comment | blank line }        the root is the last statement
    statement  := "%" name "=" op [operand {"," operand}] [":" key "=" value {key "=" value}]
    operand    := "%" name | literal | tuple                 tuple: a movement arg, (2, 3) or ((0, 5),)
    literal    := (int | float | "true" | "false") [":" dtype]    4  -1.5  1e-05  inf  -nan  2.5:f64
    comment    := "#" to the end of the line

    op                      operands          attributes
    buffer alloc            size              dtype slot
    range                   size              idx kind (loop reduce thread global local)
    const                   literal           [dtype]
    reshape expand permute  x, shape / perm
    shrink                  x, ((b, e), ...)
    pad                     x, ((b, a), ...)  value (a literal, of x's dtype)
    flip                    x, axes
    reduce                  x                 op (add mul max min) pop
    cast                    x                 dtype
    index after end sink stack load store stage, and every ALU op in lowercase (add cmplt where exp ...)

Literal typing. A typed literal (`3:i64`) has its dtype. An untyped one is "weak", like a Python scalar in
NumPy: it takes its dtype from its context (literal_dtype), which is, in a binary ALU op or as a value of
WHERE, the dtype of a non-literal operand; as a STORE value, the stored element's; as an INDEX operand,
`index`; elsewhere `index` for an int, `f32` for a float, `bool` for true/false.

Broadcasting is sugar: operands of a binary ALU op or WHERE whose shapes differ are aligned on the right,
RESHAPEd to prepend 1s and EXPANDed, as NumPy broadcasts. print_uir writes every node explicitly (CONST
sources inline as literals), so parse(print_uir(g)) is g for every graph g.
"""
from __future__ import annotations
import ast
import math
import re
from minitensor.backend.dtype import DType, dtypes, from_short
from minitensor.backend.uop import BINARY, MOVEMENT, REDUCE_OPS, UNARY, AxisType, Ops, ParamArg, UOp, buf, range_


class UirParseError(ValueError):
  """Malformed .uir text. The message starts with `line N:` and ends with the offending line."""


class _Lit:
  """A literal operand (not a tuple: _build tells tuple operands from literals by isinstance)."""
  __slots__ = ("value", "dtype")

  def __init__(self, value: bool | int | float, dtype: DType | None):
    self.value = value
    self.dtype = dtype          # None: untyped, the context decides


_AXES = {k.name.lower(): k for k in AxisType}
_ROPS = {o.name.lower(): o for o in REDUCE_OPS}
_ARITY: dict[Ops, tuple[int, int | None]] = {
  **{o: (1, 1) for o in (*UNARY, Ops.CONST, Ops.BUFFER, Ops.ALLOC, Ops.RANGE, Ops.CAST, Ops.BITCAST, Ops.LOAD,
                         Ops.STAGE, Ops.REDUCE, Ops.SCAN)},
  **{o: (2, 2) for o in (*BINARY, *MOVEMENT, Ops.STORE)}, Ops.WHERE: (3, 3),
  Ops.INDEX: (2, None), Ops.AFTER: (1, None), Ops.END: (1, None), Ops.STACK: (1, None), Ops.SINK: (0, None)}
_OPS = {o.name.lower(): o for o in _ARITY}
_ATTRS = {Ops.BUFFER: ("dtype", "slot"), Ops.ALLOC: ("dtype", "slot"), Ops.RANGE: ("idx", "kind"),
          Ops.REDUCE: ("op", "pop"), Ops.SCAN: ("op", "axis"), Ops.CAST: ("dtype",), Ops.BITCAST: ("dtype",),
          Ops.CONST: ("dtype",),
          Ops.PAD: ("value",)}
_STMT = re.compile(r"%(\w+)\s*=\s*(\w+)(.*)")
_ATTR_TAIL = re.compile(r"\s*:\s*((?:\w+=\S+\s*)+)$")
_INT = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(?:(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|inf|nan)")


def literal_dtype(v: bool | int | float, op: Ops, k: int, dts: list[DType | None]) -> DType:
  """The dtype of the untyped literal v as operand k of op; dts[j] is operand j's dtype, None for a literal.
  The parser types literals with it and the printer omits a literal's dtype exactly when it agrees."""
  if op is Ops.INDEX and k > 0: return dtypes.index
  if op is Ops.STORE and k == 1 and dts[0] is not None: return dts[0]
  if op in BINARY or (op is Ops.WHERE and k > 0):
    for j, d in enumerate(dts):
      if j != k and d is not None and not (op is Ops.WHERE and j == 0): return d
  return dtypes.bool if isinstance(v, bool) else dtypes.index if isinstance(v, int) else dtypes.float32


# ---------------------------------------------------------------- parsing
def _int(s: str) -> int:
  if not _INT.fullmatch(s): raise UirParseError(f"expected an integer, got {s!r}")
  return int(s)

def _dtype(s: str) -> DType:
  try: d = from_short(s)
  except KeyError: d = dtypes.void
  if d is dtypes.void: raise UirParseError(f"unknown dtype {s!r}")
  return d

def _literal(tok: str) -> _Lit:
  v, colon, d = tok.partition(":")
  if v in ("true", "false"): val: bool | int | float = v == "true"
  elif _INT.fullmatch(v): val = int(v)
  elif _FLOAT.fullmatch(v): val = float(v)
  else: raise UirParseError(f"bad literal {tok!r}")
  return _Lit(val, _dtype(d) if colon else None)

_ATTR_VALUE = {"dtype": _dtype, "slot": _int, "idx": _int, "pop": _int, "axis": _int, "kind": _AXES.__getitem__,
               "op": _ROPS.__getitem__, "value": _literal}


def _attrs(op: Ops, text: str) -> dict:
  allowed, out = _ATTRS.get(op, ()), {}
  for kv in text.split():
    k, _, v = kv.partition("=")
    if k not in allowed:
      raise UirParseError(f"unknown attribute {k!r} for {op.name.lower()} (takes: {' '.join(allowed) or 'none'})")
    if k in out: raise UirParseError(f"attribute {k!r} given twice")
    try: out[k] = _ATTR_VALUE[k](v)
    except (KeyError, UirParseError): raise UirParseError(f"bad value {v!r} for attribute {k!r}") from None
  if missing := [k for k in allowed if k not in out and op is not Ops.CONST]:
    raise UirParseError(f"{op.name.lower()} needs attribute {' '.join(missing)}")
  return out


def _split(text: str) -> list[str]:
  """Operands: split at the commas outside parentheses."""
  if not text.strip(): return []
  out, depth, start = [], 0, 0
  for i, ch in enumerate(text + ","):
    depth += (ch == "(") - (ch == ")")
    if ch == "," and depth == 0:
      if not (tok := text[start:i].strip()): raise UirParseError("empty operand")
      out.append(tok)
      start = i + 1
  return out


def _tuple(tok: str) -> tuple:
  def ok(x): return isinstance(x, tuple) and all(ok(y) if isinstance(y, tuple) else type(y) is int for y in x)
  try: t = ast.literal_eval(tok)
  except (ValueError, SyntaxError): t = None
  if not ok(t): raise UirParseError(f"bad tuple {tok!r}: nested tuples of ints expected")
  return t


def _operand(tok: str, env: dict[str, UOp]) -> UOp | _Lit | tuple:
  if tok.startswith("%"):
    if tok[1:] not in env: raise UirParseError(f"undefined {tok}")
    return env[tok[1:]]
  return _tuple(tok) if tok.startswith("(") else _literal(tok)


def _const(lit: _Lit, d: DType) -> UOp:
  c = UOp.const(lit.value, d)
  if not d.is_float and c.arg != lit.value: raise UirParseError(f"literal {lit.value!r} does not fit {d.short}")
  return c


def _broadcast(xs: list[UOp]) -> list[UOp]:
  """NumPy broadcasting: align shapes on the right, RESHAPE to prepend 1s, EXPAND size-1 axes."""
  n = max(len(x.shape) for x in xs)
  shapes = [(1,) * (n - len(x.shape)) + x.shape for x in xs]
  out = []
  for sizes in zip(*shapes):
    if len(big := set(sizes) - {1}) > 1:
      raise UirParseError(f"can't broadcast {' with '.join(str(x.shape) for x in xs)}")
    out.append(big.pop() if big else 1)
  return [x.reshape(s).expand(tuple(out)) for x, s in zip(xs, shapes)]


def _build(name: str, rest: str, env: dict[str, UOp]) -> UOp:
  if (op := _OPS.get(name)) is None: raise UirParseError(f"unknown op {name!r}")
  m = _ATTR_TAIL.search(rest)
  attrs = _attrs(op, m.group(1) if m else "")
  toks = _split(rest[:m.start()] if m else rest)
  lo, hi = _ARITY[op]
  if len(toks) < lo or (hi is not None and len(toks) > hi):
    want = f"{lo}" if lo == hi else f"at least {lo}"
    raise UirParseError(f"wrong arity: {name} takes {want} operand{'s' * (want != '1')}, got {len(toks)}")
  if op in (Ops.BUFFER, Ops.ALLOC, Ops.RANGE):
    n = _int(toks[0])
    if op is Ops.RANGE: return range_(n, attrs["idx"], attrs["kind"])
    return buf(attrs["slot"], n, attrs["dtype"]) if op is Ops.BUFFER else \
      UOp(Ops.ALLOC, (), ParamArg(attrs["slot"], attrs["dtype"], (n,)))
  if op is Ops.CONST:
    lit = _literal(toks[0])
    return _const(lit, lit.dtype or attrs.get("dtype") or literal_dtype(lit.value, op, 0, [None]))
  vals = [_operand(t, env) for t in toks]
  arg = vals.pop() if op in MOVEMENT else None
  if op in MOVEMENT and not isinstance(arg, tuple): raise UirParseError(f"{name}: the last operand must be a tuple")
  if any(isinstance(v, tuple) for v in vals): raise UirParseError(f"{name}: unexpected tuple operand")
  dts = [v.dtype if isinstance(v, UOp) else None for v in vals]
  src = [v if isinstance(v, UOp) else _const(v, v.dtype or literal_dtype(v.value, op, k, dts))
         for k, v in enumerate(vals)]
  if op in BINARY or op is Ops.WHERE: src = _broadcast(src)
  if op is Ops.REDUCE: arg = (attrs["op"], attrs["pop"])
  if op is Ops.SCAN: arg = (attrs["op"], attrs["axis"])
  if op is Ops.PAD: arg = (arg, _const(attrs["value"], src[0].dtype).arg)
  return UOp(op, tuple(src), arg, attrs["dtype"] if op in (Ops.CAST, Ops.BITCAST) else None)


def parse(text: str) -> UOp:
  """The graph of a .uir program: the node its last statement defines."""
  env: dict[str, UOp] = {}
  root = None
  for n, line in enumerate(text.splitlines(), 1):
    if not (s := line.split("#", 1)[0].strip()): continue
    try:
      if not (m := _STMT.fullmatch(s)): raise UirParseError("expected '%N = op operand, ... : key=value ...'")
      ref, name, rest = m.groups()
      if ref in env: raise UirParseError(f"%{ref} is already defined")
      env[ref] = root = _build(name, rest, env)
    except (ValueError, TypeError, OverflowError) as e:   # UOpError (a type rule) is a ValueError
      raise UirParseError(f"line {n}: {e}: {line.strip()}") from e
  if root is None: raise UirParseError("empty program: no statements")
  return root


# ---------------------------------------------------------------- printing
def _value(v: bool | int | float) -> str:
  if isinstance(v, bool): return "true" if v else "false"
  if isinstance(v, float) and math.isnan(v): return "-nan" if math.copysign(1.0, v) < 0 else "nan"
  return repr(v)


def _statement(u: UOp, names: dict[UOp, str]) -> str:
  op, attrs = u.op, ""
  if op in (Ops.BUFFER, Ops.ALLOC): args, attrs = [str(u.arg.shape[0])], f"dtype={u.dtype.short} slot={u.arg.slot}"
  elif op is Ops.RANGE: args, attrs = [str(u.arg.size)], f"idx={u.arg.idx} kind={u.arg.kind.name.lower()}"
  elif op is Ops.CONST: args, attrs = [_value(u.arg)], f"dtype={u.dtype.short}"
  else:
    dts = [None if s.op is Ops.CONST else s.dtype for s in u.src]
    args = [names[s] if s.op is not Ops.CONST else _value(s.arg) if literal_dtype(s.arg, op, k, dts) is s.dtype
            else f"{_value(s.arg)}:{s.dtype.short}" for k, s in enumerate(u.src)]
    if op in MOVEMENT: args.append(repr(u.arg[0] if op is Ops.PAD else u.arg))
    if op is Ops.REDUCE: attrs = f"op={u.arg[0].name.lower()} pop={u.arg[1]}"
    if op is Ops.SCAN: attrs = f"op={u.arg[0].name.lower()} axis={u.arg[1]}"
    if op is Ops.PAD: attrs = f"value={_value(u.arg[1])}"
    if op in (Ops.CAST, Ops.BITCAST): attrs = f"dtype={u.dtype.short}"
  return f"{op.name.lower()} {', '.join(args)}".rstrip() + (f" : {attrs}" if attrs else "")


def print_uir(u: UOp) -> str:
  """u as .uir text: a statement per node in toposort order, CONST sources inline as literals."""
  names: dict[UOp, str] = {}
  lines = []
  for x in u.toposort():
    if x.op is Ops.CONST and x is not u: continue
    names[x] = f"%{len(names)}"
    lines.append(f"{names[x]} = {_statement(x, names)}")
  return "\n".join(lines) + "\n"
