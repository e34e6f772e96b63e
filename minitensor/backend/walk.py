"""walk: walks over a UOp graph without recursion (graphs may be 100,000 nodes deep), and the value bounds that
one such walk infers. uop.py re-exports them; the nodes' own methods (substitute, vmin, vmax) use them.

    rewrite(root, fn, memo)     root rebuilt bottom-up, each node once (the compiler's one graph-rewrite walker)
    UPat, PatternMatcher        the pattern language: a rule is (pattern, function of the names it binds)
    graph_rewrite(root, pm)     root rewritten bottom-up by a PatternMatcher to a fixpoint (on `rewrite`)
    memo_walk(root, rule, memo) a generator rule per key, run on an explicit stack (rangeify's rules)
    bounds(u)                   (vmin, vmax) of an index expression's value, memoized on the nodes

A UPat matches a node by its op (one or a tuple), dtype (one, a tuple, or a predicate on the DType), arg (equal to
a value), sources (a tuple of UPats matched in order; commute=True also tries two sources swapped) and a predicate
on the node (`where`). A named pattern binds the node to its name, and a name bound twice must bind the same node
(hash-consing makes `is` structural equality): UPat(Ops.MAX, src=(x, x)) is max(x, x). A PatternMatcher holds
rules in order, indexed by op; the first rule whose pattern matches and whose function returns a node (not None)
rewrites the node. Functions take the bound names as keywords, and `ctx` when the matcher is given one.
"""
from __future__ import annotations
from typing import TYPE_CHECKING, Any, Callable
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.ops import COMPARE, Ops

if TYPE_CHECKING:
  from minitensor.backend.uop import UOp


def rewrite(root: UOp, fn: Callable[[UOp, tuple[UOp, ...]], UOp | None] | None = None, memo=None) -> UOp:
  """root rebuilt bottom-up, the one graph-rewrite walker of the compiler: every node once, after its sources.
  fn(u, src) is u's result given its sources' results src, or None for the default (also without fn): u itself when
  src are its own sources, else u with src. Results are kept in `memo` (node -> result; it is used through `in`,
  `[]`, `get` and assignment only): a node already in it is not entered, so a memo seeded with {node: replacement}
  is a substitution, and a memo kept across calls continues earlier walks (simplify's lives on the nodes).
  Iterative: graphs may be far deeper than Python's stack."""
  if memo is None: memo = {}
  if (r := memo.get(root)) is not None: return r
  stack: list[tuple[UOp, bool]] = [(root, False)]
  while stack:
    u, ready = stack.pop()
    if u in memo: continue
    if ready:
      src = tuple([memo[s] for s in u.src])
      if fn is None or (r := fn(u, src)) is None:
        r = u if all(a is b for a, b in zip(src, u.src)) else u.replace(src=src)
      memo[u] = r
      continue
    stack.append((u, True))
    stack.extend([(s, False) for s in reversed(u.src) if s not in memo])
  return memo[root]


_ANY = object()


class UPat:
  """A pattern over UOps (see the module docstring)."""
  __slots__ = ("ops", "dtype", "src", "arg", "name", "where", "commute")

  def __init__(self, op: Ops | tuple[Ops, ...] | None = None, dtype: DType | tuple | Callable | None = None,
               src: tuple[UPat, ...] | None = None, arg: Any = _ANY, name: str | None = None,
               where: Callable[[UOp], bool] | None = None, commute: bool = False):
    self.ops = None if op is None else (op,) if isinstance(op, Ops) else tuple(op)
    self.dtype = (dtype,) if isinstance(dtype, DType) else dtype
    self.src, self.arg, self.name, self.where, self.commute = src, arg, name, where, commute

  @staticmethod
  def var(name: str, dtype: DType | tuple | Callable | None = None) -> UPat:
    """Any node, bound to `name`."""
    return UPat(dtype=dtype, name=name)

  @staticmethod
  def cvar(name: str | None = None, arg: Any = _ANY, where: Callable[[UOp], bool] | None = None) -> UPat:
    """A CONST (with value `arg` when given), bound to `name`."""
    return UPat(Ops.CONST, arg=arg, name=name, where=where)

  def match(self, u: UOp, b: dict[str, UOp]) -> bool:
    """Whether u matches, binding names into b (b may be partly filled on failure: callers pass a fresh dict)."""
    if self.ops is not None and u.op not in self.ops: return False
    if self.dtype is not None and not (u.dtype in self.dtype if isinstance(self.dtype, tuple) else self.dtype(u.dtype)):
      return False
    if self.arg is not _ANY and u.arg != self.arg: return False
    if self.name is not None:
      if (seen := b.get(self.name)) is not None: return seen is u
      b[self.name] = u
    if self.src is not None:
      if len(u.src) != len(self.src): return False
      before = dict(b) if self.commute else b
      if not all(p.match(s, b) for p, s in zip(self.src, u.src)):
        if not self.commute or len(u.src) != 2: return False
        b.clear()
        b.update(before)
        if not (self.src[0].match(u.src[1], b) and self.src[1].match(u.src[0], b)): return False
    return self.where is None or self.where(u)

  def __repr__(self) -> str:
    ops = "|".join(o.name for o in self.ops) if self.ops else "*"
    return f"UPat({ops}{f', name={self.name!r}' if self.name else ''}{f', src={self.src}' if self.src else ''})"


class PatternMatcher:
  """Rules (pattern, function) tried in order on a node; see the module docstring."""

  def __init__(self, rules: list[tuple[UPat, Callable[..., UOp | None]]]):
    self.rules = list(rules)
    self._by_op: dict[Ops, list] = {op: [(p, f) for p, f in self.rules if p.ops is None or op in p.ops] for op in Ops}

  def __add__(self, other: PatternMatcher) -> PatternMatcher: return PatternMatcher(self.rules + other.rules)

  def rewrite(self, u: UOp, ctx: Any = None) -> UOp | None:
    """The replacement of u by the first rule that matches and returns a node, or None."""
    for pat, fn in self._by_op[u.op]:
      b: dict[str, UOp] = {}
      if pat.match(u, b) and (r := fn(**b) if ctx is None else fn(ctx=ctx, **b)) is not None: return r
    return None


def graph_rewrite(root: UOp, pm: PatternMatcher, ctx: Any = None, memo=None) -> UOp:
  """root rewritten bottom-up by pm to a fixpoint: each node once its sources are rewritten, and a replacement is
  rewritten again until no rule applies. `memo` as in `rewrite` (a memo kept across calls continues earlier walks)."""
  if memo is None: memo = {}
  def node(u: UOp, src: tuple[UOp, ...]) -> UOp:
    v = u if all(a is b for a, b in zip(src, u.src)) else u.replace(src=src)
    r = v if (w := pm.rewrite(v, ctx)) is None else graph_rewrite(w, pm, ctx, memo)
    memo[r] = r
    if v not in memo: memo[v] = r
    return r
  return rewrite(root, node, memo)


def memo_walk(root, rule, memo: dict):
  """The result of `rule` at `root`, without recursion (graphs may be far deeper than Python's stack).
  rule(key) is a generator: it yields the keys whose results it needs (each result is sent back in) and
  returns its own result. Results are kept in `memo` (key -> result, never None), so each key runs once."""
  if (r := memo.get(root)) is not None: return r
  stack = [(root, rule(root))]
  val = None
  while stack:
    key, gen = stack[-1]
    try: want = gen.send(val)
    except StopIteration as done:
      memo[key] = val = done.value
      stack.pop()
      continue
    if (val := memo.get(want)) is None: stack.append((want, rule(want)))
  return val


def bounds(u: UOp) -> tuple:
  """(vmin, vmax) of u's value; the dtype's range where nothing better is known."""
  if u._bounds is None:
    for x in u.toposort():
      if x._bounds is None: x._bounds = _bounds(x)
  return u._bounds


def _bounds(u: UOp) -> tuple:
  d, op = u.dtype, u.op
  full = (d.min, d.max) if d is not dtypes.void else (0, 0)
  if op is Ops.CONST: return (u.arg, u.arg)
  if op is Ops.RANGE: return (0, (u.arg.size if u.arg.var is None else bounds(u.arg.var)[1]) - 1)
  if op is Ops.VAR: return (u.arg.lo, u.arg.hi)
  if op in COMPARE:
    if u.src[0].dtype.kind in "fc": return (False, True)
    (a0, a1), (b0, b1) = u.src[0]._bounds, u.src[1]._bounds
    if op is Ops.CMPLT: return (a1 < b0, a0 < b1)
    if op is Ops.CMPLE: return (a1 <= b0, a0 <= b1)
    disjoint = a1 < b0 or b1 < a0
    same = a0 == a1 == b0 == b1
    if op is Ops.CMPEQ: return (same, not disjoint)
    return (disjoint, not same)
  if op is Ops.WHERE:
    c, a, b = (s._bounds for s in u.src)
    if c[0]: return a
    if not c[1]: return b
    return full if d.is_complex else (min(a[0], b[0]), max(a[1], b[1]))      # complex values have no order
  if op is Ops.CAST:
    s0, s1 = u.src[0]._bounds
    if d.kind in "fc" or u.src[0].dtype.kind in "fc": return full
    return (s0, s1) if d.min <= s0 and s1 <= d.max else full
  if d.kind in "fc" or op not in (Ops.ADD, Ops.MUL, Ops.FLOORDIV, Ops.FLOORMOD, Ops.MAX, Ops.MIN, Ops.AND, Ops.OR):
    return full
  (a0, a1), (b0, b1) = u.src[0]._bounds, u.src[1]._bounds
  if op is Ops.ADD: r = (a0 + b0, a1 + b1)
  elif op is Ops.MUL:
    ps = [a0 * b0, a0 * b1, a1 * b0, a1 * b1]
    r = (min(ps), max(ps))
  elif op is Ops.MAX: r = (max(a0, b0), max(a1, b1))
  elif op is Ops.MIN: r = (min(a0, b0), min(a1, b1))
  elif op in (Ops.AND, Ops.OR):
    if not d.is_bool:
      return full if a0 < 0 or b0 < 0 else (0, max(a1, b1) if op is Ops.AND else (1 << max(a1, b1).bit_length()) - 1)
    r = (a0 and b0, a1 and b1) if op is Ops.AND else (a0 or b0, a1 or b1)
  elif b0 == b1 and b0 > 0:
    c = b0
    if op is Ops.FLOORDIV: r = (a0 // c, a1 // c)
    else: r = (a0 % c, a1 % c) if a0 // c == a1 // c else (0, c - 1)
  elif op is Ops.FLOORDIV and b0 > 0:
    r = (min(a0 // b0, a0 // b1), max(a1 // b0, a1 // b1))
  elif op is Ops.FLOORMOD and b0 > 0: r = (0, b1 - 1)
  else: return full
  return r if d is dtypes.index or (d.min <= r[0] and r[1] <= d.max) else full
