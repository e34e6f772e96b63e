"""Tensor's layout attributes (minitensor/ndarray_attrs.py) against NumPy's for the equivalent arrays: strides, flags,
base, flat and view(dtype)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
from minitensor.testing import arrays, shapes

VIEWS = [lambda x: x, lambda x: x[None], lambda x: x[:, None, 1:], lambda x: x.T, lambda x: x[::2], lambda x: x[1:2],
         lambda x: x[:, :1], lambda x: x[::-1], lambda x: x[1], lambda x: x.reshape(2, 6), lambda x: x.T[1:, ::2],
         lambda x: x.swapaxes(0, 1)[::3], lambda x: x[..., 2], lambda x: x[:0], lambda x: np.transpose(x)[None, 2:]]


@pytest.mark.parametrize("k", range(len(VIEWS)))
def test_strides_flags_base_as_numpy(k):
  a = np.array(np.arange(12, dtype=np.float32).reshape(3, 4))      # owns its data, as a Tensor root does
  t = mt.asarray(a)
  g, w = VIEWS[k](t), VIEWS[k](a)
  assert g.strides == w.strides and g.itemsize == w.itemsize and g.nbytes == w.nbytes
  for f in ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED", "WRITEBACKIFCOPY"):
    assert g.flags[f] == w.flags[f], f
  assert g.flags.c_contiguous == w.flags.c_contiguous and g.flags["C"] == w.flags["C"]
  assert (g.base is None) == (w.base is None) and (g.base is None or g.base is t)


def test_readonly_views_and_complex_parts():
  a = np.arange(6.0).reshape(2, 3)
  t = mt.asarray(a)
  for g, w in ((mt.broadcast_to(t[0], (4, 3)), np.broadcast_to(a[0], (4, 3))), (t.diagonal(), a.diagonal())):
    assert g.strides == w.strides and g.flags.writeable == w.flags.writeable is False
  z = np.arange(6, dtype=np.complex64).reshape(2, 3)
  assert mt.asarray(z).real.strides == z.real.strides and mt.asarray(z).imag[1:].strides == z.imag[1:].strides
  with pytest.raises(KeyError): t.flags["BOGUS"]


@given(a=arrays(dtype=st.sampled_from([np.int32, np.float64, np.uint8, np.bool_]), shape=shapes(0, 3, 0, 4)),
       data=st.data())
def test_flat_reads_and_writes_as_numpy(a, data):
  t, w = mt.asarray(a), a.copy()
  assert len(t.flat) == len(w.flat)
  np.testing.assert_array_equal(np.array(list(t.flat)), np.array(list(w.flat)))
  if a.size == 0: return
  i = data.draw(st.integers(-a.size, a.size - 1))
  k = data.draw(st.sampled_from([slice(None, None, 2), [0, a.size - 1], slice(1, None), i]))
  np.testing.assert_array_equal(np.asarray(t.flat[k]), w.flat[k])
  v = data.draw(st.sampled_from([[1, 0], [1], 0]))
  try: w.flat[k] = v
  except ValueError as e:                 # NumPy: a sequence into one element of a 0-d array
    with pytest.raises(type(e)): t.flat[k] = v
    return
  t.flat[k] = v
  np.testing.assert_array_equal(np.asarray(t), w)


@given(a=arrays(dtype=st.sampled_from([np.int8, np.uint8, np.int32, np.float32, np.int64, np.float64, np.complex128]),
                shape=shapes(0, 3, 0, 4)),
       d=st.sampled_from([np.int8, np.uint8, np.int32, np.float32, np.int64, np.float64, np.complex128]),
       transpose=st.booleans())
def test_view_dtype_as_numpy(a, d, transpose):
  t, w = mt.asarray(a), a
  if transpose: t, w = t.T, w.T
  try: want = w.view(d)
  except ValueError as e:
    with pytest.raises(type(e)): t.view(d)
    return
  got = t.view(d)
  assert np.asarray(got).dtype == want.dtype and got.shape == want.shape
  assert np.asarray(got).tobytes() == want.tobytes()
  assert t.view() is not t and t.view().base is (t if t.base is None else t.base)
  np.testing.assert_array_equal(np.asarray(t.view()), w)


def test_flags_writeable_false_makes_a_tensor_read_only():
  t = mt.zeros(4)
  v = t[1:]
  t.flags.writeable = False
  assert not t.flags.writeable and not t[::2].flags.writeable
  for write in (lambda: t.__setitem__(0, 1.0), lambda: v.__setitem__(0, 1.0), lambda: t.__iadd__(1), lambda: t.fill(2)):
    with pytest.raises(ValueError, match="read-only"): write()
  t.flags["WRITEABLE"] = True
  t[0] = 3.0
  assert float(t[0]) == 3.0 and t.flags.writeable
  with pytest.raises(ValueError): mt.broadcast_to(t, (2, 4)).flags.writeable = True
  with pytest.raises(AttributeError): t.flags.c_contiguous = False


_SAME = [(np.float32, np.int32), (np.int32, np.float32), (np.float64, np.int64), (np.int64, np.uint64),
         (np.float64, np.uint64), (np.int8, np.uint8), (np.int16, np.float16), (np.uint32, np.float32)]


@pytest.mark.parametrize("src, to", _SAME)
def test_view_of_the_same_itemsize_is_lazy_and_writes_both_ways(src, to):
  """NumPy's float-to-int in place (numpy-100 #53): y = z.view(int32); y[:] = z writes z's bytes; then z shows them."""
  rng = np.random.default_rng(0)
  raw = rng.integers(0, 255, 8 * np.dtype(src).itemsize, dtype=np.uint8).view(src).copy()
  z, Z = mt.asarray(raw), raw.copy()
  y, Y = z.view(to), Z.view(to)
  assert y.base is z and y.uop.op.name == "BITCAST"                       # a view in the graph, not a copy
  np.testing.assert_array_equal(np.asarray(y).view(np.uint8), Y.view(np.uint8))
  with np.errstate(invalid="ignore"):                                     # (NaN bits cast to an integer)
    y[1:3] = z[1:3].astype(to)
    Y[1:3] = Z[1:3].astype(to)
  z[0] = z[5]                                                             # and a write into z shows in y
  Z[0] = Z[5]
  for got, want in ((z, Z), (y, Y)):
    assert np.asarray(got).tobytes() == want.tobytes()


def test_view_of_another_itemsize_is_read_only():
  v = mt.asarray(np.arange(4.0)).view(np.int32)
  np.testing.assert_array_equal(np.asarray(v), np.arange(4.0).view(np.int32))
  with pytest.raises(ValueError, match="read-only"): v[0] = 1      # (it could not reach the float64 Tensor)


def test_view_as_a_subclass():
  """NumPy's subclass idiom (numpy-100 #63): __new__ makes a view of the class, __array_finalize__ copies state."""
  class Named(mt.ndarray):
    def __new__(cls, a, name="no name"):
      obj = mt.asarray(a).view(cls)
      obj.name = name
      return obj

    def __array_finalize__(self, obj):
      self.name = getattr(obj, "name", "no name")

  z = Named(np.arange(6), "six")
  assert type(z) is Named and z.name == "six" and type(z.reshape(2, 3)) is Named and type(z[::2].T) is Named
  np.testing.assert_array_equal(np.asarray(z[1:] * 2), np.arange(1, 6) * 2)
  z[0] = 10
  assert int(z[0]) == 10 and z.view(type=Named).base is z.base
  with pytest.raises(TypeError): z.view(type=np.ndarray)


@pytest.mark.parametrize("make", [lambda a: mt.asarray(a) * 2, lambda a: (mt.asarray(a) + 1j)[None, ...],
                                  lambda a: mt.asarray(a).T[None]])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 0, 4)])
def test_numpys_attribute_functions_read_no_values(make, shape):
  """np.ndim, np.shape, np.size (with every axis form), np.iscomplexobj and np.isrealobj of a lazy Tensor: NumPy's
  answers for the equal array, and nothing realized (NumPy's own would convert the Tensor first)."""
  from minitensor.backend.runtime import stats
  t = make(np.ones(shape))
  a = np.asarray(make(np.ones(shape)))
  before = stats.graph_hits + stats.graph_misses
  for xp in (np, mt):
    assert (xp.ndim(t), xp.shape(t), xp.size(t)) == (a.ndim, a.shape, a.size)
    assert (xp.iscomplexobj(t), xp.isrealobj(t)) == (np.iscomplexobj(a), np.isrealobj(a))
    for axis in [k for k in range(-a.ndim, a.ndim)] + ([tuple(range(a.ndim))] if a.ndim else []):
      assert xp.size(t, axis) == np.size(a, axis)
    with pytest.raises(np.exceptions.AxisError): xp.size(t, a.ndim)
  assert stats.graph_hits + stats.graph_misses == before
