"""minitensor.index_helpers against NumPy: index conversions, grids, iterators, bincount, partitions and the
in-place puts (with their aliases and views seeing the writes), values, dtypes and exception types."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt

FEW = settings(max_examples=max(4, settings.default.max_examples // 3))
xp = lambda a: mt if isinstance(a, mt.Tensor) else np


def same(f, *arrays) -> None:
  mtt.assert_matches_numpy(f, *arrays, rtol=0, atol=0)


@given(shape=mtt.shapes(min_dims=1, max_dims=3, min_side=1), data=st.data())
def test_unravel_and_ravel_multi_index(shape, data):
  n = int(np.prod(shape))
  dtype = data.draw(st.sampled_from([np.int64, np.int32, np.uint8, np.int8, np.uint32]))
  lo, hi = -1 if np.dtype(dtype).kind == "i" else 0, min(n, int(np.iinfo(dtype).max))   # -1, n: out of bounds
  flat = data.draw(mtt.arrays(dtype, data.draw(mtt.shapes(max_dims=2)), elements=st.integers(lo, hi)))
  order = data.draw(st.sampled_from("CF"))
  same(lambda i: xp(i).unravel_index(i, shape, order=order), flat)
  coords = np.stack(np.unravel_index(np.clip(flat.astype(np.int64), 0, n - 1), shape))
  same(lambda c: xp(c).ravel_multi_index(tuple(c), shape, order=order), coords)
  for mode in ("wrap", "clip"):
    same(lambda c: xp(c).ravel_multi_index(tuple(c + 3), shape, mode=mode), coords)
  same(lambda c: xp(c).ravel_multi_index(tuple(c + 100), shape), coords)     # ValueError, as NumPy


def test_index_conversions_of_scalars_and_errors():
  for got, want in zip(mt.unravel_index(99, (6, 7, 8)), np.unravel_index(99, (6, 7, 8))):
    assert isinstance(got, mt.Tensor) and got.shape == () and int(got) == want
  for bad in (lambda m: m.unravel_index(336, (6, 7, 8)), lambda m: m.unravel_index(1.5, (3,)),
              lambda m: m.ravel_multi_index(([0, 1], [0, 1, 0]), (2, 2))):
    with pytest.raises(Exception) as e: bad(np)
    with pytest.raises(type(e.value)): bad(mt)


@pytest.mark.parametrize("dims", [(), (0,), (3,), (2, 3), (1, 0, 2), (2, 1, 3)], ids=str)
@pytest.mark.parametrize("dtype", [int, np.int32, np.float32])
def test_indices(dims, dtype):
  got, want = mt.indices(dims, dtype=dtype), np.indices(dims, dtype=dtype)
  assert isinstance(got, mt.Tensor) and (got.dtype, got.shape) == (want.dtype, want.shape)
  np.testing.assert_array_equal(np.asarray(got), want)
  for g, w in zip(mt.indices(dims, dtype=dtype, sparse=True), np.indices(dims, dtype=dtype, sparse=True)):
    assert (g.dtype, g.shape) == (w.dtype, w.shape)
    np.testing.assert_array_equal(np.asarray(g), w)


def test_grids_and_concatenators():
  for key in (np.s_[0:5, 0:3], np.s_[-1:1:5j], np.s_[0:4:2, 1:2:3j, 0:1]):
    np.testing.assert_array_equal(np.asarray(mt.mgrid[key]), np.mgrid[key])
    for g, w in zip(mt.ogrid[key] if isinstance(key, tuple) else [mt.ogrid[key]],
                    np.ogrid[key] if isinstance(key, tuple) else [np.ogrid[key]]):
      assert isinstance(g, mt.Tensor) and (g.dtype, g.shape) == (w.dtype, w.shape)
      np.testing.assert_array_equal(np.asarray(g), w)
  t = mt.arange(3)
  np.testing.assert_array_equal(np.asarray(mt.r_[t, 0, 7:9]), np.r_[np.arange(3), 0, 7:9])
  np.testing.assert_array_equal(np.asarray(mt.c_[t, t * 2]), np.c_[np.arange(3), np.arange(3) * 2])
  assert repr(mt.mgrid) == "minitensor.mgrid"


def test_iterators():
  a = np.arange(6.0).reshape(2, 3)
  t = mt.asarray(a) * 1
  assert list(mt.ndenumerate(t)) == list(np.ndenumerate(a))
  assert [type(v) for _, v in mt.ndenumerate(t)] == [np.float64] * 6
  assert list(mt.ndindex(2, 3)) == list(np.ndindex(2, 3)) and list(mt.ndindex((0, 2))) == []
  A, B = mt.arange(3).reshape(3, 1), mt.arange(3).reshape(1, 3)
  it = mt.nditer([A, B, None])
  for x, y, z in it: z[...] = x + y
  np.testing.assert_array_equal(it.operands[2], np.arange(3).reshape(3, 1) + np.arange(3))
  assert [int(v) for v in mt.nditer(t.astype(int))] == list(range(6))
  with pytest.raises(ValueError): mt.nditer(t, op_flags=["readwrite"])          # a Tensor's values are read-only


@given(n=st.integers(0, 30), data=st.data())
def test_bincount(n, data):
  x = data.draw(mtt.arrays(np.int64, n, elements=st.integers(0, 9)))
  w = data.draw(mtt.arrays(data.draw(st.sampled_from([np.float32, np.float64, np.int32, np.bool_])), n))
  minlength = data.draw(st.integers(0, 12))
  same(lambda a: xp(a).bincount(a, minlength=minlength), x)
  same(lambda a, b: xp(a).bincount(a, weights=b, minlength=minlength), x, w)


def test_bincount_errors_as_numpy():
  for x in (np.array([-1, 2]), np.array([1.5]), np.zeros((2, 2), np.int64), np.array([[1]])):
    same(lambda a: xp(a).bincount(a), x)
  same(lambda a: xp(a).bincount(a, weights=np.ones(3)), np.array([1, 2]))


@given(data=st.data())
def test_partitions(data):
  dtype = data.draw(mtt.dtypes())
  shape = data.draw(mtt.shapes(min_dims=1, max_dims=3, min_side=1))
  a = data.draw(mtt.arrays(dtype, shape))
  axis = data.draw(st.sampled_from([None, -1, 0]))
  n = a.size if axis is None else a.shape[axis]
  kth = data.draw(st.one_of(st.integers(-n, n - 1), st.lists(st.integers(0, n - 1), min_size=1, max_size=3)))
  same(lambda x: xp(x).partition(x, kth, axis=axis), a)
  same(lambda x: xp(x).argpartition(x, kth, axis=axis), a)
  same(lambda x: xp(x).partition(x, n, axis=axis), a)           # kth out of bounds: ValueError


def _aliased(a: np.ndarray):
  """A Tensor root, a view of it and an alias, to check that a write in place reaches all of them."""
  t = mt.asarray(a)
  return t, t[None], t


@FEW
@given(data=st.data())
def test_put(data):
  dtype = data.draw(mtt.dtypes())
  a = data.draw(mtt.arrays(dtype, data.draw(mtt.shapes(min_dims=0, max_dims=2, min_side=1))))
  ind = data.draw(st.lists(st.integers(-2 * a.size, 2 * a.size), max_size=6))
  v = data.draw(mtt.arrays(dtype, data.draw(st.integers(0, 4))))
  mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
  want = a.copy()
  try: np.put(want, ind, v, mode=mode)
  except IndexError:
    with pytest.raises(IndexError): mt.put(mt.asarray(a), ind, v, mode=mode)
    return
  t, view, alias = _aliased(a)
  assert mt.put(t, mt.asarray(np.array(ind, np.int64)), mt.asarray(v), mode=mode) is None
  for g in (t, view[0], alias): np.testing.assert_array_equal(np.asarray(g), want)


@FEW
@given(data=st.data())
def test_place_and_putmask(data):
  dtype = data.draw(mtt.dtypes())
  a = data.draw(mtt.arrays(dtype, data.draw(mtt.shapes(min_dims=0, max_dims=2))))
  mask = data.draw(mtt.arrays(np.bool_, a.shape))
  v = data.draw(mtt.arrays(data.draw(mtt.dtypes()), data.draw(st.integers(0, 4))))
  for np_f, mt_f in ((np.place, mt.place), (np.putmask, mt.putmask)):
    want = a.copy()
    try: np_f(want, mask, v)
    except Exception as e:
      with pytest.raises(type(e)): mt_f(mt.asarray(a), mask, v)
      continue
    t, view, alias = _aliased(a)
    mt_f(t, mt.asarray(mask), mt.asarray(v))
    for g in (t, view[0], alias):
      assert g.dtype == want.dtype
      np.testing.assert_array_equal(np.asarray(g), want)


def test_puts_into_views_ndarrays_and_errors():
  t = mt.zeros((3, 4))
  row = t[1]
  mt.put(row, [0, -1], [5.0, 6.0])                            # into a view: its base sees it
  mt.putmask(t.T, t.T == 0, mt.arange(12.0).reshape(4, 3))
  want = np.zeros((3, 4)); np.put(want[1], [0, -1], [5.0, 6.0]); np.putmask(want.T, want.T == 0, np.arange(12.0))
  np.testing.assert_array_equal(np.asarray(t), want)
  a = np.zeros(5)
  mt.put(a, [1, 2], mt.asarray([7.0, 8.0])); mt.place(a, a == 0, [1.0]); mt.putmask(a, a == 1, [3.0])
  b = np.zeros(5); np.put(b, [1, 2], [7.0, 8.0]); np.place(b, b == 0, [1.0]); np.putmask(b, b == 1, [3.0])
  np.testing.assert_array_equal(a, b)
  for f, exc in ((lambda m: m.put([1, 2], [0], 1), TypeError), (lambda m: m.put(m.zeros(3), [3], 1), IndexError),
                 (lambda m: m.put(m.zeros(3), [0], 1, mode="bad"), ValueError),
                 (lambda m: m.place(m.zeros(3), [True, False], [1]), ValueError),
                 (lambda m: m.place(m.zeros(3), [True, False, True], []), ValueError),
                 (lambda m: m.putmask(m.zeros(3), [True], [1]), ValueError)):
    for m in (np, mt):
      with pytest.raises(exc): f(m)


def test_numpy_names_dispatch_here():
  t = mt.asarray([3, 1, 2, 3])
  for f in (lambda m: m.bincount(t), lambda m: m.unravel_index(t, (2, 2))[1], lambda m: m.argpartition(t, 1),
            lambda m: m.ravel_multi_index((t, t), (4, 4)), lambda m: m.partition(t, -1)):
    got, want = f(np), f(mt)
    assert isinstance(got, mt.Tensor) and np.array_equal(np.asarray(got), np.asarray(want))
  z = mt.zeros(4)
  np.put(z, [1], 5); np.putmask(z, z == 0, 2.0); np.place(z, z == 2, [7])
  assert np.asarray(z).tolist() == [7, 5, 7, 7]
