"""keys: the structural key a realization's program is found by, and the tree keys that find it without a walk.

`structure` walks a graph once: its key (the graph with realized leaves abstracted to position, dtype and shape,
lifted constants to kernel arguments, and for small graphs the sizes to tokens), its leaves in input order and
its sizes. realize looks the key up in its program cache (realize.lookup).

Tree keys make that lookup cheap for graphs of fresh nodes. Each node of the shape world keeps, once asked, a
tree id and its distinct leaves (a leaf: a node holding data or a lifted constant, what the walk makes a program
input), in order of first occurrence. The id is an interned int standing for the node's op, dtype, argument and
shape, its sources' ids and where each source's leaves fall among the node's (`_merged`); a leaf's id stands for
its dtype and shape alone. Nodes are hash-consed, so two graphs whose roots have the same ids are one graph up to
the identities of their leaves, which of them are one node included (f(a, b) and f(a, a) differ): the program,
input order and sizes that realize's walk and lookup found for the first serve the second (`find`, filled by
`keep`). A loop building fresh nodes of one structure then pays a few tuple lookups per new node instead of a walk
and a hash of the whole structure per realization, and a node shared by several realizations (a mask and the value
it selects from) is keyed once. The leaves are weak references: a memo must not hold a buffer, whose reference
count says whether a write may go in place.

A memo is made in an epoch and holds within it. Realizing a node that some memo counts as computed (`realized`)
starts a new epoch: those memos are stale, and every memo is made again when next asked (then with that node a
leaf, as the walk has it). Graphs with more than LEAF_CAP distinct leaves, reading a placeholder or deeper than
Python's recursion allows (the memo is made recursively) have no tree key (realize walks them).
"""
from __future__ import annotations
import itertools
import math
import weakref
from minitensor.backend.leaves import Unbound, lifted
from minitensor.backend.sizes import order_lanes
from minitensor.backend.uop import ALU, FLOAT_ARG, Ops, UOp, argkey

SYMBOLIC_MAX = 1 << 16     # graphs whose values all have at most this many elements are lowered with symbolic sizes


def structure(outputs: list[UOp], symbolic: bool = True) -> tuple[tuple, list[UOp], tuple[int, ...]]:
  """A hashable key of the outputs' graph with realized leaves abstracted to (position, dtype, size), the leaves
  in that order, and the graph's sizes: equal keys mean the same computation on other data. A node whose value
  was realized before (it holds `data`) is a leaf too: its graph is not computed again; so is a `lifted`
  constant, which the kernels read from a one-element buffer (x * 0.5 and x * 0.25 share a kernel).

  Symbolic (every value of at most SYMBOLIC_MAX elements): the sizes are abstracted too. Each distinct size >= 2
  in a shape or a movement argument is a token (its position in the returned sizes); 0 and 1 stay numbers,
  since they decide structure (empty, broadcast). The key then says which sizes are equal and nothing about
  their values: softmax of (5, 7) and of (30, 2) share a kernel, whose sizes are arguments (README,
  "Caching"). Otherwise the sizes are part of the key, and () is returned for them. Builds no nodes (the hot path)."""
  if symbolic and (r := walk(outputs, True)) is not None: return r
  return walk(outputs, False)




def walk(outputs: list[UOp], symbolic: bool, limit: int | None = None):
  """structure's walk: (key, leaves, sizes), symbolic with sizes up to `limit` (SYMBOLIC_MAX), or None when a
  symbolic key is asked for and a value exceeds the limit."""
  if limit is None: limit = SYMBOLIC_MAX          # (read at each call: tests change it)
  BUFFER, CONST, RESHAPE, EXPAND, SHRINK, PAD, REDUCE = \
    Ops.BUFFER, Ops.CONST, Ops.RESHAPE, Ops.EXPAND, Ops.SHRINK, Ops.PAD, Ops.REDUCE
  prod_ = math.prod
  pos: dict[UOp, int] = {}
  at = pos.__getitem__
  opened: set[UOp] = set()      # nodes whose sources are on the stack, above them
  leaves: list[UOp] = []
  key: list = []
  flat = symbolic               # elementwise over whole operands so far (the key then drops every shape)
  sizes: dict[int, int] = {}    # each size >= 2 -> its token ~k (negative), k its position
  seen: dict[tuple, tuple] = {}  # shape -> its tokens
  reduced = 0                   # elements the reductions read (their lanes' class: sizes.order_lanes)
  for o in outputs:
    stack = [o]
    while stack:                # sources left to right, each node after its sources (once)
      u = stack.pop()
      if u in pos: continue
      if u.data is None and u.src and u not in opened:
        # (found before its sources are walked; a shape already seen is within the limit)
        if symbolic and u.shape not in seen and prod_(u.shape) > limit: return None
        opened.add(u)
        stack.append(u)
        stack.extend(reversed(u.src))
        continue
      op = u.op
      known = u.data is not None or (op is CONST and lifted(u))
      if op is BUFFER and not known: raise Unbound(f"a graph of shape {outputs[0].shape} reads a placeholder "
                                                   f"input ({u.arg.dtype.name}, {u.arg.shape[0]} elements)")
      if not symbolic:
        if known:
          key.append((BUFFER, u.dtype, u.shape, len(leaves)))
          leaves.append(u)
        else: key.append((op, u.dtype, argkey(u.arg) if op in FLOAT_ARG else u.arg, tuple(map(at, u.src))))
        pos[u] = len(key) - 1
        continue
      try:
        if (shape := seen.get(u.shape)) is None:          # (the nodes of a graph share a few shapes)
          if prod_(u.shape) > limit: return None
          shape = seen[u.shape] = tuple([_token(v, sizes, limit) for v in u.shape])
        arg = u.arg
        if known: pass
        elif op is RESHAPE or op is EXPAND:
          arg = None                                      # the node's own shape says it
          flat = flat and (op is RESHAPE or _scalar_leaf(u.src[0]))
        elif op is CONST: arg = argkey(arg)
        elif op not in ALU:
          flat = False
          if op is REDUCE: reduced += prod_(u.src[0].shape)
          elif op is SHRINK: arg = tuple([(_token(b, sizes, limit), _token(e, sizes, limit)) for b, e in arg])
          elif op is PAD:
            arg = (tuple([(_token(b, sizes, limit), _token(a, sizes, limit)) for b, a in arg[0]]), argkey(arg[1]))
      except OverflowError: return None
      if known:
        key.append((BUFFER, u.dtype, u.shape.count(1) == len(u.shape), len(leaves), shape))
        leaves.append(u)
      else:
        key.append((op, u.dtype, arg, tuple(map(at, u.src)), shape))
      pos[u] = len(key) - 1
  outs = tuple([pos[o] for o in outputs])
  if flat and len(n := {prod_(o.shape) for o in outputs}) == 1 and (n := n.pop()) >= 2:
    # elementwise over whole operands (kernelize.flat_elementwise): one loop over n, whatever the rank and shape
    return ("flat", tuple([e[:4] for e in key]), outs), leaves, (n,)
  key.append(outs)
  if reduced: key.append(order_lanes(reduced))
  return tuple(key), leaves, tuple(sizes)


def _token(v: int, sizes: dict[int, int], limit: int) -> int:
  """Size v as a symbolic key has it: 0 and 1 as themselves, another size as ~k, k its position in `sizes`
  (OverflowError past `limit`: the graph is keyed concretely)."""
  if v < 2: return v
  if (t := sizes.get(v)) is None:
    if v > limit: raise OverflowError
    t = sizes[v] = len(sizes)
  return ~t


def _scalar_leaf(u: UOp) -> bool:
  """Whether u is one element of a leaf or a constant (through reshapes): what a flat kernel broadcasts."""
  while u.op is Ops.RESHAPE and u.data is None: u = u.src[0]
  return math.prod(u.shape) == 1 and (u.data is not None or u.op is Ops.CONST)


# ---- tree keys
LEAF_CAP = 256         # distinct leaves a tree key lists (more: a sum of many arrays, walked)
PROGRAMS_CAP = 4096
IDS_CAP = 1 << 15      # interned node keys kept (~5 MB; a steady loop meets a few hundred)

_LEAF = -1                        # a memo's epoch field for a leaf: a node with data stays one
_ids: dict[tuple, int] = {}       # (op, dtype, arg, shape, source ids) or (dtype, shape) of a leaf -> tree id
_next = itertools.count(1)        # ids are never reused, so clearing _ids can only cause misses
_epoch = [0]
# (mode, the outputs' ids and leaf maps) -> (program, weakly: realize's memory cache bounds the loaded programs;
# the leaves' positions in input order; the sizes)
_programs: dict[tuple, tuple] = {}


def _id(k: tuple) -> int:
  if (i := _ids.get(k)) is None:
    if len(_ids) >= IDS_CAP: _ids.clear()
    i = _ids[k] = next(_next)
  return i


def _tree(u: UOp) -> list | None:
  """u's memo [epoch, tree id, leaves, used], made now if it has none of this epoch; None when u's graph has no
  tree key. used: whether a memo of another node counts u as computed (realizing u then starts an epoch). A memo
  is a list so that marking it used costs no new object; a source whose memo holds is read without a call."""
  op = u.op
  if u.data is not None or (op is _CONST and lifted(u)):
    if (t := u._tree) is None or t[0] != _LEAF: t = u._tree = [_LEAF, _id((u.dtype, u.shape)), (_ref(u),), False]
    return t
  epoch = _epoch[0]
  if (t := u._tree) is not None and t[0] == epoch: return t if t[1] is not None else None
  if op is _BUFFER: return None                           # (a placeholder: realize raises Unbound)
  # (a PAD's fill alone may be a float: its argument keyed as UOp.__new__ keys it)
  arg = u.arg if op not in FLOAT_ARG else argkey(u.arg) if op is _CONST else (u.arg[0], argkey(u.arg[1]))
  memos = []
  for s in u.src:
    # (a memo of this epoch holds while s has no value; a leaf's holds for good)
    if (st := s._tree) is None or not ((e := st[0]) == _LEAF or (e == epoch and s.data is None)) or st[1] is None:
      if (st := _tree(s)) is None:
        u._tree = [epoch, None, None, False]
        return None
    if not st[3] and st[0] != _LEAF: st[3] = True
    memos.append(st)
  if len(memos) == 2 and ((lb := memos[1][2]) is (la := memos[0][2]) or not lb or not la):    # (_merged's commonest)
    key, leaves = (op, u.dtype, arg, u.shape, memos[0][1], memos[1][1], -1 if lb is la else -2 if not lb else -3), \
      la or lb
  elif len(memos) == 1: key, leaves = (op, u.dtype, arg, u.shape, memos[0][1]), memos[0][2]
  elif (m := _merged(memos)) is None:
    u._tree = [epoch, None, None, False]
    return None
  else: key, leaves = (op, u.dtype, arg, u.shape, *m[0]), m[1]
  if (i := _ids.get(key)) is None: i = _id(key)
  t = u._tree = [epoch, i, leaves, False]
  return t


def _merged(memos: list[tuple]) -> tuple[tuple, tuple] | None:
  """(the sources' part of a key, the leaves) of a node or a realization over the memos of its sources: their ids,
  and each source's leaves as positions among the distinct leaves of all (in order of first occurrence), unless
  every source has the one same tuple of leaves (a value and a movement of it: `x.T - x`), which the key marks
  with -1, or one of two has none (-2: the second, -3: the first), or one of two has a prefix of the other's
  (-4: the first, -5: the second; with the prefix's length) or leaves the other has none of (-6, with the first's
  count). None past LEAF_CAP distinct leaves."""
  n = len(memos)
  if n == 1: return (memos[0][1],), memos[0][2]             # (the common cases first: a movement, a binary op)
  if n == 2:
    a, b = memos[0][1], memos[1][1]
    if (lb := memos[1][2]) is (la := memos[0][2]) or not lb or not la:
      return (a, b, -1 if lb is la else -2 if not lb else -3), la or lb
    # (a value over a few leaves with another over a prefix of them, or over others: `dx * r`, `r + 0.01`)
    if len(la) < len(lb) and lb[:len(la)] == la: return (a, b, -4, len(la)), lb
    if len(lb) < len(la) and la[:len(lb)] == lb: return (a, b, -5, len(lb)), la
    if len(la) + len(lb) <= 8 and set(la).isdisjoint(lb): return (a, b, -6, len(la)), la + lb
  if n == 0: return (), ()                                   # (a literal: no leaves)
  ids = tuple([t[1] for t in memos])
  first = memos[0][2]
  if all(t[2] is first for t in memos): return (*ids, -1), first
  pos: dict[weakref.ref, int] = {}
  maps = []
  for t in memos:
    m = []
    for r in t[2]:
      if (k := pos.get(r)) is None: k = pos[r] = len(pos)
      m.append(k)
    maps.append(tuple(m))
  if len(pos) > LEAF_CAP: return None
  return (*ids, *maps), tuple(pos)


_CONST, _BUFFER = Ops.CONST, Ops.BUFFER
_ref = weakref.ref        # (a node's weakref without a callback is one object: leaves compare by it)


def _key(outputs: list[UOp], mode) -> tuple[tuple, tuple] | None:
  """((mode, the outputs' part), distinct leaves) of a realization of `outputs` (_merged), or None (walked)."""
  memos = []
  for o in outputs:
    try: t = _tree(o)
    except RecursionError:           # (its nodes' memos made so far are kept: a later realization gets further)
      o._tree = [_epoch[0], None, None, False]
      return None
    if t is None: return None
    memos.append(t)
  if (m := _merged(memos)) is None: return None
  return (mode, SYMBOLIC_MAX, *m[0]), m[1]       # (tests lower the limit: keys made under another are not met)


def find(outputs: list[UOp], mode) -> tuple[tuple | None, tuple | None]:
  """(the key of outputs' realization or None, and the (program, leaves in input order, sizes) that a realization
  of the same key found, or None)."""
  if (k := _key(outputs, mode)) is None: return None, None
  key, leaves = k
  if (hit := _programs.get(key)) is None or (prog := hit[0]()) is None: return k, None
  return k, (prog, [leaves[i]() for i in hit[1]], hit[2])


def keep(k: tuple, prog, inputs: list[UOp], sizes: tuple[int, ...]) -> None:
  """Remember for key k (from find, with its distinct leaves) the program and sizes realize's lookup found, and the
  order of its inputs (leaf nodes) among the leaves."""
  key, leaves = k
  pos = {x: i for i, x in enumerate(leaves)}
  refs = [_ref(x) for x in inputs]
  if len(pos) != len(refs) or any(r not in pos for r in refs): return     # (not the walk's leaves: no entry)
  if len(_programs) >= PROGRAMS_CAP: _programs.clear()
  _programs[key] = (_ref(prog), tuple([pos[r] for r in refs]), sizes)


def realized(u: UOp) -> None:
  """Before u gets its value: if a memo counts u as computed, start a new epoch (every memo is made again)."""
  if (t := u._tree) is not None and t[3] and t[0] == _epoch[0]: _epoch[0] += 1


def forget() -> None:
  """Drop every tree key's program (with realize's memory cache: a test's fresh process)."""
  _programs.clear()
