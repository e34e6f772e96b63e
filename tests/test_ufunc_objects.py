"""Ufunc objects (minitensor/ufunc_objects.py) against NumPy's: attributes, __call__'s keywords, and reduce,
accumulate, outer, reduceat and at for every binary ufunc minitensor exports."""
import functools
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import minitensor as mt
from minitensor.testing import arrays, shapes

UFUNCS = sorted({n for n in dir(mt) if isinstance(getattr(mt, n), mt.ufunc)})
BINARY = sorted({getattr(mt, n).__name__ for n in UFUNCS if getattr(mt, n).nin == 2 and getattr(mt, n).nout == 1})


def _eq(got, want, rtol=1e-12):
  got = np.asarray(got)
  assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want), (got.dtype, np.asarray(want).dtype)
  np.testing.assert_allclose(got.astype(np.float64) if got.dtype.kind == "b" else got, np.asarray(want).astype(
    np.float64) if got.dtype.kind == "b" else want, rtol=rtol, equal_nan=True)


def test_attributes_are_numpys():
  assert len(UFUNCS) > 70 and len(BINARY) > 30
  for n in UFUNCS:
    f, g = getattr(mt, n), getattr(np, n)
    assert (f.__name__, f.nin, f.nout, f.nargs, f.identity, repr(f)) == (g.__name__, g.nin, g.nout, g.nargs,
                                                                          g.identity, repr(g)), n
  assert mt.abs is mt.absolute and mt.add.types == np.add.types and mt.add.signature is None


def _operands(name: str):
  f = getattr(np, name)
  if "dd->d" in f.types or "dd->?" in f.types:
    a = np.array([[1.5, 2.0, 0.5, 3.0], [2.0, 1.0, 4.0, 0.25], [0.5, 3.0, 1.0, 2.0]])
  else:
    a = np.array([[1, 2, 3, 6], [5, 1, 4, 2], [7, 3, 1, 2]])
  return a, a[::-1, ::-1].copy()


def _fold(f, a, axis):
  """NumPy's definition of reduce, a left fold (NumPy's own SIMD loops of arctan2 misread the reduction's
  aliasing)."""
  return functools.reduce(f, np.moveaxis(a, axis, 0))


@pytest.mark.parametrize("name", BINARY)
def test_binary_methods(name):
  f, g = getattr(mt, name), getattr(np, name)
  a, b = _operands(name)
  t, u = mt.asarray(a), mt.asarray(b)
  reorder = g in (np.add, np.multiply, np.maximum, np.minimum, np.fmax, np.fmin, np.logical_and, np.logical_or,
                  np.logical_xor, np.bitwise_and, np.bitwise_or, np.bitwise_xor)
  rd = g.reduce(a[:1], axis=0).dtype if g not in (np.equal, np.not_equal, np.less, np.less_equal, np.greater,
                                                  np.greater_equal) or a.dtype.kind == "b" else None
  got, want = [], []
  if rd is not None:
    for ax in (0, 1):
      got += [f.reduce(t, axis=ax), f.reduce(t, axis=ax, keepdims=True), f.accumulate(t, axis=ax)]
      want += [g.reduce(a, axis=ax) if reorder else _fold(g, a, ax).astype(rd),
               g.reduce(a, axis=ax, keepdims=True) if reorder else np.expand_dims(_fold(g, a, ax).astype(rd), ax),
               g.accumulate(a, axis=ax)]
    got.append(f.reduceat(t, [0, 2, 1, 3], axis=1))
    want.append(g.reduceat(a, [0, 2, 1, 3], axis=1))
    if reorder:
      got += [f.reduce(t, axis=None), f.reduce(t, axis=(0, 1), keepdims=True)]
      want += [g.reduce(a, axis=None), g.reduce(a, axis=(0, 1), keepdims=True)]
    else:
      with pytest.raises(ValueError, match="not reorderable"): f.reduce(t, axis=(0, 1))
  else:
    with pytest.raises(TypeError): f.reduce(t)
  got += [f.outer(t[0], u[:, 1]), f(t, u), mt.ufunc.__call__(f, t, b[0])]
  want += [g.outer(a[0], b[:, 1]), g(a, b), g(a, b[0])]
  mt.realize(*[x for x in got if isinstance(x, mt.Tensor)])
  for x, w in zip(got, want): _eq(x, w, rtol=1e-12 if a.dtype.kind != "f" else 1e-9)
  assert type(g.outer(t, u)) is mt.Tensor and type(g.reduce(t) if rd is not None else t) is mt.Tensor


@pytest.mark.parametrize("name", ["add", "subtract", "maximum", "fmin", "logical_xor", "bitwise_or", "power"])
@settings(max_examples=25)       # seven ufuncs: 175 examples in all
@given(data=st.data())
def test_reduce_and_accumulate_match_numpy(name, data):
  g = getattr(np, name)
  dts = {"add": "?bBiqfd", "subtract": "bBiqfd", "maximum": "?bBiqfd", "fmin": "?bBiqfd", "logical_xor": "?bqd",
         "bitwise_or": "?bBiq", "power": "fd"}[name]        # power: integer arrays to negative powers do not raise
  dt = data.draw(st.sampled_from(list(dts)))
  a = data.draw(arrays(dtype=np.dtype(dt), shape=shapes(1, 3, 0, 4)))
  ax = data.draw(st.integers(-a.ndim, a.ndim - 1))
  t = mt.asarray(a)
  with np.errstate(all="ignore"):
    try: want = g.reduce(a, axis=ax) if name not in ("subtract", "power") else _fold(g, a, ax) if a.shape[ax] else None
    except ValueError: want = None
    if want is None:
      with pytest.raises(ValueError): mt.asarray(getattr(mt, name).reduce(t, axis=ax)).realize()
      return
    acc = g.accumulate(a, axis=ax)
  got = [getattr(mt, name).reduce(t, axis=ax), getattr(mt, name).accumulate(t, axis=ax)]
  mt.realize(*got)
  want = np.asarray(want).astype(np.asarray(got[0]).dtype)
  for x, w in zip(got, (want, acc)):
    x = np.asarray(x)
    assert x.dtype == w.dtype and x.shape == w.shape
    if x.dtype.kind == "f": np.testing.assert_allclose(x, w, rtol=1e-5 if x.dtype == np.float32 else 1e-12,
                                                        equal_nan=True)
    else: np.testing.assert_array_equal(x, w)


def test_reduce_keywords():
  a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -6.0]])
  t, m = mt.asarray(a), np.array([[True, False, True], [False, True, True]])
  for f in ("add", "multiply", "maximum", "subtract", "bitwise_or", "fmax", "hypot"):
    g, h = getattr(np, f), getattr(mt, f)
    x = a if f != "bitwise_or" else np.array([[1, 6, 3], [4, 5, 2]])
    y = mt.asarray(x)
    cases = [dict(axis=1, initial=2.0), dict(axis=0, where=m, initial=1.0), dict(axis=1, dtype=np.float32)]
    for kw in cases:
      if f == "bitwise_or" and "dtype" in kw: continue
      kw = {k: (int(v) if f == "bitwise_or" and k == "initial" else v) for k, v in kw.items()}
      _eq(h.reduce(y, **kw), g.reduce(x, **kw) if f != "subtract" or "initial" not in kw else g.reduce(x, **kw),
          rtol=1e-6)
  o = mt.zeros(3)
  assert mt.add.reduce(t, axis=0, out=o) is o
  _eq(o, np.add.reduce(a, axis=0))
  with pytest.raises(ValueError, match="identity"): mt.maximum.reduce(t, where=m)
  with pytest.raises(ValueError, match="no identity"): mt.maximum.reduce(mt.zeros((0, 2)))
  _eq(mt.add.reduce(mt.zeros((0, 2))), np.add.reduce(np.zeros((0, 2))))
  _eq(mt.bitwise_and.reduce(mt.zeros((0,), mt.uint8)), np.bitwise_and.reduce(np.zeros((0,), np.uint8)))
  with pytest.raises(ValueError): mt.add.accumulate(t, axis=None)
  with pytest.raises(IndexError): mt.add.reduceat(t, [0, 3], axis=1)
  with pytest.raises(ValueError, match="binary"): mt.exp.reduce(t)


def test_call_keywords_as_numpy():
  a = np.array([[1.5, -2.0, 3.0], [0.0, 4.0, -1.0]])
  t = mt.asarray(a)
  o, want = mt.zeros((2, 3)), np.zeros((2, 3))
  view = o[1]
  assert mt.multiply(t, 2, out=o) is o
  np.multiply(a, 2, out=want)
  _eq(o, want)
  _eq(view, want[1])                                               # the write is seen through a view
  m = a > 0
  mt.add(t, 100, out=o, where=m)
  np.add(a, 100, out=want, where=m)
  _eq(o, want)
  i = mt.zeros(3, mt.int64)
  with pytest.raises(TypeError, match="same_kind"): mt.add(t[0], 1, out=i)
  mt.add(t[0], 1, out=i, casting="unsafe")
  _eq(i, np.add(a[0], 1, out=np.zeros(3, np.int64), casting="unsafe"))
  with pytest.raises(TypeError): mt.add(t, 1, dtype=np.int8, casting="safe")
  with pytest.raises(TypeError): np.add(a, 1, dtype=np.int8, casting="safe")
  _eq(mt.add(t, 1, dtype=np.float32), np.add(a, 1, dtype=np.float32))
  _eq(mt.true_divide(mt.asarray([1, 2]), 2, dtype=np.float32), np.true_divide([1, 2], 2, dtype=np.float32))
  b = mt.zeros(3, bool)
  assert mt.logical_not(t[0], b) is b and np.array_equal(b, np.logical_not(a[0]))        # positional out
  na = np.zeros(3)
  assert mt.sqrt(mt.asarray([1.0, 4.0, 9.0]), out=na) is na and np.array_equal(na, [1, 2, 3])
  with pytest.raises(ValueError, match="broadcast"): mt.add(t, 1, out=mt.zeros(3))
  with pytest.raises(TypeError, match="where"): mt.add(t, 1, where=m)
  with pytest.raises(TypeError): mt.add(t)
  with pytest.raises(TypeError, match="unexpected"): mt.add(t, t, bogus=1)
  _eq(mt.add(1, 2, out=mt.zeros(3)), np.add(1, 2, out=np.zeros(3)))       # inputs broadcast to out


def test_at_on_tensors_and_arrays():
  t, a = mt.asarray(np.zeros(4)), np.zeros(4)
  mt.add.at(t, [0, 0, 3], 1.0)
  mt.add.at(a, [0, 0, 3], 1.0)
  np.testing.assert_array_equal(np.asarray(t), a)
  mt.negative.at(t, [1, 3])
  np.negative.at(a, [1, 3])
  np.testing.assert_array_equal(np.asarray(t), a)


@given(a=hnp.arrays(np.float64, shapes(1, 2, 0, 4), elements=st.floats(-4, 4) | st.just(np.nan)),
       b=hnp.arrays(np.float64, shapes(0, 2, 0, 3), elements=st.floats(-4, 4)))
def test_outer_shapes(a, b):
  got = [mt.add.outer(a, b), mt.maximum.outer(mt.asarray(a), b), mt.subtract.outer(mt.asarray(a), mt.asarray(b))]
  for x, w in zip(mt.realize(*got), (np.add.outer(a, b), np.maximum.outer(a, b), np.subtract.outer(a, b))):
    np.testing.assert_array_equal(x, w)


COMPOSITES = ["degrees", "rad2deg", "radians", "deg2rad", "fabs", "cbrt", "float_power", "logaddexp2", "heaviside",
              "divmod", "modf", "hypot", "logaddexp", "copysign"]


@pytest.mark.parametrize("name", COMPOSITES)
@settings(max_examples=20)
@given(data=st.data())
def test_composite_ufuncs_match_numpy(name, data):
  g, f = getattr(np, name), getattr(mt, name)
  dt = data.draw(st.sampled_from([np.float32, np.float64, np.int32] if name != "divmod" else [np.int8, np.float64]))
  shape = data.draw(shapes(0, 2, 0, 4))
  xs = [data.draw(arrays(dtype=np.dtype(dt), shape=shape)) for _ in range(g.nin)]
  if name == "divmod" and dt == np.int8: xs[1] = np.where(xs[1] == 0, 3, xs[1]).astype(np.int8)
  with np.errstate(all="ignore"): want = g(*xs)
  got = f(*[mt.asarray(x) for x in xs])
  got, want = (got, want) if g.nout > 1 else ((got,), (want,))
  mt.realize(*got)
  for x, w in zip(got, want):
    x = np.asarray(x)
    assert x.dtype == w.dtype and x.shape == w.shape
    rtol = 5e-7 if x.dtype == np.float32 else 1e-15
    np.testing.assert_allclose(x, w, rtol=rtol, atol=0, equal_nan=True)
    np.testing.assert_array_equal(np.signbit(x[x == 0]), np.signbit(w[x == 0]))       # signed zeros
