"""A catalogue of bad and awkward inputs: each raises what NumPy raises (ValueError for shapes and broadcasting,
numpy.exceptions.AxisError for axes, IndexError for indices, TypeError for dtypes, OverflowError for integers a
dtype cannot hold), at the call and not first when values are computed, or gives NumPy's result. Cases where
minitensor differs on purpose (unsupported dtypes) say so; known bugs are strict xfails."""
import math
import numpy as np
import pytest
from numpy.exceptions import AxisError
import minitensor as mt
import minitensor.testing as mtt

A = np.arange(6.0).reshape(2, 3)
I8 = np.array([-128, 0, 127], np.int8)


def ns(x): return mt if isinstance(x, mt.Tensor) else np


# ---------------------------------------------------------------------- errors, with NumPy as the oracle
# (id, f(m) with m the numpy or the minitensor module, the exception NumPy raises)
RAISES = [
  # shapes and broadcasting
  ("add_not_broadcastable", lambda m: m.add(m.asarray(A), m.asarray(np.zeros(4))), ValueError),
  ("reshape_wrong_size", lambda m: m.asarray(A).reshape(4, 2), ValueError),
  ("reshape_two_unknowns", lambda m: m.asarray(A).reshape(-1, -1), ValueError),
  ("reshape_unknown_of_empty", lambda m: m.asarray(np.zeros(0)).reshape(0, -1), ValueError),
  ("matmul_core_mismatch", lambda m: m.matmul(m.asarray(A), m.asarray(A)), ValueError),
  ("matmul_scalar", lambda m: m.matmul(m.asarray(A), m.asarray(2.0)), ValueError),
  ("concatenate_ndim_mismatch", lambda m: m.concatenate([m.asarray(A), m.asarray(np.zeros(3))]), ValueError),
  ("concatenate_size_mismatch", lambda m: m.concatenate([m.asarray(A), m.asarray(A.T)], axis=0), ValueError),
  ("concatenate_zero_dim", lambda m: m.concatenate([m.asarray(1.0), m.asarray(2.0)]), ValueError),
  ("stack_different_shapes", lambda m: m.stack([m.asarray(A), m.asarray(A.T)]), ValueError),
  ("broadcast_to_incompatible", lambda m: m.broadcast_to(m.asarray(A), (3, 3)), ValueError),
  ("broadcast_to_fewer_dims", lambda m: m.broadcast_to(m.asarray(A), (3,)), ValueError),
  ("zeros_negative_size", lambda m: m.zeros((2, -1)), ValueError),
  ("where_not_broadcastable", lambda m: m.where(m.asarray(np.array([True, False])), m.asarray(A), 0), ValueError),
  ("split_unequal", lambda m: m.split(m.asarray(np.arange(5)), 2), ValueError),
  ("squeeze_axis_not_one", lambda m: m.squeeze(m.asarray(A), 0), ValueError),
  ("transpose_wrong_length", lambda m: m.transpose(m.asarray(A), (0,)), ValueError),
  ("transpose_repeated_axis", lambda m: m.transpose(m.asarray(A), (0, 0)), ValueError),
  ("std_of_ints_to_an_array", lambda m: m.std(m.asarray(I8.reshape(3, 1)), axis=0, dtype=np.int8), TypeError),
  ("std_of_ints_keepdims", lambda m: m.std(m.asarray(I8), dtype=np.int32, keepdims=True), TypeError),
  ("var_of_bool_with_dtype_bool", lambda m: m.var(m.asarray(I8 > 0), dtype=bool), TypeError),
  ("add_python_ints_past_int64", lambda m: m.add(2**63, 1), OverflowError),
  ("max_of_empty", lambda m: m.max(m.asarray(np.zeros((0, 3))), axis=0), ValueError),
  ("argmin_of_empty", lambda m: m.argmin(m.asarray(np.zeros(0))), ValueError),
  ("ragged_nested_list", lambda m: m.asarray([[1, 2], [3]]), ValueError),
  ("ragged_deeper_list", lambda m: m.asarray([[1.0, 2.0], [3.0, [4.0]]]), ValueError),
  ("tensordot_mismatch", lambda m: m.tensordot(m.asarray(A), m.asarray(A), axes=1), ValueError),
  ("pad_negative_width", lambda m: m.pad(m.asarray(A), -1), ValueError),
  ("int_to_negative_power", lambda m: m.asarray(np.arange(3)) ** -1, ValueError),
  ("truth_of_many", lambda m: bool(m.asarray(A)), ValueError),
  # axes
  ("sum_axis_out_of_range", lambda m: m.sum(m.asarray(A), axis=2), AxisError),
  ("sum_negative_axis_out_of_range", lambda m: m.asarray(A).sum(axis=-3), AxisError),
  ("expand_dims_out_of_range", lambda m: m.expand_dims(m.asarray(A), 5), AxisError),
  ("flip_out_of_range", lambda m: m.flip(m.asarray(A), 3), AxisError),
  ("concatenate_axis_out_of_range", lambda m: m.concatenate([m.asarray(A), m.asarray(A)], axis=2), AxisError),
  # concatenate checks as NumPy: the first array's rank, the axis against it (AxisError), then the other ranks
  ("concatenate_bad_axis_mixed_ndims", lambda m: m.concatenate([m.zeros(2), m.zeros((2, 2))], axis=3), AxisError),
  ("concatenate_bad_axis_then_0d", lambda m: m.concatenate([m.zeros(2), m.zeros(())], axis=3), AxisError),
  ("concatenate_0d_after_1d", lambda m: m.concatenate([m.zeros(2), m.zeros(())], axis=0), ValueError),
  ("concatenate_0d_first_bad_axis", lambda m: m.concatenate([m.zeros(()), m.zeros(2)], axis=3), ValueError),
  ("cumsum_of_0d_axis_1", lambda m: m.cumsum(m.asarray(3.0), axis=1), AxisError),
  ("transpose_axis_out_of_range", lambda m: m.transpose(m.asarray(A), (0, 2)), AxisError),
  ("moveaxis_out_of_range", lambda m: m.moveaxis(m.asarray(A), 0, 2), AxisError),
  ("argmax_axis_out_of_range", lambda m: m.argmax(m.asarray(A), axis=-3), AxisError),
  ("sum_duplicate_axes", lambda m: m.sum(m.asarray(A), axis=(0, -2)), ValueError),
  ("argmax_tuple_axis", lambda m: m.argmax(m.asarray(A), axis=(0,)), TypeError),
  ("sum_float_axis", lambda m: m.sum(m.asarray(A), axis=1.0), TypeError),
  # indices
  ("index_out_of_bounds", lambda m: m.asarray(A)[2], IndexError),
  ("negative_index_out_of_bounds", lambda m: m.asarray(A)[:, -4], IndexError),
  ("too_many_indices", lambda m: m.asarray(A)[0, 0, 0], IndexError),
  ("float_index", lambda m: m.asarray(A)[1.5], IndexError),
  ("numpy_float_index", lambda m: m.asarray(A)[np.float64(1)], IndexError),
  ("float_array_index", lambda m: m.asarray(A)[np.array([1.0])], IndexError),
  ("index_array_out_of_bounds", lambda m: m.asarray(A)[np.array([0, -3])], IndexError),
  ("mask_wrong_shape", lambda m: m.asarray(A)[np.array([True, False, True])], IndexError),
  ("two_ellipses", lambda m: m.asarray(A)[..., ...], IndexError),
  ("string_index", lambda m: m.asarray(A)["a"], IndexError),
  ("index_arrays_not_broadcastable", lambda m: m.asarray(A)[np.array([0, 1]), np.array([0, 1, 2])], IndexError),
  ("index_of_empty_axis", lambda m: m.asarray(np.zeros((0, 3)))[0], IndexError),
  # dtypes
  ("bitwise_and_of_floats", lambda m: m.bitwise_and(m.asarray(A), m.asarray(A)), TypeError),
  ("invert_float", lambda m: m.invert(m.asarray(A)), TypeError),
  ("shift_float", lambda m: m.left_shift(m.asarray(A), 1), TypeError),
  ("negative_bool", lambda m: m.negative(m.asarray(np.array([True]))), TypeError),
  ("subtract_bools", lambda m: m.subtract(m.asarray(np.array([True])), m.asarray(np.array([False]))), TypeError),
  ("unknown_dtype_name", lambda m: m.zeros(3, dtype="notadtype"), TypeError),
  ("float_tensor_as_list_index", lambda m: [1, 2, 3][m.asarray(np.float64(1.0))], TypeError),
  ("add_none", lambda m: m.asarray(A) + None, TypeError),
  ("add_string", lambda m: m.asarray(A) + "a", TypeError),
  ("int_of_many", lambda m: int(m.asarray(A)), TypeError),
  ("len_of_0d", lambda m: len(m.asarray(1.0)), TypeError),
  ("iterate_0d", lambda m: iter(m.asarray(1.0)), TypeError),
  # integers a dtype cannot hold
  ("int8_plus_300", lambda m: m.asarray(I8) + 300, OverflowError),
  ("uint8_plus_minus_1", lambda m: m.asarray(I8.astype(np.uint8)) - (-1), OverflowError),
  ("int64_plus_2_70", lambda m: m.asarray(np.arange(3)) + 2**70, OverflowError),
  ("int64_times_2_64", lambda m: m.asarray(np.arange(3)) * 2**64, OverflowError),
  ("int32_maximum_2_40", lambda m: m.maximum(m.asarray(np.arange(3, dtype=np.int32)), 2**40), OverflowError),
  # other
  ("arange_step_0", lambda m: m.arange(0, 5, 0), ZeroDivisionError),
  ("split_into_0", lambda m: m.split(m.asarray(np.arange(5)), 0), ZeroDivisionError),
]


@pytest.mark.parametrize("f, exc", [c[1:] for c in RAISES], ids=[c[0] for c in RAISES])
def test_raises_what_numpy_raises_at_the_call(f, exc):
  with pytest.raises(exc): f(np)          # the oracle
  with pytest.raises(exc): f(mt)          # the call itself raises: nothing is left for realize to discover


# minitensor has no string, object or datetime dtypes: TypeError where NumPy would make an array
UNSUPPORTED = [
  ("object_ndarray", lambda: mt.asarray(np.array([1, None], dtype=object))),
  ("string_ndarray", lambda: mt.asarray(np.array(["a"]))),
  ("datetime_ndarray", lambda: mt.asarray(np.array(["2024-01-01"], dtype="datetime64[D]"))),
  ("astype_string", lambda: mt.asarray(A).astype("U")),
  ("none", lambda: mt.asarray(None)),
]


@pytest.mark.parametrize("f", [c[1] for c in UNSUPPORTED], ids=[c[0] for c in UNSUPPORTED])
def test_unsupported_dtypes_raise_type_error(f):
  with pytest.raises(TypeError, match="(support|understood|cannot make)"): f()


@pytest.mark.parametrize("x", [2**70, [1, 2**70], -2**64])
def test_python_int_past_int64_is_rejected(x):
  # NumPy makes an object array; minitensor has no object dtype
  with pytest.raises((TypeError, OverflowError)): mt.asarray(x)


def test_python_int_past_int64_into_int64_overflows():
  with pytest.raises(OverflowError): np.asarray(2**70, dtype=np.int64)
  try: mt.asarray(2**70, dtype=np.int64)
  except OverflowError: return
  except TypeError: raise AssertionError("TypeError, not OverflowError")


@pytest.mark.parametrize("value, dtype", [(300, np.int8), (-1, np.uint8), (2**70, np.int64)])
def test_full_with_out_of_range_int_overflows(value, dtype):
  with pytest.raises(OverflowError): np.full(3, value, dtype=dtype)
  with pytest.raises(OverflowError): mt.full(3, value, dtype=dtype)


def _wide(m, n: int, dt=np.float64):
  """n elements that need no memory (a broadcast), in NumPy or minitensor."""
  return m.broadcast_to(m.zeros(1, dt), (n,))


# every way to make a shape: NumPy refuses those whose byte size reaches 2**63 (ValueError "array is too big"; where
# it first copies a broadcast input, MemoryError); minitensor refuses them when the graph is built (the IR's size
# rule, uop.fits), naming the function called and the shape, where before some built and then looped 2**64 times
TOO_BIG = {
  "zeros": lambda m: m.zeros((2**40, 2**40)), "ones": lambda m: m.ones((2**31, 2**31, 2)),
  "full": lambda m: m.full((2**62, 4), 1.0), "empty": lambda m: m.empty((2**62, 2)),
  "reshape": lambda m: m.asarray(np.ones(0)).reshape(2**40, 2**40, 0),
  "broadcast_to": lambda m: m.broadcast_to(m.asarray(1.0), (2**60,)),
  "tile": lambda m: m.tile(m.zeros(2), 2**62), "repeat": lambda m: m.repeat(_wide(m, 2**40), 2**30),
  "pad": lambda m: m.pad(m.zeros(2), 2**62),
  "concatenate": lambda m: m.concatenate([_wide(m, 2**62, np.int8), _wide(m, 2**62, np.int8)]),
  "stack": lambda m: m.stack([_wide(m, 2**62, np.int8)] * 2),
  "add": lambda m: _wide(m, 2**40)[:, None] + _wide(m, 2**40),
  "where": lambda m: m.where(_wide(m, 2**40, bool)[:, None], _wide(m, 2**40), 1.0),
  "outer": lambda m: m.outer(_wide(m, 2**40), _wide(m, 2**40)),
  "matmul": lambda m: _wide(m, 2**40)[:, None] @ _wide(m, 2**40)[None, :],
  "einsum": lambda m: m.einsum("i,j->ij", _wide(m, 2**40), _wide(m, 2**40)),
  "tensordot": lambda m: m.tensordot(_wide(m, 2**40), _wide(m, 2**40), 0),
}


@pytest.mark.parametrize("name", list(TOO_BIG))
def test_shape_whose_size_overflows_raises_at_the_call(name):
  with pytest.raises((ValueError, MemoryError)), np.errstate(over="ignore"): TOO_BIG[name](np)   # (pad's sums)
  with pytest.raises(ValueError, match=rf"^{name}: array is too big; .* shape \("): TOO_BIG[name](mt)


def test_shapes_up_to_the_size_limit_are_built():
  """Just below NumPy's limit (2**63 - 1 bytes, or an empty array) a shape is made, lazily, as NumPy's view is (a
  lazy sum of 2**62 elements too, which NumPy would have to allocate)."""
  for m in (np, mt):
    assert m.broadcast_to(m.zeros(1, np.int8), (2**63 - 1,)).shape == (2**63 - 1,)
    assert m.zeros((0, 2**62), np.int8).shape == (0, 2**62)
  assert (_wide(mt, 2**31, np.int8)[:, None] + _wide(mt, 2**31, np.int8)).shape == (2**31, 2**31)


@pytest.mark.parametrize("f", [lambda m: m.ones((1,) * 65), lambda m: m.asarray(np.ones(1)).reshape((1,) * 65),
                               lambda m: m.expand_dims(m.ones((1,) * 64), 0)], ids=["ones", "reshape", "expand_dims"])
def test_more_than_64_dimensions_raise_at_the_call(f):
  with pytest.raises(ValueError): f(np)
  with pytest.raises(ValueError): f(mt)


# ---------------------------------------------------------------------- results, with NumPy as the oracle
NAN = np.array([[1.0, np.nan, -np.inf], [np.inf, -0.0, 2.0]])
RESULTS = [
  # NaN and inf
  ("max_min_propagate_nan", lambda x: (x.max(axis=0), x.min(axis=1), x.max()), (NAN,)),
  ("argmax_argmin_find_first_nan", lambda x: (x.argmax(axis=1), x.argmin(axis=0), x.argmax()), (NAN,)),
  # dtype corners
  ("bool_squared_is_int8", lambda x: (x ** 2, x ** 3, x ** 2.0, ns(x).power(x, 2)), (np.array([True, False]),)),
  ("cumsum_of_0d_is_1d", lambda x: (ns(x).cumsum(x, axis=0), ns(x).cumprod(x, axis=-1), x.cumsum(axis=0),
                                    ns(x).cumsum(x)), (np.array(3.0),)),
  ("big_endian_results", lambda x: (x + 1, -x, x.sum(), ns(x).sqrt(x), x[1:] * 1, x.astype(np.float64)),
   (np.arange(4.0, dtype=">f4"),)),
  ("inf_arithmetic", lambda x: (x - x, x * 0, x / x, x + np.inf), (NAN,)),
  ("float_division_by_zero", lambda x: (x / 0.0, -x / 0.0, x // 0.0, x % 0.0), (NAN,)),
  ("int_division_by_zero", lambda x: (x // 0, x % 0, x // np.zeros(3, np.int8), x % np.zeros(3, np.int8)), (I8,)),
  ("int_min_by_minus_1", lambda x: (x // -1, x % -1, -x, abs(x)), (I8,)),
  ("fmax_fmin_ignore_nan", lambda x: (ns(x).fmax(x, 0.5), ns(x).fmin(x, 0.5)), (NAN,)),
  ("sum_of_infinities", lambda x: (x.sum(axis=0), x.sum(), x.prod(axis=1), x.mean(axis=1)), (NAN,)),
  ("comparisons_with_nan", lambda x: (x < 1, x == x, x != x, x >= np.nan), (NAN,)),
  ("classify", lambda x: (ns(x).isnan(x), ns(x).isinf(x), ns(x).isfinite(x), ns(x).sign(x)), (NAN,)),
  ("nan_to_bool", lambda x: (x.astype(bool), x.any(axis=1), x.all(axis=0)), (NAN,)),
  ("float_to_int_in_range", lambda x: (x * 1000).astype(np.int16), (np.array([0.0015, -2.9, 32.7, -0.0]),)),
  # empty arrays
  ("reductions_of_empty", lambda x: (x.sum(axis=0), x.prod(axis=0), x.any(axis=0), x.all(axis=0), x.sum()),
   (np.zeros((0, 3)),)),
  ("reductions_to_empty", lambda x: (x.sum(axis=1), x.max(axis=0)), (np.zeros((0, 3)),)),
  ("mean_of_empty_is_nan", lambda x: x.mean(), (np.zeros(0),)),
  ("matmul_of_empty_inner", lambda a, b: a @ b, (np.ones((2, 0), np.float32), np.ones((0, 3), np.float32))),
  ("matmul_of_empty_outer", lambda a, b: a @ b, (np.ones((0, 3)), np.ones((3, 2)))),
  ("concatenate_with_empty_piece", lambda a, b: ns(a).concatenate([a, b, a], axis=0),
   (np.ones((2, 3)), np.zeros((0, 3)))),
  ("index_empty", lambda x: (x[:, :0], x[[]], x[np.zeros(0, np.int64)]), (np.ones((2, 3)),)),
  ("reshape_empty", lambda x: x.reshape(3, 0, 5), (np.zeros((0, 3, 5)),)),
  # layouts and byte orders of the input arrays
  ("transposed_input", lambda x: (x + 1, x.sum(axis=0), x[1]), (np.arange(12.0).reshape(3, 4).T,)),
  ("fortran_order_input", lambda x: x * 2 - x[:, :1], (np.asfortranarray(np.arange(12.0).reshape(3, 4)),)),
  ("negative_stride_input", lambda x: (x * 2, x.max(axis=1), x[::-1]), (np.arange(24.0).reshape(4, 6)[::-1, ::-2],)),
  ("zero_stride_input", lambda x: (x + 1, x.sum(axis=0)), (np.broadcast_to(np.arange(3.0), (4, 3)),)),
  ("big_endian_float", lambda x: (x + 1, x.sum(axis=1), x[1]), (np.arange(6.0).reshape(2, 3).astype(">f8"),)),
  ("big_endian_int", lambda x: (x * 3, x.max()), (np.arange(-3, 3, dtype=">i4"),)),
  ("read_only_input", lambda x: (x + 1, x[::-1]), (np.arange(5.0).copy(),)),
  # many dimensions
  ("32_dimensions", lambda x: (x + 1, x.sum(), x.sum(axis=(0, 5, -1)), x.reshape(-1), x.transpose(), x[(0,) * 31]),
   (np.arange(2.0).reshape((2,) + (1,) * 31),)),
  ("64_dimensions", lambda x: (x * 2, x.sum(axis=-1)), (np.ones((1,) * 64),)),
  # large values
  ("float32_plus_huge_python_int", lambda x: (x + 2**70, x * 2**64), (np.arange(3, dtype=np.float32),)),
  ("int64_extremes_wrap", lambda x: (x + 1, x * 2, x - x[::-1]), (np.array([2**63 - 1, -2**63, 0]),)),
  ("uint8_wraps", lambda x: (x + np.uint8(200), x * 3, x - 1), (np.array([0, 100, 255], np.uint8),)),
  # dtype=bool reductions: NumPy adds bools with OR and multiplies with AND
  ("reductions_with_dtype_bool",
   lambda x: (x.sum(axis=0, dtype=bool), x.sum(dtype=bool), x.prod(axis=1, dtype=bool), x.mean(axis=0, dtype=bool),
              x.var(axis=1, dtype=bool), ns(x).cumsum(x, 1, dtype=bool), ns(x).cumprod(x, 0, dtype=bool),
              ns(x).trace(x, dtype=bool)),
   (np.array([[0, 2, 0], [0, -1, 3]], np.int8),)),
  ("reductions_of_empty_with_dtype_bool",
   lambda x: (x.sum(axis=0, dtype=bool), x.prod(axis=0, dtype=bool), x.mean(axis=0, dtype=bool)),
   (np.zeros((0, 2)),)),
  ("std_of_ints_to_a_scalar", lambda x: (x.std(dtype=np.int16), x.std(dtype=bool), x.std(axis=(0, 1), dtype=np.uint8)),
   (np.array([[0, 7, 0], [0, -1, 3]], np.int8),)),
]


@pytest.mark.parametrize("f, args", [c[1:] for c in RESULTS], ids=[c[0] for c in RESULTS])
def test_gives_numpys_result(f, args):
  mtt.assert_matches_numpy(f, *args)


def test_read_only_input_stays_untouched():
  a = np.arange(5.0)
  a.setflags(write=False)
  t = mt.asarray(a)
  t[1:3] = -1.0
  assert t.numpy().tolist() == [0, -1, -1, 3, 4] and a.tolist() == [0, 1, 2, 3, 4]


def test_input_array_mutated_later_keeps_its_value_at_the_call():
  a = np.arange(4.0)
  t = mt.asarray(a)        # a copy: the values a has now
  r = t + 0                # NumPy computes this now, so must we
  expect = np.asarray(a) + 0
  a[0] = 9.0
  assert r.numpy().tolist() == t.numpy().tolist() == expect.tolist() == [0, 1, 2, 3]


def test_borrowed_input_is_a_view_and_results_never_alias_it():
  a = np.arange(8.0)
  t = mt.asarray(a, copy=False)         # the promise: a is not changed while results are pending
  assert np.shares_memory(np.asarray(t), a)
  for u in (t[2:5], t[::2], t.reshape(2, 4), t + 0):
    assert not np.shares_memory(np.asarray(u), a)
  with pytest.raises(ValueError, match="copy=False"): mt.asarray(a[::2], copy=False)
  with pytest.raises(ValueError, match="copy=False"): mt.asarray(a, dtype=np.float32, copy=False)


# ---------------------------------------------------------------------- Python and NumPy scalars of every type
SCALARS = [True, 3, -2, 2.5, -0.0, math.inf, np.float32(1.5), np.float64(-0.5), np.int8(-3), np.uint8(200), np.int64(7),
           np.bool_(False)]


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "float32", "float64"])
def test_mixing_with_scalars_of_every_type(dtype):
  x = np.array([0, 1, 1, 0], dtype=dtype)
  def f(a):
    out = []
    for s in SCALARS:
      if a.dtype == np.uint8 and isinstance(s, int) and not isinstance(s, (bool, np.integer)) and s < 0:
        continue  # OverflowError
      out += [a + s, s * a, ns(a).maximum(s, a)]
    return tuple(out)
  mtt.assert_matches_numpy(f, x)


def test_mixing_tensors_with_ndarrays():
  b = np.arange(3, dtype=np.float32)           # stays an ndarray on minitensor's side too
  mtt.assert_matches_numpy(lambda a: (a + b, b - a, a * b.astype(np.int16), ns(a).where(b > 0, a, b)),
                           np.arange(6, dtype=np.int8).reshape(2, 3))
  t, b = mt.asarray(np.arange(3, dtype=np.int8)), np.arange(3, dtype=np.float32)
  assert isinstance(t + b, mt.Tensor) and (t + b).dtype == np.float32
  assert isinstance(mt.add(b, t), mt.Tensor) and mt.maximum(b, t).numpy().tolist() == [0, 1, 2]


@pytest.mark.parametrize("f", [lambda t: np.arange(3.0) + t, lambda t: np.exp(t), lambda t: np.float64(2) * t,
                               lambda t: np.add(t, 1)],
                         ids=["ndarray_plus_tensor", "np_exp_tensor", "numpy_scalar_times_tensor", "np_add_tensor"])
def test_numpy_operands_on_the_left_give_tensors(f):
  t = mt.asarray(np.arange(3.0))
  r = f(t)
  assert isinstance(r, mt.Tensor)
  np.testing.assert_allclose(r.numpy(), f(np.arange(3.0)), rtol=1e-12)


# ---------------------------------------------------------------------- regressions and known bugs
@pytest.mark.parametrize("f", [lambda x: x + 1, lambda x: ns(x).exp(x),
                               lambda x: ns(x).broadcast_to(x[:, :1] * 2, (0, 5))],
                         ids=["add", "exp", "broadcast_of_computed"])
def test_size0_result_of_computation_realizes(f):
  mtt.assert_matches_numpy(f, np.zeros((0, 3)))


def test_var_with_ddof_past_n_is_nan():
  mtt.assert_matches_numpy(lambda x: (x.var(ddof=3), x.std(ddof=4)), np.ones(2))


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="an integer array to a negative integer power from an array: "
                   "NumPy raises ValueError, minitensor silently computes 0 (the error depends on the data, so a lazy "
                   "library must check at realize or define a value)")
def test_int_array_to_negative_array_power():
  mtt.assert_matches_numpy(lambda a, b: a ** b, np.arange(3), np.array([-1, 1, 2]))


@pytest.mark.parametrize("name", ["greater", "equal", "less_equal", "not_equal", "add", "subtract", "multiply",
                                  "maximum", "logical_and", "floor_divide", "divide", "power", "arctan2"])
@pytest.mark.parametrize("a, b", [(2, 2), (1, 2), (True, 2), (1.5, 2), (True, False), (-3, 2.5), (2**63, 1),
                                  (-1, 2**63), (3, -2)])
def test_python_scalars_only(name, a, b):
  """With only Python scalars NumPy gives them its default dtypes (int64, float64, bool): minitensor returns a 0-d
  Tensor with the value and dtype of NumPy's scalar result, or raises NumPy's exception type."""
  with np.errstate(all="ignore"):
    try: want = getattr(np, name)(a, b)
    except (TypeError, ValueError, OverflowError) as e:
      with pytest.raises(type(e)): getattr(mt, name)(a, b)
      return
    got = getattr(mt, name)(a, b)
    assert isinstance(got, mt.Tensor) and got.shape == () and got.dtype == want.dtype, (got, want)
    if name == "arctan2": np.testing.assert_array_max_ulp(np.asarray(got), want, maxulp=1)   # NumPy's SIMD atan2
    else: np.testing.assert_array_equal(np.asarray(got), want)


# ---------------------------------------------------------------------- the environment and the compiler
@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
  """An empty disk cache and empty memory caches, so the next realization must compile."""
  from collections import OrderedDict
  from minitensor.backend import keys, realize, runtime
  for v in ("MINITENSOR_CC", "MINITENSOR_NOCACHE", "MINITENSOR_CACHE_BYTES"): monkeypatch.delenv(v, raising=False)
  monkeypatch.setenv("MINITENSOR_CACHE_DIR", str(tmp_path / "cache"))
  monkeypatch.setattr(runtime, "_loaded", {})
  monkeypatch.setattr(realize, "_cache", OrderedDict())
  monkeypatch.setattr(keys, "_programs", {})
  return tmp_path / "cache"


@pytest.mark.parametrize("value", ["1 gigabyte", "1.5G", "-1", "G", "1GBs", "0x10"])
def test_bad_cache_bytes_raises_value_error_before_compiling(fresh_cache, monkeypatch, value):
  from minitensor.backend.runtime import stats
  monkeypatch.setenv("MINITENSOR_CACHE_BYTES", value)
  c0 = stats.compiles
  with pytest.raises(ValueError, match=f"MINITENSOR_CACHE_BYTES={value!r}"):
    np.asarray(mt.exp(mt.asarray(A)) * 3.0)
  assert stats.compiles == c0 and not list(fresh_cache.rglob("*.so"))


@pytest.mark.parametrize("value, n", [("1GB", 10 ** 9), ("1G", 1 << 30), ("1gib", 1 << 30), ("512MiB", 512 << 20),
                                      ("64k", 1 << 16), ("2 KB", 2000), ("100", 100), ("7b", 7), ("", 1 << 30)])
def test_cache_bytes_suffixes(monkeypatch, value, n):
  from minitensor.backend.runtime import cache_limit
  monkeypatch.setenv("MINITENSOR_CACHE_BYTES", value)
  assert cache_limit() == n


@pytest.mark.parametrize("output", ["none", "not_a_library"])
def test_compiler_that_exits_0_without_a_library_raises_compile_error(fresh_cache, tmp_path, monkeypatch, output):
  from minitensor.backend.runtime import CompileError
  cc = tmp_path / "fake_cc"
  write = 'for a; do [ "$prev" = -o ] && echo junk > "$a"; prev=$a; done\n' if output == "not_a_library" else ""
  cc.write_text(f'#!/bin/sh\n[ "$1" = --version ] && exec echo fake-cc 1.0\n{write}exit 0\n')
  cc.chmod(0o755)
  monkeypatch.setenv("MINITENSOR_CC", str(cc))
  said = "wrote no shared object" if output == "none" else "incomplete shared object"
  with pytest.raises(CompileError, match=said) as e:
    np.asarray(mt.exp(mt.asarray(A)) * 3.0)
  assert str(cc) in str(e.value) and not list(fresh_cache.rglob("*.so"))
