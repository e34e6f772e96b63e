"""minitensor.io against NumPy: fromiter, frombuffer, the text readers and writer, ascontiguousarray and
asfortranarray, packbits and unpackbits (every axis, bit order, count, shapes with 0/1 axes)."""
import io
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt

xp = lambda a: mt if isinstance(a, mt.Tensor) else np


def same(got, want):
  assert isinstance(got, mt.Tensor) and (got.dtype, got.shape) == (want.dtype, want.shape)
  np.testing.assert_array_equal(np.asarray(got), want)


def test_fromiter_and_frombuffer():
  same(mt.fromiter((x * x for x in range(5)), dtype=float), np.fromiter((x * x for x in range(5)), dtype=float))
  same(mt.fromiter(iter([1, 2, 3, 4]), np.int8, count=2), np.fromiter(iter([1, 2, 3, 4]), np.int8, count=2))
  buf = bytearray(np.arange(6, dtype=np.int32).tobytes())
  got = mt.frombuffer(buf, dtype=np.int32, count=3, offset=4)
  same(got, np.frombuffer(buf, dtype=np.int32, count=3, offset=4))
  buf[4] = 99                                                  # a copy: the buffer's later changes do not reach it
  assert np.asarray(got).tolist() == [1, 2, 3]
  with pytest.raises(ValueError): mt.frombuffer(b"abc", dtype=np.int32)
  with pytest.raises(ValueError): mt.fromiter(iter([1]), float, count=3)


@given(a=mtt.arrays(st.sampled_from(mtt.DTYPES + (np.dtype(np.complex64), np.dtype(np.uint16))),
                    mtt.shapes(min_dims=1, max_dims=1)), data=st.data())
def test_frombuffer_and_fromiter_of_every_dtype(a, data):
  n = a.size
  count, offset = data.draw(st.integers(-1, n)), data.draw(st.integers(0, n)) * a.itemsize
  same(mt.frombuffer(a.tobytes(), dtype=a.dtype), np.frombuffer(a.tobytes(), dtype=a.dtype))
  try: want = np.frombuffer(a.tobytes(), dtype=a.dtype, count=count, offset=offset)
  except ValueError:
    with pytest.raises(ValueError): mt.frombuffer(a.tobytes(), dtype=a.dtype, count=count, offset=offset)
  else: same(mt.frombuffer(a.tobytes(), dtype=a.dtype, count=count, offset=offset), want)
  same(mt.fromiter(a.tolist(), dtype=a.dtype), np.fromiter(a.tolist(), dtype=a.dtype))


def test_text_files():
  text = "1, 2, 3, 4, 5\n\n 6,  ,  , 7, 8\n\n  ,  , 9,10,11\n"
  same(mt.genfromtxt(io.StringIO(text), delimiter=",", dtype=int, filling_values=0),
       np.genfromtxt(io.StringIO(text), delimiter=",", dtype=int, filling_values=0))
  data = "# a comment\n1 2 3\n4 5 6\n"
  same(mt.loadtxt(io.StringIO(data)), np.loadtxt(io.StringIO(data)))
  for g, w in zip(mt.loadtxt(io.StringIO(data), unpack=True, dtype=np.int32),
                  np.loadtxt(io.StringIO(data), unpack=True, dtype=np.int32)):
    same(g, w)
  f = io.StringIO()
  mt.savetxt(f, mt.arange(6.0).reshape(2, 3) / 4, fmt="%.3f", delimiter=";")
  g = io.StringIO()
  np.savetxt(g, np.arange(6.0).reshape(2, 3) / 4, fmt="%.3f", delimiter=";")
  assert f.getvalue() == g.getvalue()
  with pytest.raises(TypeError, match="dtype"):                # a structured result: asarray's clear TypeError
    mt.genfromtxt(io.StringIO("a 1\nb 2\n"), dtype=None, encoding="utf-8")


@given(a=mtt.arrays(mtt.dtypes(), mtt.shapes(max_dims=3)), dtype=st.sampled_from([None, np.float32, np.int64]))
def test_contiguous_copies(a, dtype):
  for f in ("ascontiguousarray", "asfortranarray"):
    mtt.assert_matches_numpy(lambda x: getattr(xp(x), f)(x, dtype=dtype), a, rtol=0, atol=0)
  t = mt.asarray(a)
  c = mt.ascontiguousarray(t)
  if t.size:
    c[...] = 0 if a.dtype != np.bool_ else True                # a copy: writing it leaves t alone
    np.testing.assert_array_equal(np.asarray(t), a)


@given(data=st.data())
def test_packbits_and_unpackbits(data):
  dtype = data.draw(st.sampled_from([np.bool_, np.uint8, np.int8, np.int32, np.uint32, np.int64]))
  shape = data.draw(mtt.shapes(max_dims=3, max_side=10))
  a = data.draw(mtt.arrays(dtype, shape))
  axis = data.draw(st.one_of(st.none(), st.integers(-len(shape) - 1, len(shape))))
  order = data.draw(st.sampled_from(["big", "little"]))
  mtt.assert_matches_numpy(lambda x: xp(x).packbits(x, axis=axis, bitorder=order), a, rtol=0, atol=0)
  b = a.astype(np.uint8)
  count = data.draw(st.one_of(st.none(), st.integers(-12, 30)))
  if b.size == 0 and count: count = None           # NumPy pads an empty input's count with uninitialized bytes
  mtt.assert_matches_numpy(lambda x: xp(x).unpackbits(x, axis=axis, count=count, bitorder=order), b, rtol=0, atol=0)


def test_bit_packing_errors_and_dispatch():
  for bad in (lambda m: m.packbits(np.ones(3)), lambda m: m.unpackbits(np.ones(3, np.int32)),
              lambda m: m.packbits(np.ones(3, np.uint8), bitorder="middle"),
              lambda m: m.unpackbits(np.ones(3, np.uint8), axis=1)):
    with pytest.raises(Exception) as e: bad(np)
    with pytest.raises(type(e.value)): bad(mt)
  t = mt.asarray(np.array([0, 1, 2, 3, 15, 16, 32, 64, 128], dtype=np.uint8))
  got = np.unpackbits(t[:, None], axis=1)
  assert isinstance(got, mt.Tensor)
  np.testing.assert_array_equal(np.asarray(got), np.unpackbits(np.asarray(t)[:, None], axis=1))
