"""split.py (index splitting): a loop whose body compares its index with constants (a pad's edges, a concatenation's
seams) runs as one loop per stretch. Values are the unsplit program's, bit for bit, and NumPy's; the C of a split
loop has no comparison, clamp or select left; loops the contract excludes are left alone."""
import re
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend import split, tiers
from minitensor.backend.dtype import dtypes
from minitensor.backend.rangeify import Ctx, Opts, lower
from minitensor.backend.render_c import PRELUDE, render_function
from minitensor.backend.runtime import compile_c, native
from minitensor.backend.split import split_loops
from minitensor.backend.uop import Ops, UOp, buf, prod, range_

rng = np.random.default_rng(5)


def both(root: UOp, inputs: list[np.ndarray], opts: Opts = Opts()) -> tuple[np.ndarray, np.ndarray, UOp]:
  """root's values from its lowered program as it is and split (both compiled by the tier-0 compiler, which is
  quick), and the split program."""
  program = lower(root, buf(len(inputs), prod(root.shape), root.dtype), Ctx(opts=opts))
  cut = split_loops(program)
  src = render_function(program, "plain") + render_function(cut, "cut")
  cc, flags = tiers.toolchain(0, False)           # (loop kernels of real dtypes: tcc compiles them)
  lib = compile_c(PRELUDE + src, flags, cc, {k: ("void*",) * (len(inputs) + 1) for k in ("plain", "cut")})
  out = []
  for name in ("plain", "cut"):
    res = np.full(prod(root.shape), np.nan, root.dtype.np)
    lib[name].fn(*[native().from_buffer(np.ascontiguousarray(a)) for a in inputs], native().from_buffer(res))
    out.append(res.reshape(root.shape))
  return out[0], out[1], cut


def innermost_bodies(src: str) -> list[str]:
  """The text of every loop body in the C that holds no loop of its own."""
  return re.findall(r"for \([^)]*\) \{\n((?:(?!  *for \().)*?)\n *\}", src, re.S)


pads = st.tuples(st.integers(0, 4), st.integers(0, 4))


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3), data=st.data(),
       opts=st.sampled_from([Opts(), Opts(thread=0)]))
def test_split_pads_equal_the_unsplit_program_and_numpy(shape, data, opts):
  widths = tuple(data.draw(pads) for _ in shape)
  flip = data.draw(st.booleans())
  x = rng.standard_normal(shape).astype(np.float32)
  root = buf(0, x.size, dtypes.float32).reshape(tuple(shape)).pad(widths, 2.5)
  if flip: root = root.flip((len(shape) - 1,))
  plain, cut, _ = both(root, [x.reshape(-1)], opts)
  want = np.pad(x, widths, constant_values=2.5)
  if flip: want = np.flip(want, -1)
  np.testing.assert_array_equal(cut, plain)
  np.testing.assert_array_equal(cut, want)


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 5), widths=st.lists(st.integers(1, 9), min_size=2, max_size=10))
def test_split_concatenations_equal_numpy(rows, widths):
  parts = [rng.standard_normal((rows, w)).astype(np.float32) for w in widths]
  total, root = sum(widths), None
  for k, p in enumerate(parts):                      # a concatenation as the frontend builds it: padded parts added
    before = sum(widths[:k])
    u = buf(k, p.size, dtypes.float32).reshape(p.shape).pad(((0, 0), (before, total - before - widths[k])))
    root = u if root is None else root + u
  plain, cut, program = both(root, [p.reshape(-1) for p in parts])
  np.testing.assert_array_equal(cut, plain)
  np.testing.assert_array_equal(cut, np.concatenate(parts, axis=1))
  split_happened = len(widths) <= split.MAX_STRETCHES
  assert (program is not lower(root, buf(len(parts), prod(root.shape), root.dtype))) == split_happened


def test_a_split_concatenation_is_plain_copies():
  a, b = rng.standard_normal((30, 200)).astype(np.float32), rng.standard_normal((30, 100)).astype(np.float32)
  ua, ub = buf(0, a.size).reshape((30, 200)), buf(1, b.size).reshape((30, 100))
  root = ua.pad(((0, 0), (0, 100))) + (ub * ub.const_like(2.0)).pad(((0, 0), (200, 0)))
  plain, cut, program = both(root, [a.reshape(-1), b.reshape(-1)])
  np.testing.assert_array_equal(cut, np.concatenate([a, 2 * b], axis=1))
  src = render_function(program, "kernel")
  bodies = innermost_bodies(src)
  assert len(bodies) == 2 and "for (int ridx1" not in src                 # the 300-column loop is gone
  for body in bodies: assert not re.search(r"<|\?|min_|max_|-0\.0f", body), body


def test_a_pad_splits_into_its_edges_and_a_copy():
  x = rng.standard_normal((4, 50)).astype(np.float32)
  root = buf(0, x.size).reshape((4, 50)).pad(((0, 0), (1, 2)))
  plain, cut, program = both(root, [x.reshape(-1)])
  np.testing.assert_array_equal(cut, np.pad(x, ((0, 0), (1, 2))))
  src = render_function(program, "kernel")
  for body in innermost_bodies(src): assert not re.search(r"<|\?|min_|max_", body), body
  loops = re.findall(r"for \(int \w+ = 0; \w+ < (\d+);", src)
  assert loops == ["4", "50", "2"]                  # the rows, the copy and the right edge; the left one is a store


def test_loops_outside_the_contract_are_left_alone():
  x = buf(0, 64 * 64).reshape((64, 64))
  reduce_inside = lower(x.pad(((0, 0), (1, 1))).reduce(Ops.ADD, 1), buf(1, 64))
  assert split_loops(reduce_inside) is reduce_inside        # the body holds a loop of its own (the reduce)
  threaded = lower(x.pad(((0, 0), (2, 2))).reshape((64 * 68,)), buf(1, 64 * 68), Ctx(opts=Opts(thread=0)))
  assert split_loops(threaded) is threaded                 # the only loop is the THREAD loop
  many = None
  for k in range(9):                                       # 9 stretches: more than MAX_STRETCHES
    u = buf(k, 64).reshape((64, 1)).pad(((0, 0), (k, 8 - k)))
    many = u if many is None else many + u
  program = lower(many, buf(9, 64 * 9))
  assert split.MAX_STRETCHES < 9 and split_loops(program) is program


def test_cuts_need_an_affine_index():
  r = range_(20, 0)
  store = lambda cond: [cond]
  assert split._cuts(store((r * 2 + 1) < 9), r) == [4]                      # 2r + 1 < 9 until r = 4
  assert split._cuts(store(r.const_like(5) < r), r) == [6]                   # 5 < r from r = 6
  assert split._cuts(store((r * -1) <= -7), r) == [7]                        # -r <= -7 from r = 7
  assert split._cuts(store(r < 0), r) == [] and split._cuts(store(r < 25), r) == []     # never changes in [0, 20)
  assert split._cuts(store((r * r) < 10), r) == []                          # not affine: left alone
  other = range_(20, 1)
  assert split._cuts(store((r + other) < 10), r) == []                      # another loop's index: left alone


def test_symbolic_loops_are_not_split():
  a = mt.asarray(rng.standard_normal((5, 7)).astype(np.float32))      # small: lowered with symbolic sizes
  t = mt.pad(a * 2, ((1, 1), (2, 2)))
  (k,) = mt.explain(t).kernels
  assert "?" in k.source                                               # the select stays: sizes are arguments
  np.testing.assert_array_equal(np.asarray(t), np.pad(np.asarray(a) * 2, ((1, 1), (2, 2))))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_library_concatenate_and_pad_take_the_split_loops(dtype):
  a = (rng.standard_normal((300, 200)) * 10).astype(dtype)
  b = (rng.standard_normal((300, 150)) * 10).astype(dtype)
  t = mt.concatenate([mt.asarray(a), mt.asarray(b) * 2], axis=1)
  (k,) = mt.explain(t).kernels
  assert all("?" not in body for body in innermost_bodies(k.source))
  np.testing.assert_array_equal(np.asarray(t), np.concatenate([a, b * 2], axis=1))
  p = mt.pad(mt.asarray(a) + 1, ((2, 3), (4, 1)), constant_values=7)
  np.testing.assert_array_equal(np.asarray(p), np.pad(a + 1, ((2, 3), (4, 1)), constant_values=7))


def test_negative_zero_is_kept_where_it_is_a_value():
  """x + -0.0 folds to x (exact); a concatenated -0.0 stays -0.0, and -0.0 + 0.0 stays +0.0 (no fold of + 0.0)."""
  a = np.array([[-0.0, 0.0, 1.0]] * 30000, np.float32)
  t = mt.concatenate([mt.asarray(a), mt.asarray(a) * 1.0], axis=1)
  got = np.asarray(t)
  np.testing.assert_array_equal(np.signbit(got), np.signbit(np.concatenate([a, a], axis=1)))
  z = mt.asarray(np.full(100000, -0.0, np.float32)) + 0.0          # (a literal 0.0 in the kernel)
  assert not np.signbit(np.asarray(z)).any()


def test_a_body_reading_what_it_writes_is_not_split():
  """Sibling stretches run in no promised order, so a loop that reads the buffer it stores to keeps its order."""
  x = buf(0, 64 * 64).reshape((64, 64))
  program = lower(x.pad(((0, 0), (1, 1))), buf(0, 64 * 66))           # (slot 0 read and written: an in-place form)
  assert split_loops(program) is program
  other = lower(x.pad(((0, 0), (1, 1))), buf(1, 64 * 66))
  assert split_loops(other) is not other


def test_a_loop_another_statement_waits_for_is_not_split():
  """An END that an AFTER orders other statements after (a buffer read once the loop has written it) stays one
  loop (the loop reading through the AFTER holds one, so it is not split either)."""
  x, tmp, out = buf(0, 64), buf(1, 66), buf(2, 68)
  (first,) = lower(x.reshape((64,)).pad(((1, 1),)), tmp).src               # tmp = x padded: an END
  r = range_(68, 7)
  i = r - 1
  ok = (i >= 0) & (i < 66)
  second = out.index(r).store(ok.where(tmp.after(first).index(i.maximum(0).minimum(65)).load(), 0.0)).end(r)
  program = UOp(Ops.SINK, (first, second))
  cut = split_loops(program)
  assert cut is program
  assert split_loops(UOp(Ops.SINK, (first,))) is not UOp(Ops.SINK, (first,))         # alone, it is split
  xs = rng.standard_normal(64).astype(np.float32)
  res, scratch = np.full(68, np.nan, np.float32), np.full(66, np.nan, np.float32)
  src = render_function(cut, "kernel")
  cc, flags = tiers.toolchain(0, False)
  k = compile_c(PRELUDE + src, flags, cc, {"kernel": ("void*",) * 3})["kernel"]
  k.fn(*[native().from_buffer(a) for a in (xs, scratch, res)])
  np.testing.assert_array_equal(res, np.pad(xs, 2))
