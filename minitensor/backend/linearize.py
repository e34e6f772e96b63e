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
Constants, buffers, allocations (declared by their first AFTER) and ranges are not statements; each other node
appears exactly once.
"""
from __future__ import annotations
import heapq
from typing import NamedTuple
from minitensor.backend.uop import Ops, UOp


def variables(sink: UOp) -> tuple[int, ...]:
  """The indices of the VARs a lowered kernel uses, in index arithmetic or as loop extents (its size arguments)."""
  nodes = sink.toposort()
  found = {u.arg.idx for u in nodes if u.op is Ops.VAR}
  found |= {v.arg.idx for u in nodes if u.op is Ops.RANGE and u.arg.var is not None
            for v in u.arg.var.toposort() if v.op is Ops.VAR}
  return tuple(sorted(found))


class LinearizeError(ValueError):
  """The graph has no valid loop structure (a node needs two sibling loops at once, or a cycle)."""


class Stmt(NamedTuple):
  kind: str        # "open" | "close" | "node"
  u: UOp


_NOT_STMT = (Ops.CONST, Ops.VAR, Ops.RANGE, Ops.BUFFER, Ops.ALLOC, Ops.SINK, Ops.END)


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
    stack = [r]          # an explicit stack: loops may nest deeper than Python's stack
    while stack:
      x = stack[-1]
      if x in scope: stack.pop(); continue
      todo = [p for p in home.get(x, ()) if p not in scope]
      if todo: stack += todo; continue
      scope[x] = frozenset((x,)).union(*(scope[p] for p in home.get(x, ())))
      stack.pop()
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


_recent: dict[UOp, tuple[Stmt, ...]] = {}     # the last programs (the tiers' work estimate and the renderer both ask)


def linearize(sink: UOp) -> tuple[Stmt, ...]:
  """The program of `sink`: loops nested or siblings as the edges require, each node once."""
  if (p := _recent.get(sink)) is None:
    if len(_recent) >= 64: _recent.clear()
    p = _recent[sink] = tuple(_linearize(sink))
  return p


def _linearize(sink: UOp) -> list[Stmt]:
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
    up = []
    while b not in chain_cache and b is not None: up.append(b); b = parent[b]
    c = chain_cache.get(b, (None,))
    for x in reversed(up): c = chain_cache[x] = c + (x,)
    return c
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
  def block_items(b: UOp | None) -> list:
    """[loop, ready heap, pending deps, users, items done, item count] of one block's topological sort."""
    items = children.get(b, [])
    in_block = set(items)
    pending = {it: {d for d in deps.get(it, ()) if d in in_block} for it in items}
    users: dict = {}
    for it, ds in pending.items():
      for d in ds: users.setdefault(d, []).append(it)
    ready = [(first[it], pos[it], it) for it, ds in pending.items() if not ds]
    heapq.heapify(ready)
    return [b, ready, pending, users, 0, len(items)]
  def finished(f: list, it: UOp) -> None:
    for v in f[3].get(it, ()):
      f[2][v].discard(it)
      if not f[2][v]: heapq.heappush(f[1], (first[v], pos[v], v))
  # a stack of open blocks, not recursion: loops may nest deeper than Python's stack
  stack = [block_items(None)]
  while stack:
    f = stack[-1]
    if not f[1]:
      if f[4] != f[5]: raise LinearizeError("cyclic dependencies between statements")
      stack.pop()
      if f[0] is not None:
        out.append(Stmt("close", f[0]))
        finished(stack[-1], f[0])
      continue
    _, _, it = heapq.heappop(f[1])
    f[4] += 1
    if it.op is Ops.RANGE:
      out.append(Stmt("open", it))
      stack.append(block_items(it))
    else:
      out.append(Stmt("node", it))
      finished(f, it)
  return [s for s in out if s.kind != "node" or s.u.op not in _NOT_STMT]


def operations(sink: UOp) -> int:
  """Statements executed by a lowered program: every statement times the iterations of the loops around it."""
  total, stack = 0, [1]
  for s in linearize(sink):
    if s.kind == "open": stack.append(stack[-1] * s.u.arg.size)
    elif s.kind == "close": stack.pop()
    else: total += stack[-1]
  return total


def iterations(sink: UOp) -> int:
  """Total loop iterations of a lowered program: sum over loops of size * iterations of the loops around it."""
  total, stack = 0, [1]
  for s in linearize(sink):
    if s.kind == "open":
      stack.append(stack[-1] * s.u.arg.size)
      total += stack[-1]
    elif s.kind == "close": stack.pop()
  return total
