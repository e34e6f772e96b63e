"""minitensor.manipulation against NumPy: joining, splitting, padding, rearranging, reductions as functions.

Every result is compared with NumPy's: dtype, shape and values exactly (NaN equal to NaN, and for floats the sign
bit too, so a -0.0 that turned into 0.0 fails; a NaN's sign is unspecified). Every bad input must raise the
exception type NumPy raises, at the call. Hypothesis draws shapes with 0-d, size-0 and size-1 axes; `FEW` keeps
the per-dtype example counts (each distinct graph is one C compile) inside the time budget while following the
loaded profile, and tests that build many results realize them together (one compile).
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import minitensor as mt

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64]
FEW = settings(max_examples=max(4, settings.default.max_examples // 6))
SPECIALS = [-0.0, np.nan, np.inf, -np.inf, 0.0]


def check(got, want) -> None:
  """got (a Tensor) equals NumPy's want: dtype, shape, values, NaN positions and float sign bits."""
  assert isinstance(got, mt.Tensor), type(got)
  g, w = np.asarray(got), np.asarray(want)
  assert (g.dtype, g.shape) == (w.dtype, w.shape)
  np.testing.assert_array_equal(g, w)
  if w.dtype.kind == "f": np.testing.assert_array_equal(np.signbit(g) & ~np.isnan(g), np.signbit(w) & ~np.isnan(w))


def same(f) -> None:
  """f(np) and f(mt) agree: equal results (a Tensor or a sequence of them), or the NumPy exception type."""
  try: want = f(np)
  except Exception as e:
    with pytest.raises(type(e)): f(mt)
    return
  got = f(mt)
  if isinstance(want, (list, tuple)):
    assert type(got) is type(want) and len(got) == len(want)
    for g, w in zip(got, want): check(g, w)
  else: check(got, want)


def values(shape, dtype) -> np.ndarray:
  """Distinct values (so a wrong permutation shows), with -0.0, NaN and +-inf first for floats."""
  a = np.arange(int(np.prod(shape)), dtype=np.int64)
  a = (a % 3 == 1) if dtype == np.bool_ else a.astype(dtype)
  if a.dtype.kind == "f": a[:len(SPECIALS)] = SPECIALS[:a.size]
  return a.reshape(shape)


shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4)


# ---------------------------------------------------------------- concatenate and stack
@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(data=st.data(), shape=shapes)
def test_concatenate(dtype, data, shape):
  axis = data.draw(st.integers(-len(shape), len(shape) - 1))
  sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
  parts = [data.draw(hnp.arrays(dtype, shape[:axis % len(shape)] + (n,) + shape[axis % len(shape) + 1:]))
           for n in sizes]
  check(mt.concatenate(parts, axis=axis), np.concatenate(parts, axis=axis))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_concatenate_keeps_negative_zero_nan_inf(dtype):
  a = np.array([[-0.0, np.nan], [np.inf, -np.inf]], dtype)
  b = np.array([[-0.0, 0.0], [-0.0, np.nan]], dtype)
  for axis in (0, 1, None):
    check(mt.concatenate([a, b, a], axis=axis), np.concatenate([a, b, a], axis=axis))
  check(mt.concat([mt.asarray(b), a], axis=1), np.concat([b, a], axis=1))


def test_concatenate_promotes_like_numpy():
  pairs = [(values((2, 2), d1), values((1, 2), d2)) for d1 in DTYPES for d2 in DTYPES]
  got = [mt.concatenate([a, b]) for a, b in pairs]
  mt.realize(*got)                                               # one compile for all 49 kernels
  for g, (a, b) in zip(got, pairs): check(g, np.concatenate([a, b]))


def test_concatenate_variants():
  a, b = values((2, 3), np.int32), values((2, 1), np.int64)
  same(lambda m: m.concatenate([a, b], axis=-1))
  same(lambda m: m.concatenate([a, values((3,), np.int8)], axis=None))
  same(lambda m: m.concatenate([np.array(1.5), a], axis=None))
  same(lambda m: m.concatenate(values((3, 2), np.float32)))                       # an array is iterated
  same(lambda m: m.concatenate([a, a], dtype=np.int8))
  same(lambda m: m.concatenate([a] * 9, axis=1))                                   # a deep pairwise tree
  check(mt.concatenate(mt.asarray(values((3, 2), np.int8))), np.concatenate(values((3, 2), np.int8)))
  check(mt.concatenate([a[:, :0], b[:, :0]], axis=1), np.concatenate([a[:, :0], b[:, :0]], axis=1))
  check(mt.concat([a, b], axis=1) * 2, np.concatenate([a, b], axis=1) * 2)        # the result feeds more work


@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
def test_stack(dtype, data, shape):
  axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
  parts = [data.draw(hnp.arrays(dtype, shape)) for _ in range(data.draw(st.integers(1, 3)))]
  check(mt.stack(parts, axis=axis), np.stack(parts, axis=axis))


def test_stack_promotes_and_takes_dtype():
  same(lambda m: m.stack([values((2,), np.int8), values((2,), np.float32), values((2,), np.bool_)], axis=1))
  same(lambda m: m.stack([values((2,), np.int8), values((2,), np.int8)], dtype=np.float64))


# ---------------------------------------------------------------- splitting
@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(data=st.data(), shape=shapes)
def test_split_family(dtype, data, shape):
  a = values(shape, dtype)
  axis = data.draw(st.integers(-len(shape), len(shape) - 1))
  sections = data.draw(st.integers(1, 5))
  indices = data.draw(st.lists(st.integers(-6, 6), max_size=4))
  same(lambda m: m.array_split(a, sections, axis=axis))
  same(lambda m: m.array_split(a, indices, axis=axis))
  same(lambda m: m.split(a, sections, axis=axis))
  same(lambda m: m.split(a, indices, axis=axis))
  same(lambda m: m.unstack(a, axis=axis))
  for name in ("hsplit", "vsplit", "dsplit"):
    same(lambda m: getattr(m, name)(a, sections))


def test_split_of_lazy_tensor_and_tensor_arguments():
  a = values((4, 6), np.float32)
  lazy = mt.asarray(a) * 2
  for got, want in zip(mt.split(lazy, mt.asarray(np.array([1, 4])), axis=1), np.split(a * 2, [1, 4], axis=1)):
    check(got, want)
  for got, want in zip(mt.array_split(lazy, 5), np.array_split(a * 2, 5)): check(got, want)


# ---------------------------------------------------------------- pad
pad_widths = st.one_of(st.integers(0, 2), st.tuples(st.integers(0, 2), st.integers(0, 2)))


@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
def test_pad(dtype, data, shape):
  a = data.draw(hnp.arrays(dtype, shape))
  per_axis = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=len(shape), max_size=len(shape))
  width = data.draw(st.one_of(pad_widths, per_axis))
  value = data.draw(st.one_of(st.sampled_from([0, 1, -1, 7, True, 2.5] + SPECIALS),
                              st.tuples(st.integers(-3, 3), st.integers(-3, 3))))
  same(lambda m: m.pad(a, width, constant_values=value))


def test_pad_forms_and_corners():
  a = values((2, 3), np.float64)
  # later axis wins corners
  same(lambda m: m.pad(a, ((1, 2), (2, 1)), constant_values=((1.0, 2.0), (-0.0, np.nan))))
  same(lambda m: m.pad(a, [[1], [2]], constant_values=[[5], [6]]))
  same(lambda m: m.pad(a, {1: (0, 2), -2: 1}, constant_values=-0.0))
  same(lambda m: m.pad(a, 1, constant_values=None))
  same(lambda m: m.pad(values((2, 2), np.uint8), 1, constant_values=-1))
  same(lambda m: m.pad(values((3,), np.int8), 1, constant_values=300))                       # OverflowError as NumPy
  same(lambda m: m.pad(values((3,), np.int32), 1, constant_values=np.nan))                   # ValueError as NumPy
  check(mt.pad(mt.asarray(a) + 1, 1), np.pad(a + 1, 1))


# ---------------------------------------------------------------- flip, roll, repeat, tile
@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
def test_rearranging(dtype, data, shape):
  a, nd = values(shape, dtype), len(shape)
  axis = data.draw(st.integers(-nd, nd - 1)) if nd else None
  same(lambda m: m.flip(a, axis))
  same(lambda m: m.flip(a))
  shift = data.draw(st.integers(-9, 9))
  same(lambda m: m.roll(a, shift))
  same(lambda m: m.roll(a, shift, axis=axis))
  if nd >= 2: same(lambda m: m.roll(a, (shift, 1, -2), axis=(0, -1, 0)))
  r = data.draw(st.integers(0, 3))
  same(lambda m: m.repeat(a, r, axis=axis))
  same(lambda m: m.repeat(a, 2))
  reps = data.draw(st.one_of(st.integers(0, 2), st.lists(st.integers(0, 2), max_size=4)))
  same(lambda m: m.tile(a, reps))


@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat_with_counts_gathers(dtype):
  a = values((3, 2), dtype)
  same(lambda m: m.repeat(a, [2, 0, 3], axis=0))
  same(lambda m: m.repeat(a, [1, 3], axis=-1))
  same(lambda m: m.repeat(a, [0, 0], axis=1))
  same(lambda m: m.repeat(a, np.array([1, 0, 2, 1, 1, 0])))


def test_repeat_and_tile_of_lazy_tensors():
  a = values((2, 3), np.float32)
  check(mt.repeat(mt.asarray(a) + 1, mt.asarray(np.array([1, 2])), axis=0), np.repeat(a + 1, [1, 2], axis=0))
  check(mt.tile(mt.asarray(a) * 2, (2, 1, 2)), np.tile(a * 2, (2, 1, 2)))
  check(mt.roll(mt.asarray(a) * -1, 4), np.roll(a * -1, 4))


# ---------------------------------------------------------------- axes and shapes
@pytest.mark.parametrize("dtype", DTYPES)
@FEW
@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
def test_axis_functions(dtype, data, shape):
  a, nd = values(shape, dtype), len(shape)
  perm = data.draw(st.permutations(range(nd)))
  same(lambda m: m.transpose(a))
  same(lambda m: m.transpose(a, perm))
  same(lambda m: m.permute_dims(a, perm))
  if nd:
    src = data.draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd))
    dst = data.draw(st.permutations(range(-nd, 0)))[:len(src)]
    same(lambda m: m.moveaxis(a, src, dst))
    a1, a2 = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
    same(lambda m: m.swapaxes(a, a1, a2))
  same(lambda m: m.reshape(a, (-1,)))
  same(lambda m: m.reshape(a, shape[::-1]))
  same(lambda m: m.ravel(a))
  same(lambda m: m.squeeze(a))
  k = data.draw(st.integers(-nd - 1, nd))
  same(lambda m: m.expand_dims(a, k))
  same(lambda m: m.broadcast_to(a, (2,) + shape))
  same(lambda m: m.broadcast_arrays(a, np.zeros((1,) * nd, np.int8), 3.0))
  for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
    same(lambda m: getattr(m, name)(a))
    same(lambda m: getattr(m, name)(a, np.float32(1)))
  if nd >= 2: same(lambda m: m.matrix_transpose(a))


# ---------------------------------------------------------------- movement chains
axis_in = lambda nd: st.integers(-nd, nd - 1)
CHAIN = {  # name: (minimum ndim, strategy of the argument given ndim, the op on module m and array x)
  "transpose": (0, lambda nd: st.permutations(range(nd)), lambda m, x, p: m.transpose(x, p)),
  "flip": (0, lambda nd: st.none(), lambda m, x, _: m.flip(x)),
  "expand_dims": (0, lambda nd: st.integers(-nd - 1, nd), lambda m, x, k: m.expand_dims(x, k)),
  "ravel": (0, lambda nd: st.none(), lambda m, x, _: m.ravel(x)),
  "tile": (0, lambda nd: st.lists(st.integers(1, 2), max_size=3), lambda m, x, r: m.tile(x, r)),
  "pad": (0, lambda nd: pad_widths, lambda m, x, w: m.pad(x, w, constant_values=-0.0)),
  "roll": (0, lambda nd: st.integers(-5, 5), lambda m, x, s: m.roll(x, s)),
  "broadcast_to": (0, lambda nd: st.integers(0, 2), lambda m, x, k: m.broadcast_to(x, (k,) + x.shape)),
  "concatenate": (1, axis_in, lambda m, x, a: m.concatenate([x, m.flip(x)], axis=a)),
  "stack": (1, lambda nd: st.integers(-nd - 1, nd), lambda m, x, a: m.stack([x, x], axis=a)),
  "repeat": (1, lambda nd: st.tuples(st.integers(0, 2), axis_in(nd)), lambda m, x, ra: m.repeat(x, ra[0], axis=ra[1])),
  "moveaxis": (1, lambda nd: st.tuples(axis_in(nd), axis_in(nd)), lambda m, x, ab: m.moveaxis(x, *ab)),
  "array_split": (1, axis_in, lambda m, x, a: m.array_split(x, 2, axis=a)[-1]),
  "squeeze": (1, lambda nd: st.none(), lambda m, x, _: m.squeeze(x)),
  "swapaxes": (2, lambda nd: st.tuples(axis_in(nd), axis_in(nd)), lambda m, x, ab: m.swapaxes(x, *ab)),
}


@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3),
       dtype=st.sampled_from(DTYPES), n=st.integers(1, 5))
def test_movement_chains(data, shape, dtype, n):
  x_np, x_mt = values(shape, dtype), mt.asarray(values(shape, dtype))
  for _ in range(n):
    if x_np.size > 2000: break
    name = data.draw(st.sampled_from([k for k, (lo, _, _) in CHAIN.items() if lo <= x_np.ndim]))
    _, arg, op = CHAIN[name]
    a = data.draw(arg(x_np.ndim))
    x_np, x_mt = op(np, x_np, a), op(mt, x_mt, a)
    assert x_mt.shape == x_np.shape and x_mt.dtype == x_np.dtype
  check(x_mt, x_np)


# ---------------------------------------------------------------- reductions as functions
REDUCTIONS = ["sum", "prod", "max", "min", "amax", "amin", "mean", "var", "std", "argmax", "argmin", "any", "all",
              "count_nonzero"]


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_functions(name):
  cases = [(values((3, 4), d) if d != np.float64 else np.arange(12.0).reshape(3, 4) / 7, kw)
           for d in (np.bool_, np.int8, np.int32, np.float64)
           for kw in ({}, {"axis": 1}, {"axis": (-2,), "keepdims": True})]
  cases = [(a, kw) for a, kw in cases if not (name in ("argmax", "argmin") and isinstance(kw.get("axis"), tuple))]
  got = [getattr(mt, name)(a, **kw) for a, kw in cases]
  mt.realize(*got)
  for g, (a, kw) in zip(got, cases):
    want = np.asarray(getattr(np, name)(a, **kw))
    assert isinstance(g, mt.Tensor) and g.shape == want.shape
    if name != "count_nonzero": assert g.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12)


def test_reductions_take_array_likes_and_options():
  check(mt.sum([[1, 2], [3, 4]], axis=(0, 1)), np.sum([[1, 2], [3, 4]], axis=(0, 1)))
  check(mt.sum(np.int8([100, 100]), dtype=np.int8), np.sum(np.int8([100, 100]), dtype=np.int8))
  check(mt.max([1.0, np.nan, 3.0]), np.max([1.0, np.nan, 3.0]))
  check(mt.argmin([[3, 1], [0, 5]], axis=None), np.argmin([[3, 1], [0, 5]]))
  check(mt.count_nonzero([[0, 1], [2, 0]], axis=0, keepdims=True),
        np.count_nonzero([[0, 1], [2, 0]], axis=0, keepdims=True))
  np.testing.assert_allclose(np.asarray(mt.var([1.0, 2.0, 4.0], ddof=1)), np.var([1.0, 2.0, 4.0], ddof=1))
  np.testing.assert_allclose(np.asarray(mt.std([1.0, 2.0, 4.0], correction=1)), np.std([1.0, 2.0, 4.0], correction=1))


# ---------------------------------------------------------------- bad inputs raise NumPy's exception at the call
A = values((2, 3), np.int64)
BAD = {
  "concatenate": [lambda m: m.concatenate([]), lambda m: m.concatenate([np.array(1), np.array(2)]),
                  lambda m: m.concatenate([A, A[0]]), lambda m: m.concatenate([A, A.T]),
                  lambda m: m.concatenate([A, A], axis=2),
                  lambda m: m.concatenate([A, A], axis=1.0),
                  lambda m: m.concatenate([A.astype(np.float32)], dtype=np.int8)],
  "stack": [lambda m: m.stack([]), lambda m: m.stack([A, A.T]), lambda m: m.stack([A, A], axis=3),
            lambda m: m.stack([A], axis=-4)],
  "split": [lambda m: m.split(A, 4), lambda m: m.split(A, 0), lambda m: m.split(A, 2, axis=3),
            lambda m: m.split(np.array(1), 1),
            lambda m: m.split(A, [1.5])],
  "array_split": [lambda m: m.array_split(A, 0), lambda m: m.array_split(A, -1),
                  lambda m: m.array_split(A, 2, axis=-3)],
  "hsplit": [lambda m: m.hsplit(np.array(1), 1), lambda m: m.hsplit(A, 2)],
  "vsplit": [lambda m: m.vsplit(np.ones(3), 1)],
  "dsplit": [lambda m: m.dsplit(A, 1)],
  "unstack": [lambda m: m.unstack(np.array(1)), lambda m: m.unstack(A, axis=2)],
  "pad": [lambda m: m.pad(A, -1), lambda m: m.pad(A, 1.5), lambda m: m.pad(A, ((1, 2),) * 3),
          lambda m: m.pad(A, 1, mode="foo"),
          lambda m: m.pad(A, [1, 2, 3]), lambda m: m.pad(A, np.uint8(1)),
          lambda m: m.pad(A, 1, constant_values=((1, 2),) * 3),
          lambda m: m.pad(A.astype(np.int8), 1, constant_values=1000)],
  "roll": [lambda m: m.roll(A, 1, axis=2), lambda m: m.roll(A, [1, 2], axis=[0, 0, 0]),
           lambda m: m.roll(np.array(3), 1, axis=0),
           lambda m: m.roll(A, [[1]], axis=[[0]])],
  "repeat": [lambda m: m.repeat(A, -1), lambda m: m.repeat(A, [1, 2]), lambda m: m.repeat(A, [1, -2], axis=0),
             lambda m: m.repeat(A, 2, axis=2), lambda m: m.repeat(A, [[1, 2]], axis=0),
             lambda m: m.repeat(np.array(3), 2, axis=1)],
  "tile": [lambda m: m.tile(A, -1), lambda m: m.tile(A, 1.5)],
  "moveaxis": [lambda m: m.moveaxis(A, 0, 2), lambda m: m.moveaxis(A, [0, 0], [0, 1]),
               lambda m: m.moveaxis(A, [0, 1], [0])],
  "swapaxes": [lambda m: m.swapaxes(A, 0, 2)],
  "transpose": [lambda m: m.transpose(A, (0,)), lambda m: m.transpose(A, (0, 0)), lambda m: m.transpose(A, (0, 2))],
  "reshape": [lambda m: m.reshape(A, (4,)), lambda m: m.reshape(A, (-1, -1))],
  "squeeze": [lambda m: m.squeeze(A, 0), lambda m: m.squeeze(A, 3)],
  "expand_dims": [lambda m: m.expand_dims(A, 3), lambda m: m.expand_dims(A, (0, 0))],
  "broadcast_to": [lambda m: m.broadcast_to(A, (3,)), lambda m: m.broadcast_to(A, (-1, 3)),
                   lambda m: m.broadcast_to(A, (4, 3))],
  "broadcast_arrays": [lambda m: m.broadcast_arrays(A, np.ones(4))],
  "matrix_transpose": [lambda m: m.matrix_transpose(np.ones(3))],
  "flip": [lambda m: m.flip(A, 2), lambda m: m.flip(np.array(1), 0)],
  "reductions": [lambda m: m.sum(A, axis=2), lambda m: m.max(np.zeros((0, 2))), lambda m: m.argmax(A, axis=(0, 1)),
                 lambda m: m.mean(A, axis=(0, 0)), lambda m: m.count_nonzero(A, axis=5)],
}


@pytest.mark.parametrize("name,i,f", [(n, i, f) for n, fs in BAD.items() for i, f in enumerate(fs)])
def test_bad_inputs_raise_numpys_exception(name, i, f):
  with pytest.raises(Exception) as want: f(np)
  with pytest.raises(type(want.value)) as got: f(mt)
  if name not in ("reductions", "reshape", "squeeze", "expand_dims", "transpose", "matrix_transpose", "hsplit"):
    assert name in str(got.value)


def test_unimplemented_pad_modes_name_the_mode():
  for mode in ("edge", "reflect", "wrap"):
    with pytest.raises(NotImplementedError, match=mode): mt.pad(A, 1, mode=mode)
