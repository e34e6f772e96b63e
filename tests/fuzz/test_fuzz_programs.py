"""Random Tensor programs against NumPy.

A program is a DAG of up to 20 operations over a few random inputs (every dtype, shapes with size-0 and size-1
axes): elementwise unary and binary ufuncs (comparisons included, Python and NumPy scalars as operands), where,
reductions over random axes (keepdims too), scans (cumsum, cumprod, 0-d included), `**` with NumPy's shortcut
exponents (2, -1, 0.5), movement chains, indexing (slices, integer arrays, masks), matmul, concatenate (with 0-d
and mixed-rank operands and bad axes) and astype. Inputs hold NaN, infinities, -0.0 and each dtype's extremes
(float16 included), and 0-d arrays are frequent operands. The generator runs each operation on NumPy as it draws
it:

  - an operation NumPy rejects for its dtypes or shapes (it raises also on harmless data of the same dtypes and
    shapes) stays in the program: minitensor must raise the same exception type there;
  - an operation whose NumPy error depends on the data (an integer to a negative integer power) is dropped.

Floats are compared with tolerances. Values whose NumPy and minitensor results may differ in the last bits
(transcendental functions, float reductions and matmul: the summation order differs and minitensor sums
float32 in float64) are marked inexact, and the generator applies no discontinuous operation to them
(comparisons, rounding, sign, argmax, truthiness, floor division), since a last-bit difference there is a
jump in the result, not a bug. Float reductions also need moderate magnitudes (float32 partial sums overflow
in NumPy but not in float64).
"""
from __future__ import annotations
import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
import minitensor.testing as mtt

DTYPES = [np.dtype(d) for d in ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64")]
UNARY = ["negative", "positive", "absolute", "sign", "square", "sqrt", "exp", "log", "sin", "tanh", "arctan", "log1p",
         "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite", "logical_not", "invert", "reciprocal"]
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power", "maximum", "minimum", "fmax",
          "fmin", "arctan2", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
          "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
INEXACT = {"exp", "log", "sin", "tanh", "arctan", "log1p", "power", "arctan2"}       # not correctly rounded
JUMPY = {"sign", "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite", "logical_not", "floor_divide",
         "remainder", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
         "logical_or", "logical_xor"}                                                 # jump where values are close
SCALARS = [True, False, 0, 1, -1, 2, 7, 300, -129, 0.5, -2.5, 1e10, math.nan, math.inf, -0.0, np.float32(1.5),
           np.int8(-3), np.uint8(200), np.int64(5), np.float64(-0.25), np.bool_(True)]
# np.where stores an out-of-range Python int with wraparound (np.where(c, int8_array, 300) holds 44) where its
# ufuncs raise OverflowError; minitensor raises. where() draws its scalars from values every dtype holds.
WHERE_SCALARS = [0, 1, True, False, 0.5, math.nan, -0.0, np.float32(1.5), np.int8(-3)]
MAX_SIZE = 256
# floats: last-bit differences of inexact values grow through later operations; float16 (NumPy's result of
# uint8/int8/bool through exp, sin, ...) sums in float16 in NumPy, in float32 in minitensor
TOL = {np.float16: 1e-2, np.float32: 1e-4, np.float64: 1e-4}


def ns_of(x): return mt if isinstance(x, mt.Tensor) else np


@dataclass
class Op:
  """One operation, `text` for the listing; run(ns, vals) computes it with ns (numpy or minitensor) on its args:
  Refs to earlier values, or literals."""
  text: str
  fn: Callable
  args: tuple
  expect: type | None = None         # NumPy raises this (exception type) here; minitensor must too

  def run(self, ns, vals: list):
    return self.fn(ns, *[vals[a.k] if isinstance(a, Ref) else a for a in self.args])


@dataclass(frozen=True)
class Ref:
  """Value number k of the program as an operand."""
  k: int
  def __repr__(self) -> str: return f"v{self.k}"


class Program:
  """Inputs, operations (each making the next value, unless it is expected to raise) and the outputs.
  (A plain class, not a dataclass: hypothesis prints a dataclass field by field, this prints its listing.)"""
  def __init__(self):
    self.inputs: list[np.ndarray] = []
    self.ops: list[tuple[str, Any]] = []        # ("input", k) or ("op", Op)
    self.outputs: list[int] = []

  def __call__(self, *xs):
    vals: list = []
    for kind, x in self.ops:
      if kind == "input": vals.append(xs[x]); continue
      ns = ns_of(xs[0])
      if x.expect is None: vals.append(np.asarray(x.run(ns, vals)) if ns is np else x.run(ns, vals)); continue
      try: x.run(ns, vals)
      except Exception as e:
        if mtt._same_kind(e, x.expect): continue
        raise AssertionError(f"`{x.text}`: NumPy raises {x.expect.__name__}, minitensor {type(e).__name__}: {e}") from e
      raise AssertionError(f"`{x.text}`: NumPy raises {x.expect.__name__}, minitensor returned a result")
    return tuple(vals[k] for k in self.outputs)

  def __repr__(self) -> str:
    lines, n = [], 0
    for kind, x in self.ops:
      if kind == "input":
        lines.append(f"v{n} = input{x}: {mtt._describe(self.inputs[x])}"); n += 1
      elif x.expect is None: lines.append(f"v{n} = {x.text}"); n += 1
      else: lines.append(f"{x.text}  # raises {x.expect.__name__}")
    return "Program:\n  " + "\n  ".join(lines) + f"\n  outputs: {', '.join(f'v{k}' for k in self.outputs)}"


# ---------------------------------------------------------------------- values
def elements(d: np.dtype) -> st.SearchStrategy:
  """Moderate values with the special ones (NaN, +-inf, -0.0) for floats; the extremes too for integers."""
  if d.kind == "f":
    fi = np.finfo(d)
    extremes = [float(fi.max), -float(fi.max), float(fi.tiny), -float(fi.smallest_subnormal)]
    return st.one_of(st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 0.5]),
                     st.sampled_from(extremes), st.floats(-8, 8, width=8 * d.itemsize))
  if d.kind == "b": return st.booleans()
  return st.one_of(mtt.elements(d), st.integers(max(-8, int(np.iinfo(d).min)), 8))


class Gen:
  """The state of a program being drawn: NumPy values with their exactness."""
  def __init__(self, draw):
    self.draw, self.prog = draw, Program()
    self.vals: list[np.ndarray] = []
    self.exact: list[bool] = []
    self.is_input: list[bool] = []
    self.used: set[int] = set()

  def new_input(self, shape, dtype=None) -> int:
    d = np.dtype(dtype) if dtype is not None else self.draw(st.sampled_from(DTYPES))
    a = self.draw(mtt.arrays(d, tuple(shape), elements=elements(d)))
    self.prog.inputs.append(a)
    self.prog.ops.append(("input", len(self.prog.inputs) - 1))
    self.vals.append(a); self.exact.append(True); self.is_input.append(True)
    return len(self.vals) - 1

  def pick(self, ok=lambda k: True) -> int | None:
    ks = [k for k in range(len(self.vals)) if ok(k)]
    return self.draw(st.sampled_from(ks)) if ks else None

  def smooth(self, k: int) -> bool:
    """Whether a discontinuous operation may be applied to value k (it is exact, or not a float)."""
    return self.exact[k] or self.vals[k].dtype.kind not in "fb"

  def add(self, text: str, fn: Callable, args: tuple, exact: bool) -> None:
    """Run the operation on NumPy and keep it: as a value, as an expected error, or not at all."""
    refs = [a.k for a in args if isinstance(a, Ref)]
    try: r = run_np(fn, args, self.vals)
    except Exception as e:
      try: run_np(fn, args, [np.ones_like(v) for v in self.vals])
      except Exception: self.prog.ops.append(("op", Op(text, fn, args, mtt._public_type(e))))
      return                                     # else: the error depends on the data (dropped)
    r = np.asarray(r)
    if r.size > MAX_SIZE: return
    self.prog.ops.append(("op", Op(text, fn, args)))
    self.used.update(refs)
    self.vals.append(r); self.is_input.append(False)
    self.exact.append(exact and all(self.exact[k] for k in refs))


def run_np(fn, args, vals):
  with np.errstate(all="ignore"), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    return fn(np, *[vals[a.k] if isinstance(a, Ref) else a for a in args])


def broadcasts(a: tuple, b: tuple) -> bool:
  try: np.broadcast_shapes(a, b); return True
  except ValueError: return False


def moderate(v: np.ndarray, limit: float | None = None, as_float: bool = False) -> bool:
  """Whether v's finite floats are small enough to reduce: NumPy's float16/float32 partial sums may overflow
  where minitensor's (float32/float64) do not, and their rounding errors grow with the magnitudes. as_float: v is
  reduced in a float dtype (an integer operand of a float matmul), so its integers must be small as well (int64's
  extremes cancel in one summation order and not in another)."""
  if v.dtype.kind != "f":
    if not (as_float and v.dtype.kind in "iu"): return True
    v = v.astype(np.float64)
  f = np.abs(v[np.isfinite(v)])
  return not f.size or float(f.max()) <= (limit or (8 if v.dtype.itemsize <= 4 else 1e6))


# ---------------------------------------------------------------------- operation families
def unary(g: Gen) -> None:
  name = g.draw(st.sampled_from(UNARY))
  k = g.pick(g.smooth if name in JUMPY else lambda k: True)
  if k is None: return
  g.add(f"{name}(v{k})", lambda ns, x: getattr(ns, name)(x), (Ref(k),), name not in INEXACT)


def operand(g: Gen, shape: tuple, smooth: bool, scalars: list = SCALARS):
  """A second operand for shape: a broadcastable value, a new input, or a Python/NumPy scalar."""
  choice = g.draw(st.integers(0, 9))
  if choice < 4:
    k = g.pick(lambda j: broadcasts(g.vals[j].shape, shape) and (not smooth or g.smooth(j)))
    if k is not None: return Ref(k)
  if choice < 7: return g.draw(st.sampled_from(scalars))
  if choice == 8: return Ref(g.new_input(()))                                              # a 0-d operand
  if choice == 9: return Ref(g.new_input(g.draw(mtt.shapes(max_dims=3, max_side=4))))   # often does not broadcast
  return Ref(g.new_input(g.draw(mtt.broadcastable_shapes(shape, max_dims=4, max_side=4))))


def binary(g: Gen) -> None:
  name = g.draw(st.sampled_from(BINARY))
  k = g.pick(g.smooth if name in JUMPY else lambda k: True)
  if k is None: return
  b = operand(g, g.vals[k].shape, name in JUMPY)
  a, b = (Ref(k), b) if g.draw(st.booleans()) else (b, Ref(k))
  g.add(f"{name}({a!r}, {b!r})",
        lambda ns, x, y: getattr(ns, name)(x, y), (a, b), name not in INEXACT)


def where(g: Gen) -> None:
  c = g.pick(g.smooth)
  if c is None: return
  shape = g.vals[c].shape
  xs = [operand(g, shape, False, WHERE_SCALARS) for _ in range(2)]
  g.add(f"where(v{c}, {xs[0]!r}, {xs[1]!r})", lambda ns, c, x, y: ns.where(c, x, y), (Ref(c), *xs), True)


REDUCTIONS = ["sum", "prod", "max", "min", "mean", "any", "all", "argmax", "argmin", "var"]


def reduction(g: Gen) -> None:
  name = g.draw(st.sampled_from(REDUCTIONS))
  jumpy = name in ("argmax", "argmin", "any", "all")
  k = g.pick(lambda j: (not jumpy or g.smooth(j)) and moderate(g.vals[j]))
  if k is None: return
  nd = g.vals[k].ndim
  if nd and g.draw(st.integers(0, 9)) == 0:             # out of range: AxisError (NumPy's ufuncs take 0 and -1 for 0-d)
    axis = g.draw(st.sampled_from([nd, -nd - 1]))
  elif name in ("argmax", "argmin"): axis = g.draw(st.one_of(st.none(), st.integers(-nd, nd - 1))) if nd else None
  else: axis = g.draw(mtt.axes(nd))
  kd = g.draw(st.booleans())
  inexact = g.vals[k].dtype.kind == "f" and name in ("sum", "prod", "mean", "var") or name in ("mean", "var")
  g.add(f"{name}(v{k}, axis={axis!r}, keepdims={kd})", lambda ns, x: getattr(ns, name)(x, axis=axis, keepdims=kd),
        (Ref(k),), not inexact)


def scan(g: Gen) -> None:
  name = g.draw(st.sampled_from(["cumsum", "cumprod"]))
  k = g.pick(lambda j: moderate(g.vals[j]) and g.vals[j].size <= 64)
  if k is None: return
  nd = max(g.vals[k].ndim, 1)                       # (a 0-d array scans as its 1-element ravel)
  axis = g.draw(st.one_of(st.none(), st.integers(-nd - 1, nd)))    # one past either end: AxisError
  g.add(f"{name}(v{k}, axis={axis!r})", lambda ns, x: getattr(ns, name)(x, axis=axis), (Ref(k),), True)


def power_operator(g: Gen) -> None:
  """`x ** e` with the exponents NumPy's operator computes by square, reciprocal and sqrt (bool ** 2 is int8)."""
  e = g.draw(st.sampled_from([2, -1, 0.5, 3, 2.0]))
  k = g.pick(lambda j: e != -1 or g.vals[j].dtype.kind in "fc")     # (ints ** -1: a data-dependent error)
  if k is None: return
  g.add(f"v{k} ** {e!r}", lambda ns, x: x ** e, (Ref(k),), e in (2, -1))


def movement(g: Gen) -> None:
  k = g.pick()
  chain = g.draw(mtt.movement_chains(g.vals[k].shape, max_steps=2))
  g.add(f"v{k} -> {chain!r}", lambda ns, x: chain.apply(x), (Ref(k),), True)


def indexing(g: Gen) -> None:
  k = g.pick(lambda j: g.vals[j].ndim > 0)
  if k is None: return
  shape = g.vals[k].shape
  lead = g.draw(st.integers(0, len(shape) - 1))
  idx: list = [slice(None, None, g.draw(st.sampled_from([None, -1, 2]))) for _ in range(lead)]
  kind = g.draw(st.sampled_from(["int", "int", "two", "mask", "value-mask"]))
  if kind == "value-mask":           # a lazy bool Tensor as the mask (minitensor realizes it)
    fits = lambda j: (g.vals[j].dtype == bool and g.smooth(j) and 0 < g.vals[j].ndim <= len(shape) - lead
                      and g.vals[j].shape == shape[lead:lead + g.vals[j].ndim])
    m = g.pick(fits)
    if m is None: kind = "mask"
    else: idx.append(Ref(m))
  if kind == "mask":
    idx.append(g.draw(mtt.arrays(np.bool_, shape[lead:lead + g.draw(st.integers(1, len(shape) - lead))])))
  elif kind != "value-mask":         # integer arrays, in bounds (or any index of an empty axis: IndexError)
    s = g.draw(mtt.shapes(max_dims=2, max_side=3))
    ints = lambda n: g.draw(mtt.arrays(np.int64, s, elements=st.integers(-n, n - 1) if n else st.integers(-1, 1)))
    idx.append(ints(shape[lead]))
    if kind == "two" and lead + 1 < len(shape):
      if lead + 2 < len(shape) and g.draw(st.booleans()): idx.append(slice(None))   # separated: broadcast axes in front
      idx.append(ints(shape[len(idx)]))
  refs = tuple(i for i in idx if isinstance(i, Ref))
  shown = tuple(i.tolist() if isinstance(i, np.ndarray) else i for i in idx)
  def fn(ns, x, *masks):
    it = iter(masks)
    return x[tuple(next(it) if isinstance(i, Ref) else i for i in idx)]
  g.add(f"v{k}{mtt._fmt_index(shown)}", fn, (Ref(k), *refs), True)


def matmul(g: Gen) -> None:
  k = g.pick(lambda j: g.vals[j].ndim > 0 and moderate(g.vals[j]))
  if k is None: return
  s = g.vals[k].shape
  kdim = s[-1]
  if g.draw(st.integers(0, 9)) == 0: kdim += 1                     # a mismatch in the core dimension: ValueError
  if len(s) >= 2 and g.draw(st.integers(0, 3)) == 0:
    g.add(f"matmul(v{k}, swapaxes(v{k}, -1, -2))", lambda ns, x: ns.matmul(x, ns.swapaxes(x, -1, -2)), (Ref(k),),
          g.vals[k].dtype.kind not in "f")
    return
  batch = g.draw(st.sampled_from([(), s[:-2]] if len(s) > 2 else [()]))
  other = batch + (kdim,) + ((g.draw(st.integers(0, 3)),) if g.draw(st.integers(0, 3)) else ())
  d = g.draw(st.sampled_from(DTYPES))
  b = g.new_input(other, d)
  in_float = g.vals[k].dtype.kind == "f" or d.kind == "f"        # (the product is summed in a float dtype)
  if not moderate(g.vals[b], 8, in_float) or not moderate(g.vals[k], None, in_float): return
  a, b = (Ref(k), Ref(b))
  g.add(f"matmul(v{k}, v{b.k})", lambda ns, x, y: ns.matmul(x, y), (a, b),
        g.vals[k].dtype.kind != "f" and d.kind != "f")


def concatenate(g: Gen) -> None:
  k = g.pick()
  s = g.vals[k].shape
  if g.draw(st.integers(0, 5)) == 0:        # another rank (0-d too) and any axis: AxisError or ValueError, as NumPy's
    j = g.pick(lambda j: g.vals[j].ndim != len(s))
    if j is not None:
      axis = g.draw(st.integers(-3, 3))
      g.add(f"concatenate([v{k}, v{j}], axis={axis})", lambda ns, x, y: ns.concatenate([x, y], axis=axis),
            (Ref(k), Ref(j)), True)
      return
  if not s:                                                         # 0-d: ValueError
    g.add(f"concatenate([v{k}, v{k}])", lambda ns, x: ns.concatenate([x, x]), (Ref(k),), True)
    return
  axis = g.draw(st.integers(-len(s), len(s) - 1))
  a = axis % len(s)
  others = []
  for _ in range(g.draw(st.integers(1, 2))):
    shape = s[:a] + (g.draw(st.integers(0, 3)),) + s[a + 1:]
    j = g.pick(lambda j: g.vals[j].shape == shape)
    others.append(j if j is not None and g.draw(st.booleans()) else g.new_input(shape))
  parts = [k] + others
  order = g.draw(st.permutations(range(len(parts))))
  refs = tuple(Ref(parts[i]) for i in order)
  g.add(f"concatenate([{', '.join(f'v{r.k}' for r in refs)}], axis={axis})",
        lambda ns, *xs: ns.concatenate(list(xs), axis=axis), refs, True)


def astype(g: Gen) -> None:
  k = g.pick()
  src = g.vals[k].dtype
  d = g.draw(st.sampled_from([d for d in DTYPES if not (src.kind == "f" and d.kind in "iu")]))  # float -> int: C's UB
  if d == np.bool_ and not g.smooth(k): return
  g.add(f"v{k}.astype({d.name})", lambda ns, x: x.astype(d), (Ref(k),), True)


FAMILIES = [unary, binary, where, reduction, scan, power_operator, movement, indexing, matmul, concatenate, astype]


@st.composite
def programs(draw, first_dtype=None, max_ops: int = 20) -> Program:
  g = Gen(draw)
  for _ in range(draw(st.integers(1, 2))): g.new_input(draw(mtt.shapes(max_dims=4, max_side=4)), first_dtype)
  for _ in range(draw(st.integers(1, max_ops))): draw(st.sampled_from(FAMILIES))(g)
  g.prog.outputs = [k for k in range(len(g.vals))
                    if not g.is_input[k] and (k not in g.used or draw(st.integers(0, 3)) == 0)]
  return g.prog


def check(prog: Program) -> None:
  mtt.assert_matches_numpy(prog, *prog.inputs, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("dtype", [d.name for d in DTYPES])
@settings(max_examples=max(1, settings.default.max_examples // 5))
@given(data=st.data())
def test_random_programs_match_numpy(dtype, data):
  check(data.draw(programs(dtype)))


# ---------------------------------------------------------------------- kernels the optimizer reshapes
SIDES = [1, 3, 8, 16, 32, 64]


@st.composite
def optimized_kernels(draw):
  """(f, inputs) of one kernel family at sizes the optimizer splits (lanes of 8 or 16, register tiles, 32 x 32 blocks,
  threads past 2**17 iterations), on small nonzero integer values, so that every summation order gives the same
  result (and no product is -0.0: test_matmul_with_inner_size_1_keeps_the_sign_of_zero)."""
  d = draw(st.sampled_from(["float32", "float64", "int32", "int8"]))
  rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
  data = lambda shape: (rng.integers(1, 5, shape) * rng.choice([-1, 1], shape)).astype(d)
  kind = draw(st.sampled_from(["reduce", "matmul", "elementwise", "copy"]))
  if kind == "matmul":
    m, k, n = (draw(st.sampled_from(SIDES)) for _ in range(3))
    return (lambda a, b: a @ b), (data(draw(st.sampled_from([(), (2,)])) + (m, k)), data((k, n)))
  shape = tuple(draw(st.lists(st.sampled_from(SIDES), min_size=1, max_size=3)))
  chain = draw(mtt.movement_chains(shape, max_steps=2))
  if kind == "reduce":
    op, kd = draw(st.sampled_from(["sum", "max", "min"])), draw(st.booleans())
    axis = draw(mtt.axes(len(chain.out_shape)))
    return (lambda a: getattr(chain.apply(a), op)(axis=axis, keepdims=kd)), (data(shape),)
  if kind == "elementwise":
    return (lambda a, b: ns_of(a).maximum(chain.apply(a) * 2 + b, -b)), (data(shape), data(chain.out_shape))
  perm = draw(st.permutations(range(len(chain.out_shape))))       # a copy through a transpose: blocked
  return (lambda a: ns_of(a).where(True, ns_of(a).transpose(chain.apply(a), perm), 0)), (data(shape),)


@settings(max_examples=max(1, settings.default.max_examples // 3))
@given(optimized_kernels())
def test_optimized_kernels_match_numpy_exactly(case):
  f, inputs = case
  mtt.assert_matches_numpy(f, *inputs, rtol=0, atol=0)


# ---------------------------------------------------------------------- regressions
@pytest.mark.parametrize("dtype, eps", [(np.float32, 2**-12), (np.float64, 2**-30)])
def test_multiply_add_rounds_twice_like_numpy(dtype, eps):
  x = np.full(16, 1 + eps, dtype)
  mtt.assert_matches_numpy(lambda a: a * a - 1, x, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_with_inner_size_1_keeps_the_sign_of_zero(dtype):
  mtt.assert_matches_numpy(lambda a, b: a @ b, np.array([[3.0], [1.0], [0.0]], dtype), np.array([[-2.0]], dtype),
                           rtol=0, atol=0)
