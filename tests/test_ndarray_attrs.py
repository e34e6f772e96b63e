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
