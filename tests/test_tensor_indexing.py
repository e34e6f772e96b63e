"""Indexing and assignment against NumPy: random shapes (0-d, size-0 and size-1 axes) and random index tuples
mixing ints, slices (any start/stop/step), None, Ellipsis, integer arrays and boolean masks."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend.runtime import stats

DTYPES = [np.float32, np.int64, np.bool_]


def data(shape, dtype, seed=0) -> np.ndarray:
  """Random values of dtype; floats include -0.0, NaN and inf so that exactness is checked bit for bit."""
  r = np.random.default_rng(seed)
  if dtype == np.bool_: return np.asarray(r.random(shape) < 0.5)
  if dtype == np.int64: return np.asarray(r.integers(-50, 50, shape), np.int64)
  a = r.standard_normal(shape).astype(dtype)
  a.flat[::7] = -0.0
  a.flat[3::11] = np.nan
  a.flat[5::13] = np.inf
  return a


def same(got: np.ndarray, want: np.ndarray) -> None:
  assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
  assert got.tobytes() == np.ascontiguousarray(want).tobytes(), (got, want)


def lazy(a: np.ndarray) -> mt.Tensor:
  """a as an unrealized tensor (a WHERE over its buffer), so indexing it goes through a compiled kernel."""
  t = mt.asarray(a)
  return mt.where(True, t, t)


def realize_all(ts: list) -> list[np.ndarray]:
  """The values of ts, the non-empty ones realized together (one compile). Empty ones are read alone: the
  kernelizer cannot yet schedule a graph with no elements (`(mt.zeros((0, 3)) + 1).numpy()` raises)."""
  vals = iter(mt.realize(*[t for t in ts if t.size]))
  return [next(vals) if t.size else t.numpy() for t in ts]


def kernel_path() -> tuple[int, int, int]:
  """Counters that move whenever realize takes the compiled path (a compile, or a hit of the graph cache:
  a kernel compiled earlier, in memory or on disk, would hide a compile from `stats.compiles` alone)."""
  return stats.compiles, stats.graph_hits, stats.graph_misses


def outcome(f):
  """f()'s value, or the type of the exception it raised."""
  try: return f()
  except Exception as e: return type(e)


# ---------------------------------------------------------------------- strategies
shapes = st.lists(st.sampled_from([0, 1, 2, 3, 3, 4, 5, 5]), min_size=0, max_size=4).map(tuple)


@st.composite
def slices(draw, n: int) -> slice:
  bound = st.none() | st.integers(-n - 2, n + 2)
  return slice(draw(bound), draw(bound), draw(st.none() | st.sampled_from([1, 2, 3, -1, -2, -3, 5])))


@st.composite
def consuming(draw, dims: list[int], advanced: bool, arr_shape: tuple) -> list:
  """Entries that index exactly the axes of sizes `dims`, in order (a mask may take one to three axes)."""
  out, k = [], 0
  while k < len(dims):
    n = dims[k]
    kinds = ["slice", "slice"] + (["int"] if n else []) + (["arr", "mask"] if advanced else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "slice": out.append(draw(slices(n)))
    elif kind == "int": out.append(draw(st.integers(-n, n - 1)))
    elif kind == "arr":
      if not n: out.append(np.zeros((0,), np.int64)); k += 1; continue
      shape = tuple(draw(st.sampled_from([1, s])) for s in arr_shape[draw(st.integers(0, len(arr_shape))):])
      vals = np.random.default_rng(draw(st.integers(0, 99))).integers(-n, n, shape)
      out.append(draw(st.sampled_from([lambda v: v, lambda v: v.tolist(), mt.asarray]))(vals) if shape else int(vals))
    else:
      w = draw(st.integers(1, min(3, len(dims) - k)))
      m = np.random.default_rng(draw(st.integers(0, 99))).random(tuple(dims[k:k + w])) < 0.5
      out.append(draw(st.sampled_from([lambda v: v, mt.asarray]))(m)); k += w; continue
    k += 1
  return out


@st.composite
def indices(draw, shape: tuple, advanced: bool = True):
  """A random index for `shape`: a prefix (and, after an Ellipsis, a suffix) of consumed axes, with None and
  (when advanced) 0-d booleans sprinkled in; a bare entry or a tuple."""
  nd = len(shape)
  p = draw(st.integers(0, nd))
  q = draw(st.integers(0, nd - p)) if draw(st.booleans()) else None
  arr_shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
  items = draw(consuming(list(shape[:p]), advanced, arr_shape))
  if q is not None: items += [Ellipsis] + draw(consuming(list(shape[nd - q:]), advanced, arr_shape))
  for _ in range(draw(st.integers(0, 2))):
    items.insert(draw(st.integers(0, len(items))),
                 draw(st.sampled_from([None, None, True, False] if advanced else [None])))
  return items[0] if len(items) == 1 and draw(st.booleans()) else tuple(items)


def to_numpy(idx):
  """The same index with Tensors replaced by ndarrays (the oracle's input)."""
  conv = lambda x: np.asarray(x) if isinstance(x, mt.Tensor) else x
  return tuple(conv(x) for x in idx) if isinstance(idx, tuple) else conv(idx)


def region_value(draw, region: tuple, dtype):
  """A value assignable to a region: a Python scalar, or an array broadcasting to it (maybe with leading 1s).
  A 0-d region gets scalars only: NumPy's single-element assignment of a sequence depends on the dtype
  (`b[0] = [-0.0]` stores True into a bool array; a float array raises ValueError, an int array TypeError)."""
  if not region or draw(st.booleans()):
    return draw(st.sampled_from([True, 0, 3, -7, 2.5, -0.0] if dtype != np.bool_ else [True, False, 1, 0.5]))
  shape = tuple(draw(st.sampled_from([1, s])) for s in region[draw(st.integers(0, len(region))):])
  shape = (1,) * draw(st.integers(0, 1)) + shape
  vals = data(shape, draw(st.sampled_from(DTYPES)) if dtype != np.int64 else np.int64, seed=draw(st.integers(0, 9)))
  return draw(st.sampled_from([lambda v: v, mt.asarray, lambda v: v.tolist()]))(vals)


# ---------------------------------------------------------------------- getitem
@given(shapes, st.data())
def test_getitem_basic_views(shape, d):
  """Basic indexing of a realized tensor (answered by NumPy views or, with padding, a kernel)."""
  dtype = d.draw(st.sampled_from(DTYPES))
  a = data(shape, dtype)
  idx = d.draw(indices(shape, advanced=False))
  want = outcome(lambda: a[idx])
  got = outcome(lambda: mt.asarray(a)[idx])
  if isinstance(want, type): assert got is want; return
  same(got.numpy(), want)


@given(shapes, st.data())
def test_getitem_random(shape, d):
  """Basic and advanced indexing of an unrealized tensor: three random indices realized in one kernel batch."""
  dtype = d.draw(st.sampled_from(DTYPES))
  a = data(shape, dtype)
  t = lazy(a)
  got, want = [], []
  for _ in range(3):
    idx = d.draw(indices(shape))
    w = outcome(lambda: a[to_numpy(idx)])
    g = outcome(lambda: t[idx])
    if isinstance(w, type): assert g is w, (idx, g, w); continue
    got.append(g); want.append(w)
  for g, w in zip(realize_all(got), want): same(g, w)


@pytest.mark.parametrize("idx", [([0, 2],), ([0, 2], [1, 3]), (slice(None), [0, 2], [1, 3]),
                                 ([0, 2], slice(None), [1, 3]),
                                 (0, slice(None), [0, 1]), (slice(None), 0, [0, 1]), (None, [0, 1], None, [1, 0]),
                                 (slice(None), True, [0, 1]), (np.array(0), slice(None), [0, 1]),
                                 (1, Ellipsis, [[0], [4]]),
                                 ([],), (True,), (False, 0), (np.True_, np.array(1)), (Ellipsis, [-1, -5]),
                                 ([[0, 1], [2, 2]], 3),
                                 (slice(None), [0, 1], Ellipsis, [0, 1]), (slice(None), 0, ..., [0, 1])])
def test_getitem_advanced_placement(idx):
  """NumPy's rule for where the broadcast index axes go (adjacent vs separated by a slice or None)."""
  a = data((3, 4, 5), np.float32)
  same(lazy(a)[idx].numpy(), a[idx])


def test_getitem_tensor_indices():
  a = data((4, 5), np.int64)
  t = mt.asarray(a)
  same(t[t > 3].numpy(), a[a > 3])
  same(t[mt.asarray([3, 0, 3])].numpy(), a[[3, 0, 3]])
  same(t[mt.asarray(2), 1:].numpy(), a[2, 1:])
  same(t[(t > 0)[:, 0]].numpy(), a[a[:, 0] > 0])


@pytest.mark.parametrize("idx", [lambda m2, m3: m2, lambda m2, m3: m3, lambda m2, m3: (slice(None), m2[0]),
                                 lambda m2, m3: (m2, [2]), lambda m2, m3: (m2, 1), lambda m2, m3: (1, m2[0]),
                                 lambda m2, m3: (True, m2), lambda m2, m3: (None, m2), lambda m2, m3: (..., m3[0]),
                                 lambda m2, m3: (m2, slice(None, None, -2)), lambda m2, m3: (m2, [[0], [2]]),
                                 lambda m2, m3: (slice(None), m3[0]), lambda m2, m3: (m2[:, 0], [1], [[0], [2]])])
@pytest.mark.parametrize("mask", [lambda v: v, mt.asarray])
def test_masks_of_several_axes_read_and_write_as_numpy(idx, mask):
  """A mask of several axes indexes those axes merged into one (its flat positions, one index array) where its
  axes are known, else per axis: both give NumPy's elements in NumPy's order, read and written."""
  a = np.arange(60.0).reshape(4, 5, 3)
  r = np.random.default_rng(5)
  m2, m3 = r.random((4, 5)) < 0.5, r.random((4, 5, 3)) < 0.5
  want_idx = idx(m2, m3)
  got_idx = idx(mask(m2), mask(m3))
  same(lazy(a)[got_idx].numpy(), a[want_idx])
  for t in (mt.asarray(a.copy()), lazy(a)):
    w = a.copy()
    w[want_idx] = -w[want_idx] - 1
    t[got_idx] = -t[got_idx] - 1
    same(t.numpy(), w)


def test_getitem_compiles_nothing_for_realized_reads():
  x = mt.asarray(np.arange(24, dtype=np.float32).reshape(4, 6)).realize()
  v = mt.asarray(np.arange(10)).realize()
  c0 = kernel_path()
  assert int(v[3]) == 3 and int(v[-1]) == 9 and x[1, 2].item() == 8.0 and \
    x.tolist() == np.arange(24).reshape(4, 6).tolist()
  assert v[::2].tolist() == list(range(0, 10, 2)) and v[1::3].tolist() == [1, 4, 7] and v[8::-3].tolist() == [8, 5, 2]
  assert x[::-1, ::2].tolist() == np.arange(24).reshape(4, 6)[::-1, ::2].tolist() and \
    x[None, 2, ..., 1:4].shape == (1, 3)
  assert [float(r[0]) for r in x] == [0.0, 6.0, 12.0, 18.0]
  assert kernel_path() == c0


def test_getitem_padded_stride_compiles_nothing():
  v = mt.asarray(np.arange(9)).realize()
  c0 = kernel_path()
  assert v[::2].tolist() == [0, 2, 4, 6, 8]
  assert kernel_path() == c0


BAD = [5, -4, (0, 4), (slice(None), [0, 4]), (slice(None), [-5]), 1.0, "x", (0, 0, 0), (Ellipsis, Ellipsis),
       np.array([1.0]),
       [1.0], [0, slice(None)], np.ones((2, 2), bool), np.ones(4, bool), ([0, 1], [0, 1, 2]), (slice(0, 2, 0),),
       (slice(1.5),),
       ([True, False, True], [[True]]), [[0, 1], [0]]]


@pytest.mark.parametrize("idx", BAD, ids=repr)
def test_bad_index_raises_like_numpy(idx):
  a = np.zeros((3, 4))
  want = outcome(lambda: a[idx])
  assert isinstance(want, type)
  assert outcome(lambda: lazy(a)[idx]) is want
  def assign(): t = mt.asarray(a); t[idx] = 1.0
  assert outcome(assign) is want


def test_index_error_messages():
  t = mt.zeros((3, 4))
  with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"): t[5]
  with pytest.raises(IndexError, match="index -5 is out of bounds for axis 1 with size 4"): t[:, [0, -5]]
  with pytest.raises(IndexError, match="too many indices for array: array is 2-dimensional, but 3 were indexed"):
    t[0, 0, 0]
  with pytest.raises(IndexError, match="single ellipsis"): t[..., ...]
  with pytest.raises(IndexError, match="only integers, slices"): t[1.0]
  with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 0; size of axis is 3"):
    t[[True]]


# ---------------------------------------------------------------------- setitem
@given(shapes, st.data())
def test_setitem_random(shape, d):
  """Assignment through random indices (basic and advanced) with broadcast values equals NumPy's in place."""
  dtype = d.draw(st.sampled_from(DTYPES))
  a = data(shape, dtype)
  results, want = [], []
  for advanced in (False, True):
    idx = d.draw(indices(shape, advanced))
    try: region = a[to_numpy(idx)].shape
    except IndexError: continue
    value = region_value(d.draw, region, dtype)
    c = a.copy()
    w = outcome(lambda: c.__setitem__(to_numpy(idx), np.asarray(value) if isinstance(value, mt.Tensor) else value))
    t = mt.asarray(a)
    g = outcome(lambda: t.__setitem__(idx, value))
    if isinstance(w, type): assert g is w, (idx, value, g, w); continue
    results.append(t); want.append(c)
  for g, w in zip(realize_all(results), want): same(g, w)


ALL_SLICES = [slice(b, e, s) for b in (None, 0, 2, -2, 9) for e in (None, 1, 5, -1, -9)
              for s in (None, 2, 3, -1, -2, -3)]


def test_getitem_every_slice_of_an_axis():
  """Every step from -3 to 3 with in-range, negative and out-of-range bounds, from one lazy tensor."""
  a = data((7, 2), np.float32)
  got = [lazy(a)[sl] for sl in ALL_SLICES]
  for sl, g in zip(ALL_SLICES, realize_all(got)): same(g, a[sl])


def test_setitem_every_slice_of_an_axis():
  """Row k of a (k, 7) tensor assigned through slice k: one graph of nested selects, one kernel."""
  a = data((len(ALL_SLICES), 7), np.int64)
  t, c = mt.asarray(a), a.copy()
  for k, sl in enumerate(ALL_SLICES):
    vals = np.arange(100, 100 + len(range(*sl.indices(7))))
    t[k, sl] = vals
    c[k, sl] = vals
  same(t.numpy(), c)


def test_setitem_keeps_earlier_results_and_views_see_it():
  a = data((4, 5), np.float32)
  t = mt.asarray(a)
  c = a.copy()
  view, cview, derived, element = t[1:3], c[1:3], t * 2, t[1, 0]
  t[1:3, ::2] = 7.0
  t[[0, 0, 3], [1, 1, 4]] = mt.asarray(np.array([1.0, 2.0, 3.0], np.float32))
  c[1:3, ::2] = 7.0; c[[0, 0, 3], [1, 1, 4]] = [1.0, 2.0, 3.0]
  same(t.numpy(), c)
  same(view.numpy(), cview)                  # a view, as NumPy's
  same(derived.numpy(), a * 2)               # computed before: its values of then
  same(element.numpy(), a[1, 0])             # an element is a scalar in NumPy, not a view


def test_setitem_exact_values_and_casts():
  a = np.array([1.0, np.nan, -0.0, 4.0], np.float32)
  t = mt.asarray(a)
  t[::2] = mt.asarray(np.array([-0.0, np.nan], np.float32))
  c = a.copy(); c[::2] = [-0.0, np.nan]
  same(t.numpy(), c)
  i = mt.asarray(np.arange(4))
  i[...] = 2.7
  i[1] = -2.7
  i[i > 100] = 0
  same(i.numpy(), np.array([2, -2, 2, 2]))
  b = mt.zeros(3, dtype=bool)
  b[1] = 0.5
  same(b.numpy(), np.array([False, True, False]))
  t2 = mt.asarray(np.zeros(3, np.int8))
  t2[:] = mt.asarray(np.array([1.9, -1.9, 100.5]))
  same(t2.numpy(), np.array([1, -1, 100], np.int8))


def test_setitem_value_errors():
  t = mt.zeros(3, dtype=np.int8)
  with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(2,\) into shape \(3,\)"):
    t[:] = np.ones(2)
  with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(3,1\) into shape \(3,\)"):
    t[:] = np.ones((3, 1))
  with pytest.raises(ValueError,
                     match=r"value array of shape \(3,\) could not be broadcast to indexing result of shape \(2,\)"):
    t[[0, 1]] = np.ones(3)
  with pytest.raises(TypeError, match="0 or 1-dimensional input"): t[mt.asarray([True, False, True])] = np.ones((1, 1))
  f = mt.zeros((2, 3))
  with pytest.raises(ValueError, match="sequence"): f[0, 1] = np.ones(1)
  with pytest.raises(ValueError, match="sequence"): f[0, mt.asarray(1)] = mt.ones(1)
  f[0, 1, ...] = np.ones((1, 1))      # a 0-d region through a view: the value broadcasts
  with pytest.raises(ValueError): f[0, 1, ...] = [[1.0]]       # a nested sequence is converted to at most 0 axes
  with pytest.raises(OverflowError): t[0] = 300
  with pytest.raises(ValueError): t[0] = float("nan")
  t[:] = np.ones((1, 1, 3))          # leading size-1 axes of the value are dropped, as NumPy
  same(t.numpy(), np.ones(3, np.int8))


@given(st.lists(st.booleans(), min_size=1, max_size=24).flatmap(
  lambda v: st.sampled_from([s for s in ((len(v),), (2, len(v) // 2), (len(v) // 3, 3)) if np.prod(s) == len(v)])
  .map(lambda s: np.array(v).reshape(s))), st.booleans())
def test_a_mask_counts_first_and_finds_its_positions_as_numpy(values, everywhere):
  """masks.Mask: its count, flat positions and np.nonzero indices as NumPy's, for masks True everywhere too (their
  positions are an arange made only when asked for); frozen positions are read-only."""
  from minitensor.masks import Mask
  if everywhere: values = np.ones_like(values)
  m = Mask(values.shape, values, frozen=True)
  assert m.count == np.count_nonzero(values)
  np.testing.assert_array_equal(m.flat, np.flatnonzero(values))
  assert m.flat.dtype == np.int64 and not m.flat.flags.writeable
  for got, want in zip(m.indices, np.nonzero(values)): np.testing.assert_array_equal(got, want)
  t = mt.asarray(np.arange(values.size, dtype=np.float64).reshape(values.shape))
  np.testing.assert_array_equal(np.asarray(t[mt.asarray(values)]), np.asarray(t)[values])
