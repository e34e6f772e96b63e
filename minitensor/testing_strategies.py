"""Hypothesis strategies for minitensor's inputs: shapes, dtypes, scalar values, arrays, broadcastable shapes and
`axis` arguments; the first part of `minitensor.testing`, which re-exports every name here (import that module).

Every strategy draws only inputs that NumPy accepts, so a test can hand them to NumPy and minitensor alike: shapes
of non-negative sizes (size-0 and size-1 axes by default), the dtypes minitensor supports (DTYPES), values of
exactly the drawn dtype with its edge cases (NaN, +-inf, -0.0, subnormals, integer extremes) drawn often, and
axes in range for the given number of axes. Needs hypothesis.
"""
from __future__ import annotations
import math
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

__all__ = ["DTYPES", "shapes", "dtypes", "elements", "arrays", "broadcastable_shapes", "axes"]

DTYPES: tuple[np.dtype, ...] = tuple(np.dtype(d)
                                     for d in ("bool", "int8", "uint8", "int32", "int64", "float32", "float64"))


def shapes(min_dims: int = 0, max_dims: int = 4, min_side: int = 0,
           max_side: int = 5) -> st.SearchStrategy[tuple[int, ...]]:
  """Array shapes.

  Parameters
  ----------
  min_dims, max_dims : int
      Bounds of the number of axes (inclusive).
  min_side, max_side : int
      Bounds of each axis' size (inclusive); the default includes size-0 and size-1 axes.

  Returns
  -------
  SearchStrategy of tuple of int
  """
  return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


def dtypes(include_float16: bool = False) -> st.SearchStrategy[np.dtype]:
  """The dtypes minitensor supports: bool, int8, uint8, int32, int64, float32, float64 (and float16 on request).

  Parameters
  ----------
  include_float16 : bool, default False

  Returns
  -------
  SearchStrategy of numpy.dtype
  """
  return st.sampled_from(DTYPES + ((np.dtype("float16"),) if include_float16 else ()))


def elements(dtype) -> st.SearchStrategy:
  """Scalar values of dtype, with its edge cases drawn often.

  Floats: NaN, +-inf, -0.0, 0.0, the smallest subnormal, the largest finite value, and any other value.
  Integers: the minimum, the maximum, 0, 1 and -1 (when signed), and any other value. Bool: True, False.
  Complex: each part a float of half the size, as above (so NaN and inf parts beside any other).

  Parameters
  ----------
  dtype : data-type

  Returns
  -------
  SearchStrategy of Python scalars
  """
  d = np.dtype(dtype)
  if d.kind == "b": return st.booleans()
  if d.kind in "iu":
    info = np.iinfo(d)
    edges = sorted({int(info.min), int(info.max), 0, 1, int(info.min) + 1, int(info.max) - 1}
                   | ({-1} if d.kind == "i" else set()))
    return st.one_of(st.sampled_from(edges), st.integers(int(info.min), int(info.max)))
  if d.kind == "f":
    fi = np.finfo(d)
    edges = [math.nan, math.inf, -math.inf, -0.0, 0.0, float(fi.smallest_subnormal), float(fi.max), -float(fi.max),
             1.0, -1.0]
    return st.one_of(st.sampled_from(edges), st.floats(width=8 * d.itemsize))
  if d.kind == "c":
    part = elements(np.dtype(f"f{d.itemsize // 2}"))
    return st.builds(complex, part, part)
  raise TypeError(f"elements: unsupported dtype {d}")


_elements = elements       # arrays() takes a parameter of that name


def arrays(dtype, shape, elements: st.SearchStrategy | None = None) -> st.SearchStrategy[np.ndarray]:
  """ndarrays of the given dtype and shape with dtype-aware values.

  Parameters
  ----------
  dtype : data-type or SearchStrategy of data-types
  shape : int, tuple of int, or SearchStrategy of tuples
  elements : SearchStrategy, optional
      The values; default `minitensor.testing.elements(dtype)` (NaN, inf and -0.0 for floats, the extremes for
      integers, often).

  Returns
  -------
  SearchStrategy of numpy.ndarray
      C-contiguous, writable, native byte order.
  """
  dts = dtype if isinstance(dtype, st.SearchStrategy) else st.just(np.dtype(dtype))
  return dts.flatmap(lambda d: hnp.arrays(d, shape, elements=elements if elements is not None else _elements(d)))


def broadcastable_shapes(shape: tuple[int, ...], min_dims: int = 0, max_dims: int | None = None, min_side: int = 0,
                         max_side: int = 5) -> st.SearchStrategy[tuple[int, ...]]:
  """Shapes that broadcast together with `shape` (NumPy's rules: aligned on the right, sizes equal or 1).

  Parameters
  ----------
  shape : tuple of int
  min_dims, max_dims : int
      Bounds of the number of axes; max_dims defaults to max(len(shape), min_dims) + 2.
  min_side, max_side : int
      Bounds of the sizes of axes that `shape` does not fix.

  Returns
  -------
  SearchStrategy of tuple of int
  """
  if max_dims is None: max_dims = max(len(shape), min_dims) + 2
  return hnp.broadcastable_shapes(tuple(shape), min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                                  max_side=max_side)


def axes(ndim: int, min_size: int = 0, max_size: int | None = None, allow_none: bool = True, allow_int: bool = True,
         allow_negative: bool = True) -> st.SearchStrategy:
  """An `axis` argument for an array of ndim axes.

  Parameters
  ----------
  ndim : int
  min_size, max_size : int
      Bounds of the length of a tuple of axes (max_size defaults to ndim).
  allow_none : bool
      Whether None (every axis) may be drawn.
  allow_int : bool
      Whether a single int may be drawn (never for ndim 0).
  allow_negative : bool
      Whether axes may be written negative (-1 is the last axis).

  Returns
  -------
  SearchStrategy of None, int or tuple of int
      Tuples hold distinct axes (distinct after normalization), in any order.
  """
  hi = ndim if max_size is None else min(max_size, ndim)
  def spell(a: int) -> st.SearchStrategy[int]: return st.sampled_from([a, a - ndim]) if allow_negative else st.just(a)
  tuples = st.lists(st.integers(0, ndim - 1), min_size=min_size, max_size=hi, unique=True) if ndim else st.just([])
  options = [tuples.flatmap(lambda xs: st.tuples(*map(spell, xs)))]
  if allow_int and ndim: options.append(st.integers(0, ndim - 1).flatmap(spell))
  if allow_none: options.append(st.none())
  return st.one_of(*options)

