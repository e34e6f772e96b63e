"""pytrees: nested tuples, lists, namedtuples and dicts of values, flattened to a list of leaves and a spec
(the arguments and results of mt.grad, mt.vjp and mt.jit, as in JAX; None is an empty subtree).

    spec = flatten(tree, leaves)      appends tree's leaves to the list `leaves`, returns its structure
    unflatten(spec, iter(values))     the tree of that structure with the values as its leaves

A spec is a tuple, hashable (jit keys its traces on it).
"""
from __future__ import annotations
from typing import Any

__all__ = ["flatten", "unflatten"]


def flatten(tree, leaves: list) -> Any:
  """The structure of tree (tuples, lists, namedtuples, dicts; None is an empty subtree, as in JAX); its leaves
  appended to `leaves`."""
  if tree is None: return (None,)
  if isinstance(tree, (tuple, list)): return (type(tree), tuple([flatten(t, leaves) for t in tree]))
  if isinstance(tree, dict): return (dict, tuple(tree), tuple([flatten(tree[k], leaves) for k in tree]))
  leaves.append(tree)
  return None


def unflatten(spec, it) -> Any:
  if spec is None: return next(it)
  if spec[0] is None: return None
  if spec[0] is dict: return {k: unflatten(s, it) for k, s in zip(spec[1], spec[2])}
  vals = [unflatten(s, it) for s in spec[1]]
  return spec[0](*vals) if hasattr(spec[0], "_fields") else spec[0](vals)
