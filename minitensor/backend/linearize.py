"""linearize: a SINK graph of the loop world -> an ordered program.

The graph has no statement order; its edges say what must happen first. Two kinds of facts decide the program:

  scope     the loops a node must sit in. A node is inside every RANGE it mentions that no END between it and
            that RANGE has closed, and inside every loop enclosing those (a loop lives where its END lives).
            A node is placed in the innermost loop of its scope and no deeper, which hoists loop-invariant
            values to the outermost loop in which all their inputs exist.
  order     inside one loop body the items (statements, and child loops as a whole) are sorted topologically
            by the graph's edges lifted to that body; an AFTER on an END puts its users after that loop, which
            makes loops siblings rather than nested (the seed's sub_max).

The result is a list of Stmt: ("open", RANGE), ("close", RANGE) and ("node", u) for every node to emit.
Constants, buffers, allocations (declared by their first AFTER) and ranges are not statements; each other node appears exactly once.
"""
from __future__ import annotations
import heapq
from dataclasses import dataclass
from minitensor.backend.uop import UOp, Ops


class LinearizeError(ValueError):
  """The graph has no valid loop structure (a node needs two sibling loops at once, or a cycle)."""


@dataclass(frozen=True)
class Stmt:
  kind: str        # "open" | "close" | "node"
  u: UOp


_NOT_STMT = (Ops.CONST, Ops.RANGE, Ops.BUFFER, Ops.ALLOC, Ops.SINK, Ops.END)


def _scopes(nodes: list[UOp]) -> tuple[dict[UOp, frozenset], dict[UOp, UOp | None]]:
  """Per node, the set of loops it must be inside; per RANGE, the loop directly around it (None: top)."""
  open_: dict[UOp, frozenset] = {}
  for u in nodes:
    if u.op is Ops.RANGE: open_[u] = frozenset((u,))
    else:
      o = frozenset().union(*(open_[s] for s in u.src))
      open_[u] = o - frozenset(u.src[1:]) if u.op is Ops.END else o
  # where each loop lives: the open set of its END, plus the loops listed before it in that END
  home: dict[UOp, frozenset] = {}
  for u in nodes:
    if u.op is Ops.END:
      rs = sorted(u.src[1:], key=lambda r: r.arg.idx)
      for k, r in enumerate(rs):
        h = open_[u] | frozenset(rs[:k])
        if r in home and home[r] != h: raise LinearizeError(f"range {r.arg.idx} is closed in two different places")
        home[r] = h
  scope: dict[UOp, frozenset] = {}
  def loop_scope(r: UOp) -> frozenset:
    if r not in scope:
      scope[r] = frozenset((r,)).union(*(loop_scope(p) for p in home.get(r, ())))
    return scope[r]
  for u in nodes:
    if u.op is not Ops.RANGE: scope[u] = frozenset().union(*(loop_scope(r) for r in open_[u]))
    else: loop_scope(u)
  parent: dict[UOp, UOp | None] = {}
  for u in nodes:
    if u.op is Ops.RANGE: parent[u] = _innermost(scope[u] - {u}, scope)
  return scope, parent


def _innermost(s: frozenset, scope: dict) -> UOp | None:
  """The loop of s that all others enclose (s must be a chain)."""
  if not s: return None
  inner = max(s, key=lambda r: len(scope[r]))
  if scope[inner] != s: raise LinearizeError(f"a node needs sibling loops {sorted(r.arg.idx for r in s)} at once")
  return inner


def linearize(sink: UOp) -> list[Stmt]:
  """The program of `sink`: loops nested or siblings as the edges require, each node once."""
  nodes = sink.toposort()
  pos = {u: i for i, u in enumerate(nodes)}
  scope, parent = _scopes(nodes)
  # the block (innermost loop, None = top) of every statement; an END stands for its loop in the enclosing block
  block: dict[UOp, UOp | None] = {}
  for u in nodes:
    if u.op in (Ops.CONST, Ops.BUFFER, Ops.ALLOC, Ops.SINK, Ops.RANGE): continue
    block[u] = _innermost(scope[u], scope)
  chain_cache: dict = {}
  def chain(b: UOp | None) -> tuple:
    if b not in chain_cache: chain_cache[b] = (None,) if b is None else chain(parent[b]) + (b,)
    return chain_cache[b]
  def item(u: UOp, depth: int):
    """The item of u in the block at `depth` of its chain: u itself, or the loop that contains it."""
    c = chain(block[u]) if u.op is not Ops.RANGE else chain(u)
    if u.op is Ops.END:
      loops = sorted(u.src[1:], key=lambda r: len(scope[r]))
      c = chain(loops[0]) if loops else c
    return c[depth + 1] if depth + 1 < len(c) else u
  children: dict[UOp | None, list] = {}
  for u in nodes:
    if u.op is Ops.RANGE: children.setdefault(parent[u], []).append(u)
    elif u in block and u.op is not Ops.END: children.setdefault(block[u], []).append(u)
  # dependencies between items of the same block
  deps: dict = {}
  first: dict = {}
  for u in nodes:
    if u not in block and u.op is not Ops.RANGE: continue
    cu = chain(block[u]) if u.op is not Ops.RANGE else chain(u)
    for s in u.src:
      if s not in block or (u.op is Ops.AFTER and s.op is Ops.RANGE): continue
      cs = chain(block[s])
      if s.op is Ops.END:
        loops = sorted(s.src[1:], key=lambda r: len(scope[r]))
        cs = chain(parent[loops[0]]) if loops else cs
      d = 0
      while d + 1 < min(len(cu), len(cs)) and cu[d + 1] is cs[d + 1]: d += 1
      a, b = item(s, d), item(u, d)
      if a is not b: deps.setdefault(b, set()).add(a)
  for u in nodes:
    if u in block or u.op is Ops.RANGE:
      for d in range(len(chain(block[u]) if u.op is not Ops.RANGE else chain(u))):
        it = item(u, d)
        first[it] = min(first.get(it, pos[u]), pos[u])
  out: list[Stmt] = []
  def emit(b: UOp | None) -> None:
    items = children.get(b, [])
    in_block = set(items)
    pending = {it: {d for d in deps.get(it, ()) if d in in_block} for it in items}
    users: dict = {}
    for it, ds in pending.items():
      for d in ds: users.setdefault(d, []).append(it)
    ready = [(first[it], pos[it], it) for it, ds in pending.items() if not ds]
    heapq.heapify(ready)
    done = 0
    while ready:
      _, _, it = heapq.heappop(ready)
      done += 1
      if it.op is Ops.RANGE:
        out.append(Stmt("open", it)); emit(it); out.append(Stmt("close", it))
      else: out.append(Stmt("node", it))
      for v in users.get(it, ()):
        pending[v].discard(it)
        if not pending[v]: heapq.heappush(ready, (first[v], pos[v], v))
    if done != len(items): raise LinearizeError("cyclic dependencies between statements")
  emit(None)
  return [s for s in out if s.kind != "node" or s.u.op not in _NOT_STMT]


def iterations(sink: UOp) -> int:
  """Total loop iterations of a lowered program: sum over loops of size * iterations of the loops around it."""
  total, stack = 0, [1]
  for s in linearize(sink):
    if s.kind == "open":
      stack.append(stack[-1] * s.u.arg.size)
      total += stack[-1]
    elif s.kind == "close": stack.pop()
  return total
