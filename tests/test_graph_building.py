"""Graph building's short paths (issue 16: recording a GEMM's or a softmax's graph cost more than NumPy's whole call):
they build the very nodes the general paths build, and common expressions take them. Counts, never times
(benchmarks/bench_build.py has the times)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
from minitensor import tensor as T
from minitensor.backend import uop as uop_mod
from minitensor.backend.debug import new_nodes
from minitensor.numpy_rules import broadcast_shapes

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64, np.complex64]
UFUNCS = [np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.maximum, np.less, np.equal,
          np.bitwise_and, np.power, np.arctan2, np.logical_xor]
UNARY = [np.exp, np.sqrt, np.negative, np.absolute, np.isnan, np.invert, np.sign, np.square]
SCALARS = [0, 1, -1, 300, 2**40, 1.5, -0.0, float("nan"), True, 2j]
SHAPES = st.lists(st.integers(1, 3), max_size=3).map(tuple)


def _either(f):
  """f()'s result, or the type of the exception it raised."""
  try: return f()
  except Exception as e:  # noqa: BLE001  (any exception: it must be the same on both paths)
    return type(e)


def _same(fast, general) -> None:
  if isinstance(general, type): assert fast is general
  else: assert fast.uop is general.uop


@given(uf=st.sampled_from(UFUNCS), da=st.sampled_from(DTYPES), db=st.sampled_from(DTYPES), sa=SHAPES, sb=SHAPES,
       s=st.sampled_from(SCALARS))
def test_fast_paths_build_the_general_paths_nodes(uf, da, db, sa, sb, s):
  a, b = mt.asarray(np.ones(sa, da)), mt.asarray(np.ones(sb, db))
  for ops in ((a, b), (a, s), (s, b)):
    _same(_either(lambda: T.apply_ufunc(uf, *ops)), _either(lambda: T._apply(uf, ops, None)))


@given(uf=st.sampled_from(UNARY), d=st.sampled_from(DTYPES), shape=SHAPES)
def test_unary_fast_path_builds_the_general_paths_node(uf, d, shape):
  a = mt.asarray(np.ones(shape, d))
  _same(_either(lambda: T.apply_ufunc(uf, a)), _either(lambda: T._apply(uf, (a,), None)))


@given(s=st.lists(st.integers(0, 3), max_size=4).map(tuple), t=st.lists(st.integers(0, 3), max_size=4).map(tuple))
def test_broadcast_shapes_of_two_is_numpys(s, t):
  try: want = np.broadcast_shapes(s, t)
  except ValueError:
    with pytest.raises(ValueError, match=r"^op: operands could not be broadcast together"):
      broadcast_shapes(s, t, op="op")
  else: assert broadcast_shapes(s, t) == want


@pytest.fixture
def counted(monkeypatch):
  """Calls of the full type rule (uop.infer), of apply_ufunc's general path and of new nodes, from here on."""
  n = {"infer": 0, "apply": 0}
  infer, apply = uop_mod.infer, T._apply
  def count(key, f):
    def g(*a):
      n[key] += 1
      return f(*a)
    return g
  monkeypatch.setattr(uop_mod, "infer", count("infer", infer))
  monkeypatch.setattr(T, "_apply", count("apply", apply))
  return n


EXPRESSIONS = {   # (expression, the nodes it records)
  "matmul": (lambda a, b, x: a @ b, 7),          # RESHAPE EXPAND, PERMUTE RESHAPE EXPAND, MUL, REDUCE
  "softmax": (lambda a, b, x: mt.nn.softmax(x, axis=-1), 12),
  "layernorm": (lambda a, b, x: (x - x.mean(-1, keepdims=True)) / mt.sqrt(x.var(-1, keepdims=True) + 1e-5), 20),
}


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_common_expressions_take_the_short_paths(name, counted):
  f, nodes = EXPRESSIONS[name]
  rng = np.random.default_rng(0)
  a, b, x = (mt.asarray(rng.standard_normal(s, dtype=np.float32)) for s in ((8, 5), (5, 6), (4, 7)))
  f(a, b, x)                                        # the first build meets its loops and constants
  counted.update(infer=0, apply=0)
  assert new_nodes(lambda: f(a, b, x)) == nodes and counted == {"infer": 0, "apply": 0}


def test_matmul_result_is_a_root_and_matches_numpy():
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
  r = mt.asarray(a) @ mt.asarray(b)
  assert r._link is None and r.uop.op is uop_mod.Ops.REDUCE     # no reshape of an unchanged shape: no view
  np.testing.assert_allclose(np.asarray(r), a @ b, rtol=1e-12)
  v = mt.asarray(a) @ mt.asarray(b[:, 0])                       # 1-D b: the added axis is removed by a reshape
  assert v.shape == (3,)
  np.testing.assert_allclose(np.asarray(v), a @ b[:, 0], rtol=1e-12)


def test_a_reduction_over_the_last_axes_needs_no_permute():
  x = mt.asarray(np.ones((2, 3, 4), np.float32))
  Ops = uop_mod.Ops
  r = x.max(axis=(1, 2), keepdims=True).uop                    # RESHAPE(REDUCE(the tensor's own node))
  assert r.op is Ops.RESHAPE and r.src[0].op is Ops.REDUCE and r.src[0].src[0] is x.uop
  assert x.max(axis=0).uop.src[0].op is Ops.PERMUTE
  np.testing.assert_array_equal(np.asarray(x.max(axis=(-1, -2), keepdims=True)), np.ones((2, 1, 1), np.float32))
