import math
import operator
import re
import subprocess
from pathlib import Path
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from minitensor.backend.debug import run_c, run_shaped
from minitensor.backend.dtype import dtypes
from minitensor.backend.render_c import render_c
from minitensor.backend.runtime import compiler
from minitensor.backend.uir import UirParseError, parse, print_uir
from minitensor.backend.uop import REDUCE_OPS, AxisType, Ops, UOp, buf, prod, range_, sink

# section 6.7: x.reduce(ADD, 1) on a (3, 4) matrix, after lower() (shared with the CLI tests)
ROWSUM = (Path(__file__).parent.parent / "rowsum.uir").read_text()

# section 6.12: pad_axis(v, 0, 1, 2) of a length-3 vector
PAD1D = """\
%0 = reshape 0.0, (1,)
%1 = expand %0, (5,)
%2 = buffer 3 : dtype=f32 slot=0
%3 = expand %0, (3,)
%4 = stack %2, %3
%5 = reshape %4, (6,)
%6 = shrink %5, ((0, 5),)
%7 = stack %1, %6
%8 = reshape %7, (10,)
%9 = shrink %8, ((4, 10),)
"""


def gemm_uir(n: int, fixed: bool) -> str:
  """The syllabus's gemm_256x256.uir at size n, or (fixed) section 6.10's A @ B from movement ops."""
  mid = f"""%2 = reshape %0, ({n}, 1, {n})
  %3 = reshape %1, ({n}, {n})
  %4 = permute %3, (1, 0)
  %5 = reshape %4, (1, {n}, {n})
  %6 = mul %2, %5
  %7 = reduce %6 : op=add pop=1""" if fixed else f"""%2 = reshape %0, ({n}, {n}, 1)
  %3 = reshape %1, ({n}, 1, {n})
  %4 = mul %2, %3
  %5 = reduce %4 : op=add pop=1"""
  return f"""
  %0 = buffer {n*n} : dtype=f32 slot=0
  %1 = buffer {n*n} : dtype=f32 slot=1
  {mid}"""


def test_rowsum_round_trips_and_runs():
  g = parse(ROWSUM)
  assert g.op is Ops.SINK and print_uir(g) == ROWSUM and parse(print_uir(g)) is g
  x = np.random.default_rng(0).standard_normal(12).astype(np.float32)
  out = np.zeros(3, np.float32)
  run_c(render_c(g, "rowsum"), {0: x, 1: out}, "rowsum")
  np.testing.assert_allclose(out, x.reshape(3, 4).sum(1), rtol=1e-6)
  out[:] = 0
  run_c(g, {0: x, 1: out})
  np.testing.assert_allclose(out, x.reshape(3, 4).sum(1), rtol=1e-6)


def test_rowsum_c_compiles_with_wall_werror(tmp_path):
  p = subprocess.run([compiler(), "-Wall", "-Werror", "-std=gnu99", "-c", "-x", "c", "-", "-o",
                      str(tmp_path / "rowsum.o")],
                     input=render_c(parse(ROWSUM), "rowsum"), capture_output=True, text=True)
  assert p.returncode == 0, p.stderr


def test_pad1d_listing():
  g = parse(PAD1D)
  assert g.shape == (6,) and g.op is Ops.SHRINK and print_uir(g) == PAD1D
  ops = [u.op for u in g.toposort()]
  assert ops.count(Ops.STACK) == 2 and ops.count(Ops.EXPAND) == 2 and ops.count(Ops.CONST) == 1
  x = np.arange(1, 4, dtype=np.float32)
  np.testing.assert_array_equal(run_shaped(g, [x]), np.pad(x, (1, 2)))


def test_syllabus_gemm_is_not_a_gemm():
  g = parse(gemm_uir(8, fixed=False))
  assert g.shape == (8, 8) and g.op is Ops.REDUCE and g.arg == (Ops.ADD, 1)
  mul = g.src[0]
  assert mul.op is Ops.MUL and mul.shape == (8, 8, 8)
  assert [(s.op, s.src[0].op, s.src[0].arg) for s in mul.src] == \
    [(Ops.EXPAND, Ops.RESHAPE, (8, 8, 1)), (Ops.EXPAND, Ops.RESHAPE, (8, 1, 8))]
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((8, 8), np.float32), rng.standard_normal((8, 8), np.float32)
  np.testing.assert_allclose(run_shaped(g, [a.ravel(), b.ravel()]), a * b.sum(1, keepdims=True), atol=1e-4)


def test_gemm_from_movement_ops():
  n = 16
  g = parse(gemm_uir(n, fixed=True))
  assert g.shape == (n, n) and parse(print_uir(g)) is g
  rng = np.random.default_rng(2)
  a, b = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
  np.testing.assert_allclose(run_shaped(g, [a.ravel(), b.ravel()]), a @ b, atol=1e-4)


# ---------------------------------------------------------------- broadcasting sugar
def test_broadcast_inserts_reshape_expand():
  g = parse("""%0 = buffer 3 : dtype=f32 slot=0
  %1 = reshape %0, (3, 1)
  %2 = buffer 4 : dtype=f32 slot=1
  %3 = mul %1, %2""")
  assert g.op is Ops.MUL and g.shape == (3, 4)
  a, b = g.src
  assert a.op is Ops.EXPAND and a.src[0].op is Ops.RESHAPE and a.src[0].arg == (3, 1)
  assert b.op is Ops.EXPAND and b.src[0].op is Ops.RESHAPE and b.src[0].arg == (1, 4) and \
    b.src[0].src[0].op is Ops.BUFFER
  x, y = np.arange(3, dtype=np.float32), np.arange(4, dtype=np.float32)
  np.testing.assert_array_equal(run_shaped(g, [x, y]), x[:, None] * y)


def test_broadcast_literal_is_const_like():
  g = parse("%0 = buffer 6 : dtype=f64 slot=0\n%1 = reshape %0, (2, 3)\n%2 = add %1, 1.5")
  assert g.src[1] is g.src[0].const_like(1.5) and g.src[1].dtype is dtypes.float64


def test_broadcast_error():
  with pytest.raises(UirParseError, match=re.escape("line 4: can't broadcast (2, 3) with (4,): %3 = add %1, %2")):
    parse("%0 = buffer 6 : dtype=f32 slot=0\n%1 = reshape %0, (2, 3)\n%2 = buffer 4 : dtype=f32 slot=1\n"
          "%3 = add %1, %2")


def _shaped(i: int, shape: tuple[int, ...]) -> str:
  return f"%b{i} = buffer {prod(shape)} : dtype=f32 slot={i}\n%s{i} = reshape %b{i}, {shape!r}\n"


@given(mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=3))
def test_broadcast_matches_numpy(shapes):
  a, b = shapes.input_shapes
  g = parse(_shaped(0, a) + _shaped(1, b) + "%r = mul %s0, %s1")
  out = np.broadcast_shapes(a, b)
  assert g.op is Ops.MUL and g.shape == out
  for k, s in enumerate((a, b)):   # section 6.3: RESHAPE to prepend 1s, then EXPAND; each only where needed
    assert g.src[k] is parse(_shaped(k, s)).reshape((1,) * (len(out) - len(s)) + s).expand(out)


@given(st.lists(st.integers(1, 4), max_size=3).map(tuple), st.lists(st.integers(1, 4), max_size=3).map(tuple))
def test_broadcast_errors_where_numpy_does(a, b):
  src = _shaped(0, a) + _shaped(1, b) + "%r = add %s0, %s1"
  try: want = np.broadcast_shapes(a, b)
  except ValueError:
    with pytest.raises(UirParseError, match=re.escape(f"line 5: can't broadcast {a} with {b}")): parse(src)
  else: assert parse(src).shape == want


def test_where_broadcasts_three_operands():
  g = parse(_shaped(0, (3, 1)) + _shaped(1, (4,)) + "%c = cmplt %s0, %s1\n%r = where %c, 0.0, %s0")
  assert g.shape == (3, 4) and g.src[1] is g.src[2].const_like(0.0)


# ---------------------------------------------------------------- literals
def test_weak_literal_typing():
  g = parse("""%0 = buffer 4 : dtype=f64 slot=0
  %1 = buffer 4 : dtype=i32 slot=1
  %2 = range 4 : idx=0 kind=loop
  %3 = index %0, %2
  %4 = load %3
  %5 = mul %4, 2.5          # f64 from %4
  %6 = index %1, 3          # index operand: index
  %7 = load %6
  %8 = add 3, %7            # i32 from %7
  %9 = cast %8 : dtype=f64
  %10 = where true, %9, 1   # value literal: f64; condition: bool
  %11 = add %5, %10
  %12 = store %3, -1        # store value: the element's f64
  %13 = exp 1.0             # no context: f32
  %14 = add 2.5:f64, %11    # typed literal
  %15 = sink %12, %13, %14""")
  s12, s13, s14 = g.src
  assert s12.src[1] is UOp.const(-1.0, dtypes.float64)
  assert s13.src[0] is UOp.const(1.0, dtypes.float32)
  assert s14.src[0] is UOp.const(2.5, dtypes.float64)
  s11 = s14.src[1]
  mul, where = s11.src
  assert mul.src[1] is UOp.const(2.5, dtypes.float64)
  assert where.src[0] is UOp.const(True) and where.src[2] is UOp.const(1.0, dtypes.float64)
  add = where.src[1].src[0]
  assert add.src[0] is UOp.const(3, dtypes.int32) and add.src[1].src[0].src[1] is UOp.const(3, dtypes.index)
  assert parse(print_uir(g)) is g


@pytest.mark.parametrize("c, text", [
  (UOp.const(2.5, dtypes.float64), "%0 = const 2.5 : dtype=f64\n"),
  (UOp.const(-0.0), "%0 = const -0.0 : dtype=f32\n"),
  (UOp.const(True), "%0 = const true : dtype=bool\n"),
  (UOp.const(-7, dtypes.int8), "%0 = const -7 : dtype=i8\n")])
def test_const_root(c, text):
  assert print_uir(c) == text and parse(text) is c


def test_typed_literal_printed_only_when_context_differs():
  x = buf(0, 4, dtypes.int64)
  g = sink(x.index(UOp.const(1, dtypes.int32)).store(UOp.const(5, dtypes.int64)),
           UOp.const(2.5, dtypes.float64).reshape((1,)).expand((4,)).cast(dtypes.int64).reshape((4,)).stage())
  text = print_uir(g)
  assert "index %0, 1:i32" in text and "store %1, 5\n" in text and "reshape 2.5:f64, (1,)" in text
  assert parse(text) is g


@pytest.mark.parametrize("v", [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan, 1e-05, 5e-324,
                               3.4028234663852886e38, 0.1])
@pytest.mark.parametrize("d", [dtypes.float32, dtypes.float64])
def test_special_floats_round_trip(v, d):
  x = buf(0, 1, d).index(UOp.const(0)).load()
  for g in (UOp.const(v, d), x + UOp.const(v, d), UOp.const(v, d) * x):
    assert parse(print_uir(g)) is g


def test_comments_whitespace_and_line_numbers():
  g = parse("# a comment\n\n   %0 = buffer 12 : dtype=f32 slot=0   # trailing\n\t%1 = reshape %0, (3, 4)\n")
  assert g.shape == (3, 4)
  with pytest.raises(UirParseError, match=r"^line 4: .*: %1 = permute %0, \(1, 0\)$"):
    parse("# a comment\n\n   %0 = buffer 12 : dtype=f32 slot=0\n  %1 = permute %0, (1, 0)")


# ---------------------------------------------------------------- errors
B12 = "%0 = buffer 12 : dtype=f32 slot=0\n"

@pytest.mark.parametrize("text, msg", [
  (B12 + "%1 = mull %0, %0", "line 2: unknown op 'mull': %1 = mull %0, %0"),
  (B12 + "%1 = add %0", "line 2: wrong arity: add takes 2 operands, got 1"),
  (B12 + "%1 = where %0, %0", "line 2: wrong arity: where takes 3 operands, got 2"),
  (B12 + "%1 = index %0", "line 2: wrong arity: index takes at least 2 operands, got 1"),
  ("%0 = buffer 12, 3 : dtype=f32 slot=0", "line 1: wrong arity: buffer takes 1 operand, got 2"),
  (B12 + "%1 = add %0, %7", "line 2: undefined %7"),
  (B12 + "%0 = buffer 3 : dtype=f32 slot=1", "line 2: %0 is already defined"),
  ("%0 = buffer 12 : dtype=f32 slot=0 color=red", "line 1: unknown attribute 'color' for buffer"),
  ("%0 = buffer 12 : dtype=f33 slot=0", "line 1: bad value 'f33' for attribute 'dtype'"),
  ("%0 = buffer 12 : dtype=f32", "line 1: buffer needs attribute slot"),
  ("%0 = range 4 : idx=0 kind=loopy", "line 1: bad value 'loopy' for attribute 'kind'"),
  (B12 + "%1 = reduce %0 : op=sub pop=1", "line 2: bad value 'sub' for attribute 'op'"),
  (B12 + "%1 = reduce %0 : op=add pop=x", "line 2: bad value 'x' for attribute 'pop'"),
  (B12 + "%1 = add %0, 1 : dtype=f32", "line 2: unknown attribute 'dtype' for add"),
  (B12 + "%1 = add %0, 1.2.3", "line 2: bad literal '1.2.3'"),
  (B12 + "%1 = add %0, 2:f99", "line 2: unknown dtype 'f99'"),
  (B12 + "%1 = add %0, 2.5:i32", "line 2: literal 2.5 does not fit i32"),
  ("%0 = const 300 : dtype=u8", "line 1: literal 300 does not fit u8"),
  ("%0 = buffer 2.5 : dtype=f32 slot=0", "line 1: expected an integer, got '2.5'"),
  (B12 + "%1 = reshape %0, (5,)", "line 2: RESHAPE (12,) -> (5,): %1 = reshape %0, (5,)"),
  (B12 + "%1 = reshape %0, 12", "line 2: reshape: the last operand must be a tuple"),
  (B12 + "%1 = reshape %0, (1.5,)", "line 2: bad tuple"),
  (B12 + "%1 = add %0, (1,)", "line 2: add: unexpected tuple operand"),
  (B12 + "%1 = permute %0, (1, 0)", "line 2: PERMUTE (1, 0) of (12,)"),
  (B12 + "%1 = load %0", "line 2: LOAD: needs an INDEX"),
  (B12 + "%1 = add %0,, %0", "line 2: empty operand"),
  (B12 + "%1 add %0, %0", "line 2: expected '%N = op"),
  ("# nothing\n", "empty program")])
def test_errors(text, msg):
  with pytest.raises(UirParseError, match=re.escape(msg)): parse(text)


# ---------------------------------------------------------------- random graphs round-trip
INTS = [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64,
        dtypes.uint64]
DTYPES = [dtypes.bool, *INTS, dtypes.index, dtypes.float32, dtypes.float64]


def values(d):
  if d.is_bool: return st.booleans()
  if d.is_float: return st.floats(width=8 * d.itemsize)
  return st.integers(-2**70, 2**70) if d is dtypes.index else st.integers(d.min, d.max)


@st.composite
def scalars(draw, d, depth=3):
  """A random scalar expression of dtype d over RANGEs and CONSTs: + * // % max < where cast."""
  kinds = ["leaf"] + (["cmp", "where", "cast"] if d.is_bool else ["alu", "lit", "where", "cast"]) * (depth > 0)
  kind = draw(st.sampled_from(kinds))
  if kind == "leaf":
    if d is dtypes.index and draw(st.booleans()):
      return range_(draw(st.integers(1, 8)), draw(st.integers(0, 3)), draw(st.sampled_from(list(AxisType))))
    return UOp.const(draw(values(d)), d)
  sub = lambda e: draw(scalars(e, depth - 1))
  if kind == "alu":
    return UOp(draw(st.sampled_from([Ops.ADD, Ops.MUL, Ops.FLOORDIV, Ops.FLOORMOD, Ops.MAX])), (sub(d), sub(d)))
  if kind == "lit":
    return draw(st.sampled_from([operator.add, operator.mul, operator.floordiv, operator.mod]))(sub(d), draw(values(d)))
  if kind == "cmp":
    e = draw(st.sampled_from(DTYPES))
    return UOp(draw(st.sampled_from([Ops.CMPLT, Ops.CMPNE])), (sub(e), sub(e)))
  if kind == "where": return UOp(Ops.WHERE, (sub(dtypes.bool), sub(d), sub(d)))
  return sub(draw(st.sampled_from(DTYPES))).cast(d)


@st.composite
def programs(draw):
  """A scalar expression, alone or stored into a buffer inside the loops it mentions."""
  d = draw(st.sampled_from(DTYPES))
  e = draw(scalars(d))
  if d is dtypes.index or draw(st.booleans()): return e
  i = draw(scalars(dtypes.index, 2))
  store = buf(draw(st.integers(0, 3)), 8, d).index(i).store(e)
  return sink(store.end(*sorted(e.ranges | i.ranges, key=lambda r: r.arg.idx)))


@given(programs())
def test_random_scalar_graphs_round_trip(g):
  assert parse(print_uir(g)) is g


@st.composite
def movement_chains(draw):
  """A random chain of shape-world ops over a buffer: every movement op incl. PAD and FLIP (no-ops too), STACK,
  REDUCE, INDEX, CAST, STAGE and ALU ops with broadcast constants."""
  d = draw(st.sampled_from([dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.bool]))
  shape = tuple(draw(st.lists(st.integers(1, 4), max_size=4)))
  u = UOp(Ops.RESHAPE, (buf(draw(st.integers(0, 2)), prod(shape), d),), shape)
  for _ in range(draw(st.integers(0, 6))):
    s, k = u.shape, draw(st.sampled_from(["permute", "shrink", "reshape", "expand", "stack", "reduce", "alu", "cast",
                                          "stage",
                                          "index", "pad", "flip"]))
    if k == "permute": u = UOp(Ops.PERMUTE, (u,), tuple(draw(st.permutations(range(len(s))))))
    elif k == "shrink":
      u = UOp(Ops.SHRINK, (u,), tuple((b, draw(st.integers(b, n))) for n in s for b in [draw(st.integers(0, n))]))
    elif k == "reshape": u = UOp(Ops.RESHAPE, (u,), draw(st.sampled_from([(prod(s),), (1, *s), s])))
    elif k == "expand": u = UOp(Ops.EXPAND, (u,), tuple(draw(st.integers(1, 3)) if n == 1 else n for n in s))
    elif k == "stack": u = UOp(Ops.STACK, (u, u.const_like(draw(values(u.dtype)))) if draw(st.booleans()) else (u,))
    elif k == "reduce":
      ops = [Ops.MAX, Ops.MIN] if u.dtype.is_bool else list(REDUCE_OPS)
      u = u.reduce(draw(st.sampled_from(ops)), draw(st.integers(0, len(s))))
    elif k == "alu": u = u.maximum(draw(values(u.dtype))) if u.dtype.is_bool else u * draw(values(u.dtype)) < u
    elif k == "cast": u = u.cast(draw(st.sampled_from([t for t in DTYPES if t is not dtypes.index])))
    elif k == "stage": u = u.stage()
    elif k == "index" and s and s[0]: u = u.index(draw(st.integers(0, s[0] - 1)))
    # a nan pad value is never hash-consed to itself (uop.argkey only normalizes a top-level float arg)
    elif k == "pad": u = UOp(Ops.PAD, (u,), (tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in s),
                                             u.dtype.python(draw(values(u.dtype).filter(lambda v: v == v)))))
    elif k == "flip":
      u = UOp(Ops.FLIP, (u,), tuple(draw(st.lists(st.integers(0, len(s) - 1), unique=True)) if s else ()))
  return u


@given(movement_chains())
def test_random_movement_chains_round_trip(g):
  assert parse(print_uir(g)) is g
