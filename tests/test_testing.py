"""minitensor.testing: the strategies draw valid things, movement chains agree on Tensors and ndarrays (the fuzz
users get), and assert_matches_numpy passes on equal results and explains different ones."""
import math
import re
import numpy as np
import pytest
from hypothesis import Phase, example, find, given, settings
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt


# ---------------------------------------------------------------------- strategies
def found(strategy, condition):
  """An example of strategy meeting condition (asserting there is one), without shrinking it."""
  return find(strategy, condition, settings=settings(phases=[Phase.generate], database=None, max_examples=2000,
                                                          derandomize=True))


@given(mtt.shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
def test_shapes_respect_bounds(s):
  assert isinstance(s, tuple) and 1 <= len(s) <= 3 and all(type(n) is int and 2 <= n <= 4 for n in s)


def test_shapes_default_include_empty_and_size1_axes():
  found(mtt.shapes(), lambda s: 0 in s and 1 in s)
  found(mtt.shapes(), lambda s: s == ())


@given(mtt.arrays(mtt.dtypes(), mtt.shapes(max_dims=3)))
def test_arrays_are_contiguous_ndarrays_of_supported_dtypes(a):
  assert isinstance(a, np.ndarray) and a.dtype in mtt.DTYPES and a.flags.c_contiguous and a.flags.writeable


@pytest.mark.parametrize("dtype, special", [
  (np.float32, lambda a: np.isnan(a).any()), (np.float64, lambda a: np.isposinf(a).any() and np.isneginf(a).any()),
  (np.float32, lambda a: ((a == 0) & np.signbit(a)).any()), (np.int8, lambda a: -128 in a and 127 in a),
  (np.uint8, lambda a: 255 in a), (np.int64, lambda a: np.iinfo(np.int64).min in a),
  (np.bool_, lambda a: a.any() and not a.all())])
def test_arrays_draw_edge_values(dtype, special):
  found(mtt.arrays(dtype, (6,)), special)


def test_arrays_take_elements_and_shape_strategies():
  a = found(mtt.arrays(np.int32, mtt.shapes(min_dims=2, max_dims=2, min_side=1), elements=st.integers(0, 3)),
            lambda a: a.size > 3)
  assert a.ndim == 2 and a.dtype == np.int32 and a.min() >= 0 and a.max() <= 3


@given(st.data())
def test_broadcastable_shapes_broadcast(data):
  s = data.draw(mtt.shapes())
  t = data.draw(mtt.broadcastable_shapes(s))
  np.broadcast_shapes(s, t)


@given(st.data())
def test_axes_are_valid_numpy_axes(data):
  shape = data.draw(mtt.shapes(max_dims=4, min_side=1, max_side=2))
  ax = data.draw(mtt.axes(len(shape)))
  assert ax is None or type(ax) is int or (isinstance(ax, tuple) and len({a % len(shape) for a in ax}) == len(ax))
  np.sum(np.zeros(shape), axis=ax)                # NumPy accepts it


def test_axes_draw_every_form():
  for pred in (lambda a: a is None, lambda a: type(a) is int and a < 0,
               lambda a: isinstance(a, tuple) and len(a) >= 2 and min(a) < 0,
               lambda a: a == ()):
    found(mtt.axes(3), pred)
  found(mtt.axes(3, allow_none=False, allow_int=False, min_size=3, allow_negative=False),
        lambda a: sorted(a) == [0, 1, 2])


@given(st.data())
def test_movement_chains_know_their_shape(data):
  shape = data.draw(mtt.shapes())
  chain = data.draw(mtt.movement_chains(shape))
  assert chain.in_shape == shape
  y = chain.apply(np.zeros(shape, np.float32))
  assert isinstance(y, np.ndarray) and y.shape == chain.out_shape and \
    y.size <= max(mtt.MAX_CHAIN_SIZE, 2 * math.prod(shape))


KINDS = ["reshape", "transpose", "broadcast_to", "expand_dims", "squeeze", "pad", "flip", "concatenate", "stack", "["]


@pytest.mark.parametrize("kind", KINDS)
def test_movement_chains_draw_every_step(kind):
  found(mtt.movement_chains((2, 3)), lambda c: any(repr(s).startswith(kind) for s in c))


def test_movement_chains_draw_the_tricky_ones():
  found(mtt.movement_chains((3, 4)), lambda c: re.search(r"reshape\([^)]*-1", repr(c)))            # an inferred size
  found(mtt.movement_chains((3, 4)), lambda c: re.search(r"\[[^\]]*::-[23]", repr(c)))              # negative steps
  # with a slice of itself
  found(mtt.movement_chains((3, 4)), lambda c: re.search(r"concatenate\(\[x, x\[", repr(c)))
  found(mtt.movement_chains((3, 4)), lambda c: 0 in c.out_shape)


def test_movement_chain_repr_reads_like_code():
  chain = found(mtt.movement_chains((3, 4), max_steps=3), lambda c: len(c) == 3)
  assert repr(chain) == " -> ".join(map(repr, chain))
  assert repr(found(mtt.movement_chains((3, 4)), lambda c: len(c) == 0)) == "identity"
  assert repr(mtt.MovementChain([mtt._Call("reshape", (3, -1)), mtt._Call("transpose", (1, 0)),
                                 mtt._Index((slice(None, None, -2), slice(1, None)))], (3, 4), (2, 2))) == \
    "reshape(3, -1) -> transpose((1, 0)) -> [::-2, 1:]"


def check_chain(chain, x, forced: bool):
  """chain on x: as is (a view, or a kernel for pad/concatenate/stack), or (forced) copied by a kernel."""
  fn = chain if not forced else \
    lambda a: (lambda y: (mt if isinstance(y, mt.Tensor) else np).where(True, y, y))(chain.apply(a))
  mtt.assert_matches_numpy(fn, x, rtol=0, atol=0)


@st.composite
def chain_cases(draw):
  """(x, chain): random data of every dtype and a random movement chain for its shape."""
  shape = draw(mtt.shapes())
  return draw(mtt.arrays(mtt.dtypes(), shape)), draw(mtt.movement_chains(shape))


# found by this fuzz: a broadcast to size 0 of a computed (stacked) tensor failed to realize (UOpError, since fixed)
SIZE0 = (np.array([[0], [-128], [0], [-95]], np.int8),
         mtt.MovementChain([mtt._Join("stack", -1, None, True), mtt._Call("reshape", (-1, 2)),
                            mtt._Call("expand_dims", 1),
                            mtt._Call("broadcast_to", (1, 4, 0, 2)), mtt._Call("transpose", (-3, 2, 0, 3))],
                           (4, 1), (4, 0, 1, 2)))


# The users' fuzz: random data of every dtype through random movement chains, on Tensors and on ndarrays.
@settings(max_examples=max(200, 4 * settings.default.max_examples))
@given(chain_cases())
@example(SIZE0)
def test_movement_chains_agree_on_tensors_and_ndarrays(case):
  check_chain(case[1], case[0], forced=False)


@given(chain_cases())
@example(SIZE0)
def test_movement_chains_agree_when_a_kernel_copies_the_result(case):
  check_chain(case[1], case[0], forced=True)


# ---------------------------------------------------------------------- assert_matches_numpy
X = np.arange(12, dtype=np.float32).reshape(3, 4) / 7


def ns(x): return mt if isinstance(x, mt.Tensor) else np


def test_passes_on_equal_results():
  mtt.assert_matches_numpy(lambda a: ns(a).exp(a).sum(axis=1), X)
  mtt.assert_matches_numpy(lambda a, b: (a @ b, a.max(), a[1:, ::-1]), X, X.T)
  mtt.assert_matches_numpy(lambda a: a * np.nan, X)                       # NaN where NumPy has NaN
  mtt.assert_matches_numpy(lambda a: [a.astype(np.int8), (a > 0.5,)], X)   # nested lists and tuples


def test_fails_with_a_readable_message_and_the_c_source():
  def off_by_one(a): return a + 1 if isinstance(a, mt.Tensor) else a + 2
  with pytest.raises(AssertionError) as info:
    mtt.assert_matches_numpy(off_by_one, X)
  msg = str(info.value)
  assert "off_by_one" in msg and "arg0: float32 (3, 4)" in msg
  assert "12 of 12 element(s) differ" in msg and "at (0, 0): minitensor np.float32(1.0), NumPy np.float32(2.0)" in msg
  assert "generated C" in msg and re.search(r"void k\d+\(const float\* restrict data0", msg)


def test_reports_dtype_and_shape_differences():
  with pytest.raises(AssertionError, match=r"dtype: minitensor float64, NumPy float32"):
    mtt.assert_matches_numpy(lambda a: a.astype(np.float64) if isinstance(a, mt.Tensor) else a, X)
  with pytest.raises(AssertionError, match=r"shape: minitensor \(4, 3\), NumPy \(3, 4\)"):
    mtt.assert_matches_numpy(lambda a: a.T if isinstance(a, mt.Tensor) else a, X)
  with pytest.raises(AssertionError, match=r"result structure"):
    mtt.assert_matches_numpy(lambda a: (a, a) if isinstance(a, mt.Tensor) else a, X)


def test_tolerances_follow_the_dtype():
  tiny = lambda eps: lambda a: a * (1 + eps) if isinstance(a, mt.Tensor) else a
  mtt.assert_matches_numpy(tiny(1e-7), X)                                 # float32: 1e-5
  with pytest.raises(AssertionError, match="rtol=1e-05"): mtt.assert_matches_numpy(tiny(1e-4), X)
  mtt.assert_matches_numpy(tiny(1e-4), X, rtol=1e-3, atol=0)
  with pytest.raises(AssertionError, match="rtol=1e-10"): mtt.assert_matches_numpy(tiny(1e-8), X.astype(np.float64))
  mtt.assert_matches_numpy(tiny(1e-8), X.astype(np.float64), rtol={np.float64: 1e-6})
  with pytest.raises(AssertionError, match=r"1 of 1 element\(s\) differ \(compared exactly\)"):   # integers
    mtt.assert_matches_numpy(lambda a: a + 1 if isinstance(a, mt.Tensor) else a, np.array([2**40]))
  mtt.assert_matches_numpy(lambda a: ns(a).exp(a).astype(np.float64), X)   # float32 inputs: float32's tolerance


def test_exact_mode_compares_the_sign_of_zero():
  z = np.array([0.0, -0.0])
  mtt.assert_matches_numpy(lambda a: -a, z, rtol=0, atol=0)
  mtt.assert_matches_numpy(lambda a: -a if isinstance(a, mt.Tensor) else a, z)      # tolerant: -0.0 == 0.0
  with pytest.raises(AssertionError, match="2 of 2"):
    mtt.assert_matches_numpy(lambda a: -a if isinstance(a, mt.Tensor) else a, z, rtol=0, atol=0)


def test_nan_positions_must_match():
  with pytest.raises(AssertionError, match=r"at \(0,\): minitensor np.float64\(nan\), NumPy np.float64\(1.0\)"):
    mtt.assert_matches_numpy(lambda a: a * np.nan if isinstance(a, mt.Tensor) else a, np.array([1.0]))


def test_exceptions_must_be_of_the_same_type():
  mtt.assert_matches_numpy(lambda a: a.sum(axis=3), X)                                   # both AxisError
  mtt.assert_matches_numpy(lambda a: ns(a).bitwise_and(a, a), X)                          # both TypeError
  with pytest.raises(AssertionError, match="(?s)NumPy raised ValueError.*but minitensor returned a result"):
    mtt.assert_matches_numpy(lambda a: a.reshape(5) if not isinstance(a, mt.Tensor) else a, X)
  with pytest.raises(AssertionError, match="(?s)NumPy raised ValueError.*minitensor raised KeyError"):
    mtt.assert_matches_numpy(lambda a: a.reshape(5) if not isinstance(a, mt.Tensor) else {}[0], X)
  with pytest.raises(AssertionError, match=r"minitensor raised KeyError \(in fn\)"):
    mtt.assert_matches_numpy(lambda a: {}[0] if isinstance(a, mt.Tensor) else a, X)


def test_errors_only_at_realize_are_reported(monkeypatch):
  def late(*ts): raise ValueError("too big")
  monkeypatch.setattr(mt, "realize", late)
  with pytest.raises(AssertionError, match="minitensor raised ValueError only when computing the result"):
    mtt.assert_matches_numpy(lambda a: a.reshape(5) if not isinstance(a, mt.Tensor) else a + 1, X)
  with pytest.raises(AssertionError, match=r"minitensor raised ValueError \(when computing the result\)"):
    mtt.assert_matches_numpy(lambda a: a + 1, X)


def test_readme_example():
  def softmax(x):
    e = ns(x).exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

  @settings(max_examples=10)
  @given(data=st.data())
  def test_softmax_after_any_movement(data):
    shape = data.draw(mtt.shapes(min_dims=1, min_side=1))
    x = data.draw(mtt.arrays(np.float32, shape, elements=st.floats(-10, 10, width=32)))
    chain = data.draw(mtt.movement_chains(shape))
    mtt.assert_matches_numpy(lambda a: softmax(chain.apply(a)), x)
  test_softmax_after_any_movement()


def test_without_hypothesis_testing_is_absent_and_says_what_to_install():
  import subprocess
  import sys
  code = """
import sys
class Block:
  def find_spec(self, name, path=None, target=None):
    if name == "hypothesis" or name.startswith("hypothesis."): raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Block())
import minitensor as mt
assert not hasattr(mt, "testing")
assert float(mt.asarray([1.0, 2.0]).sum()) == 3.0
try: import minitensor.testing
except ImportError as e: print("ImportError:", e)
"""
  p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
  assert p.returncode == 0, p.stderr
  assert "ImportError:" in p.stdout and "pip install 'minitensor[test]'" in p.stdout


def test_derandomized_examples_are_the_same_with_a_cold_and_a_warm_kernel_cache(tmp_path):
  """hypothesis draws constants from the source of the modules loaded while a test runs: the compiler's stages,
  which a run that finds its programs on disk never imports, are loaded by minitensor.testing, so a
  derandomized test draws the same examples whether its kernels are compiled or loaded (README's example)."""
  import os
  import subprocess
  import sys
  code = """
import numpy as np
from hypothesis import given, settings, strategies as st
import minitensor as mt
import minitensor.testing as mtt
seen = []
@settings(max_examples=40, deadline=None, database=None, derandomize=True)
@given(data=st.data())
def t(data):
  shape = data.draw(mtt.shapes(min_dims=1, min_side=1))
  x = data.draw(mtt.arrays(np.float32, shape, elements=st.floats(-10, 10, width=32)))
  chain = data.draw(mtt.movement_chains(shape))
  seen.append(f"{shape} {x.tobytes().hex()} {chain}")
  mtt.assert_matches_numpy(lambda a: mt.exp(chain.apply(a)) * 2, x)
t()
print(chr(10).join(seen))
"""
  env = {**os.environ, "MINITENSOR_CACHE_DIR": str(tmp_path / "cache")}
  env.pop("MINITENSOR_NOCACHE", None)
  runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
          for _ in range(2)]
  for p in runs: assert p.returncode == 0, p.stderr[-2000:]
  assert runs[0].stdout.count("\n") >= 30 and runs[0].stdout == runs[1].stdout
