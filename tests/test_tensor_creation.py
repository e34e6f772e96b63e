"""minitensor.creation and minitensor.random against NumPy.

*_like, arange, linspace, eye and identity must give NumPy's dtype, shape and values exactly (float sign bits
included); the random generators must give NumPy's numbers bit for bit for the same seed. Every bad input raises
the exception type NumPy raises, at the call.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import minitensor as mt

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64]
FEW = settings(max_examples=max(4, settings.default.max_examples // 6))
shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)


def check(got, want) -> None:
  """got (a Tensor) equals NumPy's want: dtype, shape, values, NaN positions and float sign bits (NaN's aside)."""
  assert isinstance(got, mt.Tensor), type(got)
  g, w = np.asarray(got), np.asarray(want)
  assert (g.dtype, g.shape) == (w.dtype, w.shape)
  np.testing.assert_array_equal(g, w)
  if w.dtype.kind == "f": np.testing.assert_array_equal(np.signbit(g) & ~np.isnan(g), np.signbit(w) & ~np.isnan(w))


def same(f) -> None:
  """f(np) and f(mt) agree: an equal result, or the exception type NumPy raises."""
  try: want = f(np)
  except Exception as e:
    with pytest.raises(type(e)): f(mt)
    return
  check(f(mt), want)


# ---------------------------------------------------------------- *_like
@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(shape=shapes, other=st.sampled_from(DTYPES), new_shape=st.one_of(st.none(), st.integers(0, 3), shapes))
def test_like(dtype, shape, other, new_shape):
  a = np.zeros(shape, dtype)
  for name in ("zeros_like", "ones_like"):
    same(lambda m: getattr(m, name)(a))
    same(lambda m: getattr(m, name)(mt.asarray(a) if m is mt else a, dtype=other, shape=new_shape))
  e, w = mt.empty_like(a, dtype=other, shape=new_shape), np.empty_like(a, dtype=other, shape=new_shape)
  assert (e.dtype, e.shape) == (w.dtype, w.shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fill", [0, 1, -1, 7, 2.7, -0.0, np.nan, np.inf, -np.inf, True, 300, -129, [1, 2, 3],
                                  [[0.5], [-0.0]]])
def test_full_like(dtype, fill):
  a = np.zeros((2, 3), dtype)
  same(lambda m: m.full_like(a, fill))
  same(lambda m: m.full_like(a, fill, dtype=np.float32, shape=(1, 2, 3)))


def test_full_like_takes_a_lazy_fill():
  check(mt.full_like(np.zeros((2, 2), np.int32), mt.asarray([1.0, 2.0]) * 3),
        np.full_like(np.zeros((2, 2), np.int32), [3.0, 6.0]))


def test_like_accepts_scalars_and_lists():
  same(lambda m: m.zeros_like(3.0))
  same(lambda m: m.ones_like([[1, 2]], dtype=bool))
  same(lambda m: m.full_like(np.float32(1), -0.0))


# ---------------------------------------------------------------- arange and linspace
ARANGE = [(5,), (0,), (-3,), (2, 9), (9, 2), (9, 2, -2), (0, 1, 0.1), (1, 0, -0.3), (0.5, 4), (-2.5, 2.5, 0.5),
          (0, 10, 3), (1e-3, 1e-2, 1e-3), (0, 5, 1.5), (np.int8(3),), (np.float32(3),), (True,), (3, 3)]


@pytest.mark.parametrize("args", ARANGE)
@pytest.mark.parametrize("dtype", [None] + DTYPES)
def test_arange(args, dtype):
  same(lambda m: m.arange(*args, dtype=dtype))


@FEW
@given(start=st.one_of(st.integers(-50, 50), st.floats(-50, 50)),
       stop=st.one_of(st.none(), st.integers(-50, 50), st.floats(-50, 50)),
       step=st.one_of(st.integers(-7, 7), st.floats(-7, 7)),
       dtype=st.sampled_from([None, np.int32, np.float32, np.float64]))
def test_arange_property(start, stop, step, dtype):
  same(lambda m: m.arange(start, stop, step, dtype=dtype))


LINSPACE = [dict(start=0, stop=1), dict(start=0, stop=1, num=5, endpoint=False), dict(start=-1, stop=1, num=1),
            dict(start=2, stop=3, num=0), dict(start=0, stop=10, num=7, dtype=np.int32),
            dict(start=np.float32(0), stop=1, num=4),
            dict(start=[0, 1], stop=5, num=3), dict(start=[0, 1], stop=[[5], [6]], num=3, axis=-1),
            dict(start=-0.0, stop=-0.0, num=3), dict(start=1, stop=0, num=4, dtype=np.float32)]


@pytest.mark.parametrize("kw", LINSPACE)
def test_linspace(kw):
  same(lambda m: m.linspace(**kw))
  got, want = mt.linspace(**kw, retstep=True), np.linspace(**kw, retstep=True)
  check(got[0], want[0])
  np.testing.assert_array_equal(np.asarray(got[1]), want[1])


# ---------------------------------------------------------------- eye and identity
EYE = [(0,), (1,), (3,), (3, 5), (5, 3), (4, 4, 1), (4, 4, -2), (3, 5, 4), (5, 3, -4), (2, 3, 5), (3, 2, -3), (3, 0),
       (1, 6, -1)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_eye(dtype):
  got = [mt.eye(*args, dtype=dtype) for args in EYE] + [mt.identity(4, dtype=dtype)]
  mt.realize(*got)                                              # one compile for all of them
  for g, args in zip(got, EYE): check(g, np.eye(*args, dtype=dtype))
  check(got[-1], np.identity(4, dtype=dtype))


def test_eye_defaults_and_laziness():
  check(mt.eye(3), np.eye(3))
  check(mt.eye(2, 3, k=1) * 2 + mt.eye(2, 3), np.eye(2, 3, k=1) * 2 + np.eye(2, 3))
  check(mt.eye(np.int64(2), M=np.int8(3)), np.eye(np.int64(2), M=np.int8(3)))


# ---------------------------------------------------------------- random
@pytest.mark.parametrize("seed", [0, 12345, [1, 2]])
@pytest.mark.parametrize("size", [None, 0, 3, (2, 3)])
def test_generator_matches_numpy(seed, size):
  g, r = mt.random.default_rng(seed), np.random.default_rng(seed)
  calls = [("random", (), {}), ("random", (), {"dtype": np.float32}), ("standard_normal", (), {}),
           ("standard_normal", (), {"dtype": np.float32}), ("uniform", (-2.0, 3.0), {}), ("normal", (1.0, 0.5), {}),
           ("integers", (10,), {}), ("integers", (-5, 5), {"dtype": np.int8}),
           ("integers", (0, 255), {"dtype": np.uint8, "endpoint": True}),
           ("integers", (0, 2), {"dtype": np.bool_}), ("integers", (-10, 10), {"dtype": np.int32}),
           ("choice", (5,), {}),
           ("choice", (np.array([1.5, -0.0, 3.0]),), {"p": [0.2, 0.5, 0.3]})]
  for name, args, kw in calls:                                   # the same stream: every call must match in order
    check(getattr(g, name)(*args, size=size, **kw), getattr(r, name)(*args, size=size, **kw))


def test_generator_takes_tensor_arguments():
  g, r = mt.random.default_rng(7), np.random.default_rng(7)
  check(g.uniform(mt.asarray([0.0, 10.0]), 20.0), r.uniform(np.array([0.0, 10.0]), 20.0))
  check(g.normal(0.0, mt.asarray([1.0, 2.0]), size=(3, 2)), r.normal(0.0, np.array([1.0, 2.0]), size=(3, 2)))
  check(g.choice(mt.asarray(np.arange(6).reshape(3, 2)), 2, replace=False),
        r.choice(np.arange(6).reshape(3, 2), 2, replace=False))
  assert "Generator" in repr(g)


def test_generator_fills_out_as_numpy():
  for name in ("random", "standard_normal"):
    got, want = np.empty((2, 3), np.float32), np.empty((2, 3), np.float32)
    r = getattr(mt.random.default_rng(4), name)(dtype=np.float32, out=got)
    getattr(np.random.default_rng(4), name)(dtype=np.float32, out=want)
    assert r is got and np.array_equal(got, want)


def test_module_level_random_matches_numpy_legacy():
  mt.random.seed(3)
  legacy = np.random.RandomState(3)
  check(mt.random.rand(2, 3), legacy.rand(2, 3))
  check(mt.random.randn(4), legacy.randn(4))
  check(mt.random.rand(), legacy.rand())
  state = np.random.get_state()[1].copy()
  mt.random.rand(5)
  np.testing.assert_array_equal(np.random.get_state()[1], state)  # NumPy's global state untouched


# ---------------------------------------------------------------- bad inputs raise NumPy's exception at the call
BAD = [lambda m: m.arange(0, 5, 0), lambda m: m.arange(np.nan), lambda m: m.arange(3, dtype=bool),
       lambda m: m.arange(3, dtype="foo"), lambda m: m.eye(-1), lambda m: m.eye(2.5), lambda m: m.eye(2, k=1.0),
       lambda m: m.eye(2, -1), lambda m: m.identity(2.0), lambda m: m.eye(2, dtype="foo"),
       lambda m: m.linspace(0, 1, -1),
       lambda m: m.linspace(0, 1, 2.5), lambda m: m.zeros_like(np.zeros(3), shape=-1),
       lambda m: m.ones_like(np.zeros(3), shape=(2, -1)),
       lambda m: m.zeros_like(np.zeros(3), dtype="foo"), lambda m: m.full_like(np.zeros(3, np.int8), 300),
       lambda m: m.full_like(np.zeros(3, np.uint8), -1), lambda m: m.full_like(np.zeros(3), [1, 2]),
       lambda m: m.random.default_rng(-1), lambda m: m.random.default_rng(0).random(3, dtype=np.int32),
       lambda m: m.random.default_rng(0).integers(5, 1),
       lambda m: m.random.default_rng(0).integers(0, 300, dtype=np.int8),
       lambda m: m.random.default_rng(0).choice(3, 5, replace=False),
       lambda m: m.random.default_rng(0).uniform(size=-1)]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_inputs_raise_numpys_exception(i):
  with pytest.raises(Exception) as want: BAD[i](np)
  with pytest.raises(type(want.value)): BAD[i](mt)


@pytest.mark.parametrize("f", [lambda: mt.zeros_like(np.zeros(2), dtype=object),
                               lambda: mt.linspace(0, 1, 3, dtype="U")])
def test_unsupported_dtypes_raise_type_error(f):
  with pytest.raises(TypeError): f()


@pytest.mark.parametrize("dt", [">f4", ">i8", ">c16", ">u2"])
def test_non_native_byte_order_is_read_into_native_order(dt):
  """A non-native array's values are read into the native dtype: NumPy's results of arithmetic are native too, but
  its asarray, copies and views keep `>f4`; minitensor's never do (README, Limitations)."""
  a = np.arange(5).astype(dt)
  t = mt.asarray(a)
  native = a.dtype.newbyteorder("=")
  for r in (t, t[1:], t.copy(), t.reshape(5, 1), mt.array(a, copy=True)):
    assert r.dtype == native and r.dtype.isnative
  np.testing.assert_array_equal(t.numpy(), a)
  assert (t + 1).dtype == (a + 1).dtype
