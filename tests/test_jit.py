"""mt.jit: values against NumPy (hypothesis over shapes and chains of operations), the retrace rules (structure,
shapes, dtypes, static values, mode), replays that compile nothing and read mutated inputs, writes into arguments
written back, the TracerErrors (reading traced values, writing outside f, random draws), and composition with
grad / value_and_grad."""
import threading
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend.runtime import stats

RNG = np.random.default_rng(0)


def softmax(x):
  e = mt.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


def np_softmax(x):
  e = np.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


def tol(dtype) -> dict:
  return {"rtol": 1e-5, "atol": 1e-6} if np.dtype(dtype) == np.float32 else {"rtol": 1e-12, "atol": 1e-12}


# ------------------------------------------------------------------ values
UNARY = [("exp", mt.exp, np.exp), ("tanh", mt.tanh, np.tanh), ("abs", mt.abs, np.abs), ("square", mt.square, np.square)]
STEPS = UNARY + [("softmax", softmax, np_softmax),
                 ("sum", lambda x: x.sum(axis=-1, keepdims=True) + x, lambda x: x.sum(axis=-1, keepdims=True) + x),
                 ("T", lambda x: x.T.T * 0.5, lambda x: x.T.T * 0.5),
                 ("flip", lambda x: x[::-1] - 1.5, lambda x: x[::-1] - 1.5)]


@settings(max_examples=25)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple),
       steps=st.lists(st.sampled_from(range(len(STEPS))), min_size=1, max_size=4),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
def test_jit_values_equal_numpy(shape, steps, dtype, seed):
  def chain(x, lib):
    for k in steps: x = STEPS[k][1 if lib is mt else 2](x)
    return x
  f = mt.jit(lambda x: chain(x, mt))
  for s in (seed, seed + 1):      # the trace, then a replay on other values
    x = np.random.default_rng(s).uniform(-2, 2, shape).astype(dtype)
    got = f(x)
    assert isinstance(got, mt.Tensor) and got.dtype == dtype and got.shape == shape
    np.testing.assert_allclose(np.asarray(got), chain(x, np), **tol(dtype))
  assert f.traces == 1


def test_replays_compile_nothing_and_run_no_python_of_f():
  calls = []
  def f(x, y):
    calls.append(1)
    return softmax(x) @ y
  g = mt.jit(f)
  x, y = RNG.standard_normal((6, 5)), RNG.standard_normal((5, 3))
  g(x, y)
  before = stats.compiles
  for k in range(5):
    x2 = x + k
    np.testing.assert_allclose(np.asarray(g(x2, y)), np_softmax(x2) @ y, rtol=1e-12)
  assert stats.compiles == before and len(calls) == 1 and g.traces == 1


def test_retrace_rules():
  g = mt.jit(lambda x, s=1.0: x * s)
  a = np.ones((2, 3))
  g(a); g(a + 1)
  assert g.traces == 1
  g(np.ones((3, 2)))                       # another shape
  g(np.ones((2, 3), np.float32))           # another dtype
  assert g.traces == 3
  g(a, 2.0); g(a, 2.0)                     # a Python number is static: one trace per value
  assert g.traces == 4
  before = stats.compiles
  np.testing.assert_array_equal(np.asarray(g(a, 3.0)), a * 3.0)   # (a kernel argument: nothing compiles)
  assert g.traces == 5 and stats.compiles == before
  g(a, np.float64(4.0)); g(a, np.float64(5.0))        # a NumPy scalar is traced (as a 0-d array)
  assert mt.jit(lambda x: x + 1)(np.float32(2)).shape == ()
  assert g.traces == 6
  np.testing.assert_array_equal(np.asarray(g(a, np.float64(5.0))), a * 5.0)
  g(mt.asarray(a))                         # a Tensor and an ndarray of one shape and dtype share the trace
  assert g.traces == 6


def test_mode_is_part_of_the_key(monkeypatch):
  g = mt.jit(lambda x: mt.exp(x) + 1)
  x = RNG.standard_normal(7)
  g(x)
  monkeypatch.setenv("MINITENSOR_CHECK", "1")
  np.testing.assert_allclose(np.asarray(g(x)), np.exp(x) + 1, rtol=1e-12)
  monkeypatch.delenv("MINITENSOR_CHECK")
  np.testing.assert_allclose(np.asarray(g(x)), np.exp(x) + 1, rtol=1e-12)
  assert g.traces == 2


def test_static_argnums_and_argnames():
  def f(x, axis, keep=False): return x.sum(axis=axis, keepdims=keep)
  x = RNG.standard_normal((3, 4))
  g = mt.jit(f, static_argnums=1, static_argnames="keep")
  np.testing.assert_allclose(np.asarray(g(x, 0)), x.sum(0))
  np.testing.assert_allclose(np.asarray(g(x, 1, keep=True)), x.sum(1, keepdims=True))
  np.testing.assert_allclose(np.asarray(g(x, axis=1)), x.sum(1))     # (argnums and argnames match both ways)
  assert g.traces == 3

  @mt.jit(static_argnums=(1,))
  def tiled(x, reps): return mt.tile(x, reps)
  np.testing.assert_array_equal(np.asarray(tiled(np.arange(3), (2, 2))), np.tile(np.arange(3), (2, 2)))
  with pytest.raises(TypeError, match="not hashable"):
    g(x, [0])
  with pytest.raises(ValueError, match="static_argnums"):
    mt.jit(f, static_argnums=-1)
  with pytest.raises(TypeError, match="expected a function"):
    mt.jit(3)


def test_pytrees_in_and_out():
  @mt.jit
  def f(p, xs):
    return {"y": p["w"] * xs[0] + p["b"], "n": len(xs), "pair": (xs[1].sum(), None)}
  p = {"w": np.float64(2.0), "b": np.arange(3.0)}
  xs = [np.ones(3), np.full((2, 2), 3.0)]
  out = f(p, xs)
  np.testing.assert_array_equal(np.asarray(out["y"]), 2.0 + np.arange(3.0))
  assert out["n"] == 2 and out["pair"][1] is None and float(out["pair"][0]) == 12.0
  assert f.traces == 1 and f(p, xs)["n"] == 2 and f.traces == 1
  f(p, xs + [np.ones(1)])                  # another structure
  assert f.traces == 2
  assert f.__name__ == "f"


def test_results_never_alias_arguments():
  a = np.arange(4.0)
  for g in (mt.jit(lambda x: x), mt.jit(lambda x: x.reshape(2, 2))):
    r = np.asarray(g(a))
    assert not np.shares_memory(r, a)
    np.testing.assert_array_equal(r.ravel(), a)
  k = mt.asarray(np.arange(3.0))
  const = mt.jit(lambda x: k)
  r1, r2 = const(a), const(a)
  assert not np.shares_memory(np.asarray(r1), np.asarray(r2))


def test_replay_reads_mutated_inputs():
  g = mt.jit(lambda x: (x * 2).sum())
  a = np.arange(5.0)
  assert float(g(a)) == 20.0
  a[0] = 10.0                               # NumPy writes into the argument's memory
  assert float(g(a)) == 40.0
  t = mt.asarray(np.arange(5.0))
  assert float(g(t)) == 20.0
  t[1] = 11.0                               # a Tensor's write
  assert float(g(t)) == 40.0
  t2 = t * 1.0                              # a lazy Tensor argument is realized first
  assert float(g(t2)) == 40.0
  view = np.arange(10.0)[::2]               # a strided array is read as its values
  assert float(g(view)) == 40.0


def test_writes_into_arguments_are_written_back():
  def step(x, v):
    x += v
    x[0] = -1.0
  g = mt.jit(step)
  a, t = np.zeros(3), mt.asarray(np.zeros(3))
  for _ in range(3):
    g(a, np.ones(3))
    g(t, np.ones(3))
  np.testing.assert_array_equal(a, [-1.0, 3.0, 3.0])
  np.testing.assert_array_equal(np.asarray(t), [-1.0, 3.0, 3.0])
  assert g.traces == 1

  def half(x): x[1:] = x[1:] * 0.5
  h = mt.jit(half)
  b = np.full((3, 2), 4.0)
  h(b); h(b)
  np.testing.assert_array_equal(b, [[4, 4], [1, 1], [1, 1]])
  ro = np.zeros(3)
  ro.setflags(write=False)
  with pytest.raises(ValueError, match="read-only"):
    mt.jit(step)(ro, np.ones(3))
  with pytest.raises(ValueError, match="shares memory"):
    g(a, a)


def test_reading_a_traced_value_raises():
  x = np.arange(4.0)
  readers = [lambda x: float(x.sum()), lambda x: x if x.sum() > 0 else -x, lambda x: x[x > 1],
             lambda x: x + len(x.tolist()), lambda x: x + np.asarray(x), lambda x: x.realize(),
             lambda x: mt.asarray(np.asarray(x.max()))]
  for f in readers:
    with pytest.raises(mt.TracerError, match="reads the value"):
      mt.jit(f)(x)
  assert issubclass(mt.TracerError, TypeError)
  with pytest.raises(mt.TracerError, match=r"in minitensor\.sorting\.sort"):      # (names the function that read)
    mt.jit(lambda x: mt.sort(x))(x)
  assert float(mt.jit(lambda x: x.sum())(x)) == 6.0       # (shapes and dtypes are static: those reads are fine)
  assert mt.jit(lambda x: x * x.shape[0] if x.dtype == np.float64 else x)(x).tolist() == [0, 4, 8, 12]


def test_a_leaked_tracer_raises_when_read():
  kept = []
  def f(x):
    kept.append(x * 2)
    return x
  mt.jit(f)(np.ones(2))
  with pytest.raises(TypeError, match="placeholder"):
    np.asarray(kept[0] + 1)


def test_writes_outside_f_and_random_draws_raise():
  G = mt.asarray(np.zeros(3))
  def write_global(x):
    G[0] = x.sum()
    return x
  with pytest.raises(mt.TracerError, match="did not create"):
    mt.jit(write_global)(np.ones(3))
  np.testing.assert_array_equal(np.asarray(G), np.zeros(3))

  def write_own(x):
    y = mt.zeros(3)
    y[1:] = x[:2]
    return y
  np.testing.assert_array_equal(np.asarray(mt.jit(write_own)(np.array([5.0, 6, 7]))), [0, 5, 6])

  rng, rs = mt.random.default_rng(0), mt.random.RandomState(0)
  for f in (lambda x: x + mt.random.rand(3), lambda x: x + rng.random(3), lambda x: x + rs.normal(size=3),
            lambda x: x[mt.random.permutation(3)]):
    with pytest.raises(mt.TracerError, match="random"):
      mt.jit(f)(np.ones(3))
  repr(rng), repr(rs)


def test_composes_with_grad():
  X, Y = RNG.standard_normal((8, 5)), RNG.standard_normal((8, 3))
  def loss(p, X, Y): return ((X @ p["W"] + p["b"] - Y) ** 2).mean()
  def np_grads(W, b):
    r = X @ W + b - Y
    return (r ** 2).mean(), 2 * X.T @ r / r.size, 2 * r.sum(0) / r.size
  step = mt.jit(mt.value_and_grad(loss))
  p = {"W": RNG.standard_normal((5, 3)), "b": np.zeros(3)}
  for _ in range(4):                        # a training loop: replays of one trace
    v, g = step(p, X, Y)
    rv, rw, rb = np_grads(p["W"], p["b"])
    np.testing.assert_allclose(float(v), rv, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g["W"]), rw, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(g["b"]), rb, rtol=1e-10, atol=1e-14)
    p = {k: np.asarray(p[k] - 0.1 * g[k]) for k in p}
  assert step.traces == 1
  gj = mt.grad(mt.jit(loss))(p, X, Y)       # grad of a jitted function differentiates f (run inline)
  np.testing.assert_allclose(np.asarray(gj["W"]), np_grads(p["W"], p["b"])[1], rtol=1e-10)
  inner = mt.jit(lambda x: mt.sin(x) * x)
  outer = mt.jit(mt.grad(lambda x: inner(x).sum()))
  x = RNG.standard_normal(6)
  np.testing.assert_allclose(np.asarray(outer(x)), np.cos(x) * x + np.sin(x), rtol=1e-12)
  assert inner.traces == 0 and outer.traces == 1


def test_threads_trace_and_replay_independently():
  g = mt.jit(lambda x: mt.exp(x).sum())
  errors = []
  def work(seed):
    try:
      x = np.random.default_rng(seed).standard_normal(50)
      for _ in range(20): np.testing.assert_allclose(float(g(x)), np.exp(x).sum(), rtol=1e-12)
    except Exception as e: errors.append(e)     # noqa: BLE001
  ts = [threading.Thread(target=work, args=(s,)) for s in range(4)]
  for t in ts: t.start()
  for t in ts: t.join()
  assert not errors


def test_the_readme_example_runs_and_traces_once():
  import pathlib
  import re
  text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
  section = text[text.index("## `mt.jit`"):]
  code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
  scope: dict = {}
  exec(compile(code, "README.md", "exec"), scope)       # noqa: S102 (the README's own example)
  assert scope["sgd_step"].traces == 1 and np.isfinite(float(scope["value"]))
