"""einsum: Einstein summation lowered to movement ops, one multiply and one REDUCE per contraction.

    parse        "ij,jk->ik" (or NumPy's interleaved sublists) into one label list per operand; "..." becomes
                 labels ".0", ".1", ... aligned at the right, so ellipsis dimensions broadcast as NumPy's do
    diagonals    a label repeated within one operand takes the diagonal of those axes (movement only:
                 extra.diagonal views the (n, n) block as n*n, pads n and reads column 0 of (n, n + 1))
    contraction  left to right: the running product and the next operand are PERMUTEd to a common label
                 order, RESHAPEd and EXPANDed to a common shape, multiplied, and every label that neither a
                 later operand nor the output uses is summed by ONE REDUCE (the first operand alone sums its
                 private labels the same way); 'ij,jk,kl->il' costs two matrix products, not an n^4 loop

Labels of size 1 broadcast against the same label elsewhere, as in NumPy. Implicit output: the ellipsis
dimensions, then the labels used exactly once, in ASCII order (upper case first). The result dtype is NumPy's
result_type of the operands (bool: AND and OR); sums run in that dtype, so integers wrap as NumPy's do, except
float16's, which multiply and sum in float32 and round once (numpy_rules.PRODUCT_ACC).
"""
from __future__ import annotations
import string
from collections import Counter
import numpy as np
from minitensor.backend.dtype import DType, dtypes
from minitensor.backend.uop import Ops, UOp
from minitensor.extra import diagonal
from minitensor.numpy_rules import PRODUCT_ACC
from minitensor.tensor import Tensor, _dtype, asarray

__all__ = ["einsum"]

_ELL = "..."


def _fail(msg: str):
  raise ValueError(f"einsum: {msg}")


def _tokens(term: str, where: str) -> list[str]:
  """A term as letters and at most one "..."; ValueError for anything else."""
  out, k = [], 0
  while k < len(term):
    if term.startswith(_ELL, k): out.append(_ELL); k += 3; continue
    c = term[k]
    if c == ".": _fail(f"subscripts string contains a '.' that is not part of an ellipsis ('...') in {where}")
    if c not in string.ascii_letters: _fail(f"invalid subscript {c!r} in subscripts string, subscripts must be letters")
    out.append(c); k += 1
  if out.count(_ELL) > 1: _fail(f"subscripts string contains more than one ellipsis ('...') in {where}")
  return out


def _from_sublists(args: tuple) -> tuple[str, tuple]:
  """NumPy's interleaved form (op0, sub0, op1, sub1, ..., [sub_out]) as a subscripts string and operands."""
  def term(sub) -> str:
    out = []
    for s in sub:
      if s is Ellipsis: out.append(_ELL); continue
      if not isinstance(s, (int, np.integer)) or isinstance(s, bool) or not 0 <= s < 52:
        _fail(f"subscript {s!r} is not within the valid range [0, 52)")
      out.append(string.ascii_uppercase[s] if s < 26 else string.ascii_lowercase[s - 26])
    return "".join(out)
  n = len(args) // 2
  text = ",".join(term(s) for s in args[1:2 * n:2])
  return (text + "->" + term(args[-1]) if len(args) % 2 else text), args[0:2 * n:2]


def _parse(subscripts: str, shapes: list[tuple[int, ...]]) -> tuple[list[list[str]], list[str]]:
  """(labels of every operand axis, output labels); "..." expanded to right-aligned ".k" labels."""
  s = subscripts.replace(" ", "")
  lhs, arrow, rhs = s.partition("->")
  if "->" in rhs or (not arrow and ("-" in s or ">" in s)):
    _fail(f"subscripts string {subscripts!r} has a stray or repeated '->'")
  terms = lhs.split(",")
  if len(terms) < len(shapes):
    _fail("more operands provided to einstein sum function than specified in the subscripts string")
  if len(terms) > len(shapes):
    _fail("fewer operands provided to einstein sum function than specified in the subscripts string")
  toks = [_tokens(t, f"operand {i}") for i, t in enumerate(terms)]
  ell = []
  for i, (tk, shape) in enumerate(zip(toks, shapes)):
    n = len(tk) - (_ELL in tk)
    if n > len(shape):
      _fail(f"subscripts string contains too many subscripts for operand {i} ({terms[i]!r} for shape {shape})")
    if _ELL not in tk and n < len(shape):
      _fail(f"operand {i} has more dimensions than subscripts given ({terms[i]!r} for shape {shape}), but no '...' "
            "ellipsis provided to broadcast the extra dimensions.")
    ell.append(len(shape) - n)
  E = max(ell, default=0)
  labels = [[x for t in tk for x in ([f".{k}" for k in range(E - e, E)] if t == _ELL else [t])]
            for tk, e in zip(toks, ell)]
  if not arrow:
    once = sorted(c for c, m in Counter(c for tk in toks for c in tk if c != _ELL).items() if m == 1)
    return labels, [f".{k}" for k in range(E)] + once
  out = _tokens(rhs, "the output")
  for c in out:
    if c != _ELL and out.count(c) > 1: _fail(f"subscripts string includes output subscript {c!r} multiple times")
    if c != _ELL and not any(c in tk for tk in toks):
      _fail(f"subscripts string included output subscript {c!r} which never appeared in an input")
  if E and _ELL not in out:
    _fail("output has more dimensions than subscripts given in einstein sum, but no '...' ellipsis provided to "
          "broadcast the extra dimensions.")
  return labels, [x for c in out for x in ([f".{k}" for k in range(E)] if c == _ELL else [c])]


def _distinct(t: Tensor, labels: list[str], i: int) -> tuple[Tensor, list[str]]:
  """t with every repeated label collapsed to its diagonal (the diagonal axis moves to the end)."""
  while (rep := next((c for c, m in Counter(labels).items() if m > 1), None)) is not None:
    p, q = [k for k, c in enumerate(labels) if c == rep][:2]
    if t.shape[p] != t.shape[q]:
      _fail(f"dimensions in operand {i} for collapsing index {rep!r} don't match ({t.shape[p]} != {t.shape[q]})")
    t, labels = diagonal(t, 0, p, q), [c for k, c in enumerate(labels) if k not in (p, q)] + [rep]
  return t, labels


def _combine(items: list[tuple[UOp, list[str]]], keep: set[str], sizes: dict[str, int],
             d: DType) -> tuple[UOp, list[str]]:
  """The product of the items over the union of their labels, summed over the labels not in keep."""
  union = list(dict.fromkeys(c for _, ls in items for c in ls))
  kept, summed = [c for c in union if c in keep], [c for c in union if c not in keep]
  order = kept + summed
  full_shape = tuple(sizes[c] for c in order)
  acc = None
  for u, ls in items:
    mine = sorted(ls, key=order.index)
    u = u.permute(tuple(ls.index(c) for c in mine))
    u = u.reshape(tuple(u.shape[mine.index(c)] if c in mine else 1 for c in order)).expand(full_shape)
    acc = u if acc is None else (acc & u if d.is_bool else acc * u)
  if summed: acc = acc.reduce(Ops.MAX if d.is_bool else Ops.ADD, len(summed))
  return acc, kept


def einsum(subscripts, /, *operands, dtype=None) -> Tensor:
  """Einstein summation over the operands, as NumPy's einsum (without out, order, casting and optimize).

  Parameters
  ----------
  subscripts : str
      Comma-separated labels per operand, optionally "->" and the output labels: letters, and "..." for
      broadcast dimensions. A label repeated in one operand takes a diagonal; a label missing from the output
      is summed over. Without "->" the output is "..." followed by the labels used once, in ASCII order.
      NumPy's interleaved form einsum(op0, [0, 1], op1, [1, 2], [0, 2]) is accepted too (ints 0-51, Ellipsis).
  *operands : array_like
  dtype : data-type, optional
      Compute and return in this dtype; operands must cast to it safely (TypeError otherwise).

  Returns
  -------
  Tensor
      ValueError (NumPy's messages) for malformed subscripts, wrong operand counts or mismatched sizes.
  """
  if not isinstance(subscripts, str): subscripts, operands = _from_sublists((subscripts,) + operands)
  if not operands: _fail("must specify the einstein sum subscripts string and at least one operand")
  ts = [asarray(x) for x in operands]
  labels, out = _parse(subscripts, [t.shape for t in ts])
  d = _dtype(dtype) if dtype is not None else dtypes.from_numpy(np.result_type(*(t.dtype for t in ts)))
  for t in ts:
    if not np.can_cast(t.dtype, d.np, "safe"):
      raise TypeError(f"einsum: cannot cast operand of dtype {t.dtype} to {d.name} safely")
  ops = [_distinct(t, ls, i) for i, (t, ls) in enumerate(zip(ts, labels))]
  sizes: dict[str, int] = {}
  for t, ls in ops:
    for c, n in zip(ls, t.shape):
      if (prev := sizes.get(c, 1)) not in (1, n) and n != 1:
        _fail(f"operands could not be broadcast together: label {c!r} has sizes {prev} and {n} "
              f"(shapes {' '.join(str(t.shape) for t in ts)})")
      sizes[c] = n if prev == 1 else prev
  acc: tuple[UOp, list[str]] | None = None
  work = PRODUCT_ACC.get(d, d)
  for i, (t, ls) in enumerate(ops):
    keep = set(out).union(*(o[1] for o in ops[i + 1:]))
    acc = _combine(([] if acc is None else [acc]) + [(t.uop.cast(work), ls)], keep, sizes, work)
  u, ls = acc
  u = u.permute(tuple(ls.index(c) for c in out))
  return Tensor(u.cast(d))
