"""The IR: hash-consing, the weak cons table, and the type checker's errors (loop world and shape world)."""
import gc
import math
import pytest
from hypothesis import given
from hypothesis import strategies as st
from minitensor.backend import uop as uop_mod
from minitensor.backend.dtype import dtypes
from minitensor.backend.uop import AxisType, Ops, ParamArg, UOp, UOpError, buf, range_


def raises(match: str):
  return pytest.raises(UOpError, match=match)


# ---------------------------------------------------------------- hash-consing
def test_uoperror_is_valueerror():
  assert issubclass(UOpError, ValueError)


def test_equal_structure_is_same_object():
  i, j = range_(4, 0), range_(6, 1)
  assert range_(4, 0) is i
  assert range_(4, 0, AxisType.REDUCE) is not i
  assert range_(4, 1) is not i
  assert i * 6 + j is i * 6 + j
  assert UOp(Ops.ADD, (i, j)) is UOp(Ops.ADD, (i, j))
  assert UOp(Ops.ADD, (i, j)) is not UOp(Ops.ADD, (j, i))
  b = buf(0, 12)
  assert buf(0, 12) is b and buf(1, 12) is not b and buf(0, 12, dtypes.int32) is not b
  assert b.index(i * 3 + j % 3).load() is buf(0, 12).index(i * 3 + j % 3).load()
  assert b.reshape((3, 4)).permute((1, 0)) is b.reshape((3, 4)).permute((1, 0))
  assert b.reshape((3, 4)) is not b.reshape((4, 3))


def test_a_reshape_of_a_reshape_is_one_reshape():
  # (chains that end at the same shape are one graph, so one program; a realized reshape is a leaf and stays)
  import numpy as np
  b = buf(0, 24)
  assert b.reshape((2, 12)).reshape((4, 6)) is b.reshape((4, 6))
  assert b.reshape((2, 12)).reshape((24,)) is b
  assert b.reshape((2, 3, 4)).permute((1, 0, 2)).reshape((6, 4)).src[0].op is Ops.PERMUTE
  r = UOp(Ops.EXP2, (b,)).reshape((2, 12))
  r.data = np.zeros((2, 12), np.float32)
  try: assert r.reshape((4, 6)).src[0] is r
  finally: r.data = None
  with raises(r"^RESHAPE \(2, 12\) -> \(5,\)$"): b.reshape((2, 12)).reshape((5,))
  e = buf(1, 0)
  assert e.reshape((0, 3)).reshape((3, 0)).src[0].shape == (0, 3)     # (empty arrays: the rule's own checks)


@given(st.lists(st.integers(0, 5), max_size=4), st.sampled_from([dtypes.float32, dtypes.int64, dtypes.bool]))
def test_a_scalars_broadcast_is_its_reshape_and_expand(shape, dtype):
  # (UOp.broadcast skips the rules' checks: the same nodes, hash-consed, with the same dtype, shape and depth)
  shape, c = tuple(shape), UOp.const(7, dtype)
  got = c.broadcast(shape)                  # (made first: the plain builders must find the nodes it made)
  assert got.dtype is dtype and got.shape == shape
  assert got.depth == (0 if not shape else 1 if all(n == 1 for n in shape) else 2)
  assert c.reshape((1,) * len(shape)).expand(shape) is got
  assert c.broadcast(shape) is got


@given(st.lists(st.integers(0, 4), max_size=4), st.lists(st.integers(0, 4), max_size=4))
def test_broadcast_is_the_reshape_and_expand_of_numpys_rule(a, b):
  # (UOp.broadcast trusts its shape, numpy_rules.broadcast_shapes's: the nodes the plain builders make)
  from minitensor.numpy_rules import broadcast_shapes
  a, b = tuple(a), tuple(b)
  try: shape = broadcast_shapes(a, b)
  except ValueError: return
  x = buf(0, math.prod(a) or 1).reshape(a) if math.prod(a) else UOp.const(0.5, dtypes.float32).broadcast(a)
  got = x.broadcast(shape)
  assert got.shape == shape and got.dtype is x.dtype
  assert got is x.reshape((1,) * (len(shape) - len(a)) + a).expand(shape)


def test_broadcast_keeps_numpys_size_limit():
  x = UOp.const(1.0, dtypes.float64).broadcast((1, 1))
  with pytest.raises(ValueError, match="too big|maximum"): x.broadcast((2 ** 31, 2 ** 31))
  with pytest.raises(ValueError, match="too big|maximum"): UOp.const(1.0, dtypes.float64).broadcast((2 ** 31, 2 ** 31))


def test_const_identity_by_value_and_dtype():
  assert UOp.const(1.0) is UOp.const(1.0, dtypes.float32)
  assert UOp.const(1.0, dtypes.float32) is UOp.const(1, dtypes.float32)      # the arg is converted to the dtype
  assert UOp.const(1.0, dtypes.float64) is not UOp.const(1.0, dtypes.float32)
  assert UOp.const(1, dtypes.int8) is not UOp.const(1, dtypes.int32)
  assert UOp.const(1) is UOp.const(1, dtypes.index)
  assert UOp.const(True) is UOp.const(1, dtypes.bool)
  assert UOp.const(1, dtypes.bool) is not UOp.const(1, dtypes.int64)


def test_negative_zero_is_not_zero():
  z, nz = UOp.const(0.0), UOp.const(-0.0)
  assert z is not nz
  assert math.copysign(1.0, nz.arg) == -1.0 and math.copysign(1.0, z.arg) == 1.0
  assert UOp.const(-0.0) is nz
  assert UOp.const(-0.0, dtypes.float64) is not UOp.const(0.0, dtypes.float64)
  x = buf(0, 3).index(range_(3, 0)).load()
  assert x + nz is not x + z


def test_nan_consts_are_consed():
  n = UOp.const(math.nan)
  assert math.isnan(n.arg)
  assert UOp.const(float("nan")) is n                # nan != nan in Python, but the node is the same
  assert UOp.const(math.nan, dtypes.float64) is UOp.const(float("nan"), dtypes.float64)
  assert UOp.const(math.nan, dtypes.float64) is not n
  assert UOp.const(math.inf) is UOp.const(float("inf")) and UOp.const(math.inf) is not UOp.const(-math.inf)
  x = buf(0, 3).index(range_(3, 0)).load()
  assert x * UOp.const(math.nan) is x * UOp.const(float("nan"))


def test_int_consts_wrap_to_dtype():
  import numpy as np
  for d in (dtypes.int8, dtypes.uint8, dtypes.int32):
    for v in (300, -129, 2**31, -2**31 - 1):
      assert UOp.const(v, d).arg == int(np.array(v).astype(d.np))
      assert UOp.const(v, d) is UOp.const(int(np.array(v).astype(d.np)), d)


def test_weak_cons_table_does_not_grow():
  gc.collect()
  base = len(uop_mod._CONS)
  i = range_(7, 0)
  peak = 0
  for k in range(100_000):
    u = (i + k) * 3                                   # a new CONST, ADD, CONST and MUL every iteration
    if k % 10_000 == 0: peak = max(peak, len(uop_mod._CONS))
  del u
  gc.collect()
  assert peak < base + 1000, f"cons table grew to {peak} while only one expression was alive (base {base})"
  assert len(uop_mod._CONS) < base + 50


def test_weak_cons_table_after_simplify():
  from minitensor.backend.symbolic import simplify
  gc.collect()
  base = len(uop_mod._CONS)
  i, j = range_(7, 0), range_(5, 1)
  for k in range(5, 5005):                         # simplify caches results on the nodes: no cycles that outlive them
    u = simplify(((i * k + j) // k) % 7 + (i * k + j) % k)
  assert u is i + j
  del u
  gc.collect()
  assert len(uop_mod._CONS) < base + 50


def test_weak_cons_table_keeps_live_nodes():
  i = range_(9, 0)
  kept = [i + k for k in range(1000, 1100)]
  gc.collect()
  assert all(i + k is u for k, u in zip(range(1000, 1100), kept))


def test_cons_entry_of_a_dead_node_is_replaced():
  # a node that died leaves no entry; one rebuilt with the same key is a new live node that the table finds again
  i = range_(11, 0)
  u = i + 12345
  key = (Ops.ADD, u.src, None, None)
  assert uop_mod._CONS[key]() is u
  del u
  assert key not in uop_mod._CONS
  v = i + 12345
  assert uop_mod._CONS[key]() is v and i + 12345 is v
  uop_mod._CONS[key] = type(uop_mod._CONS[key])(i)     # a stale entry (as a racing thread might see it) ...
  del v
  assert key in uop_mod._CONS                         # ... is not removed by the old node's death
  uop_mod._CONS.pop(key)


def test_alu_type_check_memo_keeps_errors():
  # the remembered (op, dtype, arity) of a well-typed node never lets a malformed one through
  x, n = buf(0, 4, dtypes.float32), buf(1, 4, dtypes.int32)
  x + x; UOp(Ops.EXP, (x,)); n & n
  with raises(r"^EXP: takes 1 sources, got 2$"): UOp(Ops.EXP, (x, x))
  with raises(r"^ADD: takes 2 sources, got 1$"): UOp(Ops.ADD, (x,))
  with raises(r"^ADD: dtype mismatch float32 vs int32"): UOp(Ops.ADD, (x, n))
  with raises(r"^ADD: shape mismatch \(4,\) vs \(2, 2\)"): UOp(Ops.ADD, (x, x.reshape((2, 2))))
  with raises(r"^AND: needs an integer operand, got float32$"): UOp(Ops.AND, (x, x))
  with raises(r"^ADD: sources must be UOps$"): UOp(Ops.ADD, (x, 1))


# ---------------------------------------------------------------- loop-world type errors
f32 = lambda v: UOp.const(v, dtypes.float32)
i32 = lambda v: UOp.const(v, dtypes.int32)


def test_alu_shape_mismatch_names_op_and_shapes():
  x = buf(0, 12).reshape((3, 4))
  with raises(r"^MUL: shape mismatch \(3, 4\) vs \(\) \(broadcast with EXPAND\)$"): x * f32(2.0)
  with raises(r"^ADD: shape mismatch \(\) vs \(3, 4\)"): UOp(Ops.ADD, (f32(1.0), x))
  with raises(r"WHERE: shape mismatch"): UOp(Ops.WHERE, (UOp.const(True), x, f32(1.0)))
  # the broadcast that the message asks for is accepted
  assert (x * x.const_like(2.0)).shape == (3, 4)


def test_alu_dtype_mismatch():
  i = range_(4, 0)
  with raises(r"^ADD: dtype mismatch index vs float32 \(insert a CAST\)$"): i + f32(1.0)
  with raises(r"^MUL: dtype mismatch float32 vs float64"): UOp(Ops.MUL, (f32(1.0), UOp.const(1.0, dtypes.float64)))
  with raises(r"^CMPLT: dtype mismatch int32 vs int8"): UOp(Ops.CMPLT, (i32(1), UOp.const(1, dtypes.int8)))
  with raises(r"^WHERE: dtype mismatch float32 vs int32"): UOp(Ops.WHERE, (i < 2, f32(1.0), i32(2)))
  with raises(r"^ADD: result is index, not int32"): UOp(Ops.ADD, (i, i), dtype=dtypes.int32)


def test_where_needs_bool_condition():
  with raises(r"^WHERE: condition must be bool, got int32$"): i32(1).where(f32(1.0), f32(2.0))
  with raises(r"^WHERE: condition must be bool, got index$"): range_(3, 0).where(f32(1.0), f32(2.0))
  assert (range_(3, 0) < 1).where(f32(1.0), f32(2.0)).dtype is dtypes.float32


def test_arity():
  i = range_(4, 0)
  with raises(r"^ADD: takes 2 sources, got 1$"): UOp(Ops.ADD, (i,))
  with raises(r"^EXP: takes 1 sources, got 2$"): UOp(Ops.EXP, (f32(1.0), f32(1.0)))
  with raises(r"^WHERE: takes 3 sources, got 2$"): UOp(Ops.WHERE, (i < 1, i))


def test_store_and_load():
  b, i = buf(0, 4), range_(4, 0)
  with raises(r"^STORE: value int32 \(\) into float32 element$"): b.index(i).store(i32(1))
  with raises(r"^STORE: value index \(\) into float32 element$"): b.index(i).store(i)
  with raises(r"^STORE: \(INDEX, value\)$"): UOp(Ops.STORE, (b.index(i),))
  with raises(r"^LOAD: needs an INDEX to a scalar element$"): UOp(Ops.LOAD, (b,))
  with raises(r"^LOAD: needs an INDEX to a scalar element$"): UOp(Ops.LOAD, (i,))
  with raises(r"^STORE: needs an INDEX to a scalar element$"): UOp(Ops.STORE, (b, f32(1.0)))
  with raises(r"^LOAD: can only address a BUFFER or ALLOC, got RESHAPE$"):
    UOp(Ops.LOAD, (UOp(Ops.INDEX, (UOp(Ops.RESHAPE, (b.reshape((2, 2)),), (4,)), i)),))
  with raises(r"^LOAD: takes one INDEX$"): UOp(Ops.LOAD, (b.index(i), b.index(i)))
  assert b.index(i).load().dtype is dtypes.float32 and b.index(i).store(f32(1.0)).dtype is dtypes.void


def test_range_and_leaves():
  with raises(r"^RANGE: .*size >= 1"): range_(0, 0)
  with raises(r"^RANGE: "): range_(-3, 0)
  with raises(r"^RANGE: "): UOp(Ops.RANGE, (), (3, 0))
  with raises(r"^CONST: "): UOp(Ops.CONST, (), 1)
  with raises(r"^CONST: "): UOp(Ops.CONST, (), 1.0, dtypes.void)
  with raises(r"^BUFFER: "): UOp(Ops.BUFFER, (), 3)
  with raises(r"^ALLOC: "): UOp(Ops.ALLOC, (), ParamArg(0, dtypes.float32, (2, 2)))
  with raises(r"^END: "): UOp(Ops.END, (f32(1.0), i32(1)))
  with raises(r"^CAST: "): UOp(Ops.CAST, (range_(3, 0),))


@pytest.mark.parametrize("op", [Ops.EXP, Ops.LOG, Ops.SQRT, Ops.SIN, Ops.FLOOR, Ops.TRUNC])
def test_float_only_unary_on_ints(op):
  for c in (i32(2), range_(3, 0)):
    with raises(rf"^{op.name}: needs a float operand, got {c.dtype.name}$"): UOp(op, (c,))
  assert UOp(op, (f32(2.0),)).dtype is dtypes.float32


@pytest.mark.parametrize("op", [Ops.FDIV, Ops.ATAN2])
def test_float_only_binary_on_ints(op):
  with raises(rf"^{op.name}: needs a float operand, got int32$"): UOp(op, (i32(1), i32(2)))
  with raises(rf"^{op.name}: needs a float operand, got bool$"): UOp(op, (UOp.const(True), UOp.const(False)))


@pytest.mark.parametrize("op", [Ops.SHL, Ops.SHR, Ops.AND, Ops.OR, Ops.XOR])
def test_int_only_on_floats(op):
  with raises(rf"^{op.name}: needs an integer operand, got float32$"): UOp(op, (f32(1.0), f32(2.0)))
  with raises(rf"^{op.name}: needs an integer operand, got float64$"):
    UOp(op, (UOp.const(1.0, dtypes.float64), UOp.const(2.0, dtypes.float64)))
  assert UOp(op, (i32(1), i32(2))).dtype is dtypes.int32


def test_bool_rules():
  t = UOp.const(True)
  assert (t & t).dtype is dtypes.bool and (t | t).dtype is dtypes.bool and (t ^ t).dtype is dtypes.bool
  for op in (Ops.SHL, Ops.SHR):
    with raises(rf"^{op.name}: needs an integer operand, got bool$"): UOp(op, (t, t))
  for op in (Ops.ADD, Ops.MUL, Ops.FLOORDIV, Ops.FLOORMOD):
    with raises(rf"^{op.name}: not defined for bool$"): UOp(op, (t, t))
  assert (range_(3, 0) < 2).dtype is dtypes.bool


def test_index_rules():
  x, i = buf(0, 12).reshape((3, 4)), range_(3, 0)
  with raises(r"^INDEX: 3 indices for shape \(3, 4\)$"): x.index(i, i, i)
  with raises(r"^INDEX: .*integer.*float32"): x.index(f32(1.0))
  with raises(r"^INDEX: .*integer.*bool"): x.index(UOp.const(True))
  two = UOp.const(1).reshape((1,)).expand((2,))
  with raises(r"^INDEX: .*\(\) vs \(2,\)"): x.index(i, two)
  with raises(r"^INDEX: needs a value and at least one index$"): UOp(Ops.INDEX, (x,))
  assert x.index(i).shape == (4,) and x.index(i, i).shape == () and x.index(i32(1)).shape == (4,)
  assert x.index(two).shape == (2, 4)                      # a gathering INDEX: the index's shape comes first


# ---------------------------------------------------------------- shape-world type errors
X = lambda: buf(0, 12).reshape((3, 4))


def test_reshape_errors():
  with raises(r"^RESHAPE \(3, 4\) -> \(5,\)$"): X().reshape((5,))
  with raises(r"^RESHAPE \(3, 4\) -> \(2, 2, 2\)$"): X().reshape((2, 2, 2))
  with raises(r"^RESHAPE: takes one source, got 2$"): UOp(Ops.RESHAPE, (X(), X()), (12,))
  assert X().reshape((2, 6)).shape == (2, 6) and X().reshape((12, 1)).reshape((1, 12, 1)).shape == (1, 12, 1)


def test_reshape_negative_dim_names_op():
  with raises(r"RESHAPE"): X().reshape((3, -4))


def test_reshape_negative_dim_rejected():
  with pytest.raises(UOpError, match=r"\(3, -4\)"): X().reshape((3, -4))
  with pytest.raises(UOpError): X().reshape((-3, -4))


def test_permute_errors():
  with raises(r"^PERMUTE \(0, 0\) of \(3, 4\)$"): X().permute((0, 0))
  with raises(r"^PERMUTE \(0,\) of \(3, 4\)$"): UOp(Ops.PERMUTE, (X(),), (0,))
  with raises(r"^PERMUTE \(1, 2\) of \(3, 4\)$"): X().permute((1, 2))
  with raises(r"^PERMUTE \(0, 1, 2\) of \(3, 4\)$"): X().permute((0, 1, 2))
  assert X().permute((1, 0)).shape == (4, 3)


def test_expand_errors():
  with raises(r"^EXPAND \(3, 4\) -> \(3, 5\)$"): X().expand((3, 5))
  with raises(r"^EXPAND \(3, 4\) -> \(3, 4, 1\)$"): X().expand((3, 4, 1))
  with raises(r"^EXPAND \(3, 4\) -> \(4,\)$"): X().expand((4,))
  with raises(r"^EXPAND \(3, 4\) -> \(1, 4\)$"): X().expand((1, 4))          # shrinking an axis is not expanding
  assert X().reshape((3, 1, 4)).expand((3, 5, 4)).shape == (3, 5, 4)


def test_shrink_errors():
  with raises(r"^SHRINK \(\(0, 4\), \(0, 4\)\) of \(3, 4\)$"): X().shrink(((0, 4), (0, 4)))
  with raises(r"^SHRINK \(\(2, 1\), \(0, 4\)\) of \(3, 4\)$"): X().shrink(((2, 1), (0, 4)))
  with raises(r"^SHRINK \(\(-1, 2\), \(0, 4\)\) of \(3, 4\)$"): X().shrink(((-1, 2), (0, 4)))
  with raises(r"^SHRINK \(\(0, 3\),\) of \(3, 4\)$"): UOp(Ops.SHRINK, (X(),), ((0, 3),))
  assert X().shrink(((1, 3), (2, 2))).shape == (2, 0)


def test_reduce_errors():
  with raises(r"^REDUCE \(Ops.ADD, 3\) of \(3, 4\)$"): X().reduce(Ops.ADD, 3)
  with raises(r"^REDUCE \(Ops.ADD, -1\) of \(3, 4\)$"): X().reduce(Ops.ADD, -1)
  with raises(r"^REDUCE \(Ops.FDIV, 1\) of \(3, 4\)$"): X().reduce(Ops.FDIV, 1)
  with raises(r"^REDUCE \(Ops.ADD,\) of \(3, 4\)$"): UOp(Ops.REDUCE, (X(),), (Ops.ADD,))
  with raises(r"^REDUCE ADD of bool: cast first$"):
    UOp(Ops.REDUCE, (UOp.const(True).reshape((1,)).expand((3,)),), (Ops.ADD, 1))
  assert X().reduce(Ops.MAX, 1).shape == (3,) and X().reduce(Ops.ADD, 2).shape == () and \
    X().reduce(Ops.ADD, 0).shape == (3, 4)


def test_stack_errors():
  with raises(r"^STACK: sources differ: float32 \(3, 4\) vs float32 \(4, 3\)$"):
    UOp(Ops.STACK, (X(), X().permute((1, 0))))
  with raises(r"^STACK: sources differ: float32 \(3, 4\) vs int32 \(3, 4\)$"):
    UOp(Ops.STACK, (X(), buf(1, 12, dtypes.int32).reshape((3, 4))))
  with raises(r"^STACK: needs at least one source$"): UOp(Ops.STACK, ())
  assert UOp(Ops.STACK, (X(), X(), X())).shape == (3, 3, 4)


def test_const_like_broadcasts():
  x = X()
  c = x.const_like(2.0)
  assert c.shape == (3, 4) and c.dtype is dtypes.float32 and c.op is Ops.EXPAND
  assert (-x).shape == (3, 4)            # -x is x * -1, which needs the broadcast constant


def test_pad_and_flip_errors():
  with raises(r"^PAD .*\(3, 4\)$"): X().pad(((1, 1),), 0.0)
  with raises(r"^PAD .*\(-1, 1\).* of \(3, 4\)$"): X().pad(((-1, 1), (0, 0)), 0.0)
  with raises(r"^FLIP \(0, 0\) of \(3, 4\)$"): UOp(Ops.FLIP, (X(),), (0, 0))
  with raises(r"^FLIP \(2,\) of \(3, 4\)$"): UOp(Ops.FLIP, (X(),), (2,))
  assert X().pad(((1, 2), (0, 3)), 0.0).shape == (6, 7) and X().flip((0, 1)).shape == (3, 4)


def test_flip_builder_bad_axis_is_uoperror():
  with raises(r"^FLIP \(2,\) of \(3, 4\)$"): X().flip((2,))


def test_pad_value_is_part_of_the_structure():
  x = X()
  assert x.pad(((1, 1), (0, 0)), -0.0) is not x.pad(((1, 1), (0, 0)), 0.0)
  assert x.pad(((1, 1), (0, 0)), math.nan) is x.pad(((1, 1), (0, 0)), float("nan"))
  assert x.pad(((1, 1), (0, 0)), 0.0) is x.pad(((1, 1), (0, 0)), 0)


# ---------------------------------------------------------------- graph building's short paths
def test_no_op_movements_return_the_node():
  import numpy as np
  x = X()
  assert x.reshape((3, 4)) is x and x.reshape([3, 4]) is x and x.reshape((np.int64(3), 4)) is x
  assert x.expand((3, 4)) is x and x.permute((0, 1)) is x and x.permute([0, 1]) is x
  assert x.reshape([4, 3]) is x.reshape((4, 3)) and x.reshape((np.int64(4), 3)).arg == (4, 3)


def _full_rule(op, src, arg, dtype):
  """The result of the full type rule (uop.infer, which UOp() asks where a short rule gives no answer), or the
  UOpError it raises."""
  try: return uop_mod.infer(op, src, arg, dtype)
  except UOpError as e: return e


SHAPES = st.lists(st.integers(0, 3), max_size=4).map(tuple)


@given(shape=SHAPES, arg=st.one_of(SHAPES, st.lists(st.integers(-1, 4), max_size=4).map(tuple),
                                   st.lists(st.booleans(), max_size=3).map(tuple), st.just([2, 3]), st.just(None)),
       n=st.integers(-1, 5), red=st.sampled_from([Ops.ADD, Ops.MAX, Ops.FDIV]),
       dt=st.sampled_from([dtypes.float32, dtypes.bool, dtypes.int32]))
def test_common_rules_agree_with_the_full_rules(shape, arg, n, red, dt):
  # a short rule answers only what the full rule accepts, and answers it the same (dtype, shape)
  x = UOp.const(True if dt is dtypes.bool else 1, dt)
  x = x.reshape((1,) * len(shape)).expand(shape) if shape else x
  cases = [(Ops.RESHAPE, arg, None), (Ops.EXPAND, arg, None), (Ops.PERMUTE, arg, None), (Ops.REDUCE, (red, n), None),
           (Ops.REDUCE, arg, None), (Ops.CAST, None, dtypes.float64), (Ops.CAST, None, None),
           (Ops.RESHAPE, arg, dtypes.float32)]
  for op, a, d in cases:
    for src in ((x,), (x, x), ()):
      full = _full_rule(op, src, a, d)
      if (r := uop_mod.COMMON_RULES[op](src, a, d)) is not None: assert r == full, (op, src, a, d)
      if isinstance(full, UOpError): assert r is None, (op, a, d)


def test_const_like_keeps_broadcast_constants_without_data():
  import numpy as np
  import minitensor as mt
  x = X()
  ids = {id(x.const_like(2.5)) for _ in range(3)}
  gc.collect()
  assert len(ids) == 1 and x.const_like(2.5) is x.const_like(2.5)                  # nothing else holds it
  assert x.const_like(-0.0) is not x.const_like(0.0) and x.const_like(math.nan) is x.const_like(float("nan"))
  assert x.const_like(2) is x.const_like(2.0) and x.const_like(2).src[0].src[0].arg == 2.0   # float32 2.0
  t = mt.asarray(np.ones((3, 4), np.float32))
  np.testing.assert_array_equal(np.asarray(-t + mt.full((3, 4), 7.0, np.float32)), np.full((3, 4), 6, np.float32))
  assert all(u.data is None for u in uop_mod._LIKE.values())       # realized graphs leave no array on a constant


def test_const_like_cache_is_bounded(monkeypatch):
  monkeypatch.setattr(uop_mod, "LIKE_SIZE", 8)
  x = X()
  for k in range(50): x.const_like(float(k))
  assert len(uop_mod._LIKE) <= 8


def test_const_like_of_numpy_scalars_keeps_signed_zeros():
  import numpy as np
  x = X()
  assert x.const_like(np.float32(-0.0)).src[0].src[0] is UOp.const(-0.0, dtypes.float32)
  assert x.const_like(np.float32(0.0)).src[0].src[0] is UOp.const(0.0, dtypes.float32)
  assert x.const_like(np.float64(-0.0)) is not x.const_like(np.float64(0.0))


def test_bitcast_type_rule():
  f = buf(0, 4, dtypes.float32)
  assert f.bitcast(dtypes.int32).dtype is dtypes.int32 and f.bitcast(dtypes.float32) is f
  for x, bad in ((f, dtypes.int64), (f, dtypes.float16), (buf(0, 4, dtypes.int8), dtypes.bool),
                 (buf(0, 4, dtypes.float64), dtypes.complex64)):
    with pytest.raises(UOpError, match="BITCAST"): x.bitcast(bad)


def test_a_sinks_kept_order_holds_no_cycle():
  """A SINK keeps its toposort (the lowering stages ask it often); the order leaves the SINK out, so a dropped graph
  is freed at once by reference counting, not at the garbage collector's next run (hash-consing would otherwise hand
  its nodes, and the values they hold, to a new graph)."""
  import weakref
  a = UOp(Ops.BUFFER, (), ParamArg(987_654, dtypes.float32, (8,)))
  s = UOp(Ops.SINK, (((a * 2.0 + 1.0) * a).alu(Ops.EXP2),))
  first = s.toposort()
  assert first[-1] is s and s.toposort() == first and s.toposort() is not first     # (a new list each time)
  assert first[0] is a and len(first) == len(set(first))
  node = weakref.ref(first[-2])
  gc.disable()
  try:
    del s, first
    assert node() is None
  finally: gc.enable()
