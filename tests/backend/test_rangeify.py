"""rangeify and lower(): the shape world (movement ops, REDUCE, STACK, PAD, FLIP) lowered to loops, run as C and
compared with NumPy; loop structure read from the generated C; type errors at construction; bounds of every load.

NumPy (or SciPy) is the oracle everywhere. Chains use small integer-valued data, so sums and products are exact
in every dtype and the comparison can be exact too.
"""
import re
import numpy as np
import pytest
import scipy.signal
from hypothesis import given, settings
from hypothesis import strategies as st
from minitensor.backend import composite
from minitensor.backend.debug import run_c, run_shaped
from minitensor.backend.dtype import dtypes
from minitensor.backend.rangeify import Ctx, Opts, lower
from minitensor.backend.render_c import PRELUDE, render_function
from minitensor.backend.uir import parse
from minitensor.backend.uop import Ops, UOp, UOpError, buf, prod


# ---------------------------------------------------------------- helpers
def lowered(root: UOp, n_inputs: int, opts: Opts | None = None) -> UOp:
  """root lowered into an output BUFFER in slot n_inputs (as run_shaped does)."""
  return lower(root, buf(n_inputs, max(1, prod(root.shape)), root.dtype), Ctx(opts=opts or Opts()))


def c_source(root: UOp, n_inputs: int, opts: Opts | None = None, name: str = "kernel") -> str:
  return render_function(lowered(root, n_inputs, opts), name)


_FOR = re.compile(r"for \(\w+ (ridx\d+) = 0; ridx\d+ < (\d+); ridx\d+\+\+\) \{")


def nesting(src: str) -> list[tuple[tuple[str, ...], str]]:
  """Every statement of a C function with the loop counters around it, outermost first. A `for` line is
  listed with the loops around it (not itself)."""
  stack: list[str] = []
  out = []
  for line in src.splitlines()[1:]:
    s = line.strip()
    if m := _FOR.match(s):
      out.append((tuple(stack), s))
      stack.append(m.group(1))
    elif s == "}":
      if stack: stack.pop()
    elif s: out.append((tuple(stack), s))
  return out


def loops_around(src: str, pattern: str) -> list[tuple[str, ...]]:
  """The loop stacks of the statements matching the regex `pattern`."""
  return [loops for loops, s in nesting(src) if re.search(pattern, s)]


def buffer_of(idx: UOp) -> UOp:
  b = idx.src[0]
  while b.op is Ops.AFTER: b = b.src[0]
  return b


def assert_loads_in_bounds(prog: UOp) -> int:
  """Every INDEX into a BUFFER of the lowered program provably addresses [0, size). Returns how many."""
  n = 0
  for u in prog.toposort():
    if u.op is Ops.INDEX and (b := buffer_of(u)).op is Ops.BUFFER:
      i = u.src[1]
      assert 0 <= i.vmin and i.vmax < b.arg.shape[0], \
        f"slot {b.arg.slot}: index in [{i.vmin}, {i.vmax}], size {b.arg.shape[0]}"
      n += 1
  return n


def data(shape, dtype, seed: int = 0) -> np.ndarray:
  """Small integer values (exact sums and products in every dtype)."""
  rng = np.random.default_rng(seed)
  if dtype is dtypes.bool: return rng.integers(0, 2, shape).astype(bool)
  lo = 0 if dtype.is_unsigned else -9
  return rng.integers(lo, 10, shape).astype(dtype.np)


# ---------------------------------------------------------------- random movement chains
# An op is a tuple (kind, *args); apply_uop and apply_np give the same op to the graph and to the NumPy reference.
MAX_SIZE, MAX_RANK = 400, 6


def _divisors(n: int) -> list[int]: return [d for d in range(1, n + 1) if n % d == 0]


def apply_uop(op: tuple, u: UOp) -> UOp:
  k, *a = op
  if k == "reshape": return u.reshape(a[0])
  if k == "expand":
    pos, n = a
    s = u.shape[:pos] + (1,) + u.shape[pos:]
    return u.reshape(s).expand(s[:pos] + (n,) + s[pos + 1:])
  if k == "permute": return u.permute(a[0])
  if k == "shrink": return u.shrink(a[0])
  if k == "stack":
    axis, m = a
    n = u.shape[axis] - m + 1
    return UOp(Ops.STACK, tuple(u.shrink(tuple((o, o + n) if j == axis else (0, s) for j, s in enumerate(u.shape)))
                                for o in range(m)))
  if k == "pad": return composite.pad(u, a[0])
  if k == "ppad": return u.pad(a[0], a[1])
  if k == "flip_axis": return composite.flip_axis(u, a[0])
  if k == "flip_stack": return composite.flip_stack(u, a[0])
  if k == "flip": return u.flip(a[0])
  if k == "reduce": return u.reduce(a[0], a[1])
  raise AssertionError(k)


def apply_np(op: tuple, x: np.ndarray) -> np.ndarray:
  k, *a = op
  if k == "reshape": return x.reshape(a[0])
  if k == "expand":
    pos, n = a
    y = np.expand_dims(x, pos)
    return np.broadcast_to(y, y.shape[:pos] + (n,) + y.shape[pos + 1:])
  if k == "permute": return x.transpose(a[0])
  if k == "shrink": return x[tuple(slice(b, e) for b, e in a[0])]
  if k == "stack":
    axis, m = a
    n = x.shape[axis] - m + 1
    return np.stack([x[(slice(None),) * axis + (slice(o, o + n),)] for o in range(m)])
  if k == "pad": return np.pad(x, a[0])
  if k == "ppad": return np.pad(x, a[0], constant_values=a[1])
  if k in ("flip_axis", "flip_stack", "flip"): return np.flip(x, a[0])
  if k == "reduce":
    rop, n = a
    axes = tuple(range(x.ndim - n, x.ndim))
    if rop is Ops.ADD: return np.add.reduce(x, axis=axes, dtype=x.dtype)
    return np.maximum.reduce(x, axis=axes)
  raise AssertionError(k)


KINDS = ("merge", "split", "factor", "expand", "permute", "shrink", "stack", "pad", "ppad", "flip_axis",
         "flip_stack", "flip", "reduce")


def _draw_op(draw, kind: str, shape: tuple[int, ...]) -> tuple | None:
  r = len(shape)
  if kind == "merge":
    if r < 2: return None
    k = draw(st.integers(0, r - 2))
    return ("reshape", shape[:k] + (shape[k] * shape[k + 1],) + shape[k + 2:])
  if kind == "split":
    if r == 0 or r >= MAX_RANK: return None
    k = draw(st.integers(0, r - 1))
    d = draw(st.sampled_from(_divisors(shape[k])))
    return ("reshape", shape[:k] + (d, shape[k] // d) + shape[k + 1:])
  if kind == "factor":                                           # any reshape: a random factorization of the size
    n, out = prod(shape), []
    while len(out) < MAX_RANK - 1 and draw(st.booleans()):
      d = draw(st.sampled_from(_divisors(n)))
      out.append(d)
      n //= d
    return ("reshape", tuple(out) + (n,))
  if kind == "expand":
    if r >= MAX_RANK: return None
    return ("expand", draw(st.integers(0, r)), draw(st.integers(1, 3)))
  if kind == "permute":
    if r < 2: return None
    return ("permute", tuple(draw(st.permutations(range(r)))))
  if kind == "shrink":
    if r == 0: return None
    arg = []
    for s in shape:
      b = draw(st.integers(0, s - 1))
      arg.append((b, draw(st.integers(b + 1, s))))
    return ("shrink", tuple(arg))
  if kind == "stack":
    axes = [k for k, s in enumerate(shape) if s >= 2]
    if not axes or r >= MAX_RANK: return None
    axis = draw(st.sampled_from(axes))
    return ("stack", axis, draw(st.integers(2, min(3, shape[axis]))))
  if kind in ("pad", "ppad"):
    if r == 0: return None
    pads = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 6))) for _ in shape)    # after > axis: doubling rounds
    return ("pad", pads) if kind == "pad" else ("ppad", pads, draw(st.sampled_from([0, -3, 7])))
  if kind in ("flip_axis", "flip_stack"):
    if r == 0: return None
    return (kind, draw(st.integers(0, r - 1)))
  if kind == "flip":
    return ("flip", tuple(sorted(draw(st.sets(st.integers(0, r - 1), max_size=r)))) if r else ())
  if kind == "reduce":
    return ("reduce", draw(st.sampled_from([Ops.ADD, Ops.MAX])), draw(st.integers(0, min(r, 2))))
  raise AssertionError(kind)


@st.composite
def chains(draw, kinds=KINDS, max_ops: int = 8, dts=(dtypes.float32, dtypes.int32)):
  """(start shape, dtype, [op, ...]): rank 1-4, sizes 1-5, up to max_ops ops, every intermediate at most MAX_SIZE."""
  shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
  dtype = draw(st.sampled_from(dts))
  ref = np.zeros(shape, dtype.np)
  ops: list[tuple] = []
  n = draw(st.sampled_from(range(max_ops, 0, -1)))
  for _ in range(2 * n):
    if len(ops) == n: break
    op = _draw_op(draw, draw(st.sampled_from(kinds)), ref.shape)
    if op is None: continue
    new = apply_np(op, ref)
    if new.size > MAX_SIZE or new.ndim > MAX_RANK: continue
    ops.append(op)
    ref = new
  return shape, dtype, ops


def build(shape, dtype, ops, seed=0):
  x = data(shape, dtype, seed)
  u, ref = buf(0, x.size, dtype).reshape(shape), x
  for op in ops: u, ref = apply_uop(op, u), apply_np(op, ref)
  assert u.shape == ref.shape and u.dtype.np == ref.dtype, (u.shape, ref.shape, u.dtype, ref.dtype)
  return u, ref, x


@settings(max_examples=300)
@given(chains())
def test_random_movement_chains(chain):
  u, ref, x = build(*chain)
  np.testing.assert_array_equal(run_shaped(u, [x.ravel()]), ref)


@st.composite
def opts_for(draw, shape: tuple[int, ...]) -> Opts:
  """Random Opts valid for an output of `shape` (factors need not divide the sizes)."""
  r = len(shape)
  axes = st.integers(0, r - 1) if r else st.nothing()
  upcast = draw(st.dictionaries(axes, st.sampled_from([2, 3, 4]), max_size=1)) if r else {}
  tile = draw(st.dictionaries(axes, st.sampled_from([2, 4, 8]), max_size=2)) if r else {}
  thread = draw(st.one_of(st.none(), axes)) if r else None
  unroll = draw(st.sampled_from([1, 2] if upcast else [1, 2, 3, 4]))        # copies multiply: keep the graphs small
  return Opts(upcast=upcast, thread=thread, unroll=unroll, tile=tile)


@settings(max_examples=300)
@given(chains(), st.data())
def test_random_chain_loads_are_in_bounds(chain, d):
  u, _, _ = build(*chain)
  assert assert_loads_in_bounds(lowered(u, 1)) >= 1               # at least the output store
  assert assert_loads_in_bounds(lowered(u, 1, d.draw(opts_for(u.shape)))) >= 1


@settings(max_examples=60)
@given(chains(), st.data())
def test_random_chains_with_opts(chain, d):
  # Opts change which RANGEs exist and how an output index is assembled, never the values
  u, ref, x = build(*chain)
  np.testing.assert_array_equal(run_shaped(u, [x.ravel()], d.draw(opts_for(u.shape))), ref)


@pytest.mark.parametrize("seed", range(5))
def test_seed_random_movement_chains(seed):
  # section 6.13 as written: six random ops (permute, shrink, expand, flatten) on a (2, 3, 4) tensor
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(24).astype(np.float32)
  u, ref = buf(0, 24).reshape((2, 3, 4)), x.reshape(2, 3, 4)
  for _ in range(6):
    k = rng.integers(4)
    if k == 0:
      p = tuple(rng.permutation(len(ref.shape))); u, ref = u.permute(p), ref.transpose(p)
    elif k == 1:
      arg = tuple((int(b), int(rng.integers(b + 1, s + 1))) for s in ref.shape for b in [rng.integers(0, s)])
      u, ref = u.shrink(arg), ref[tuple(slice(b, e) for b, e in arg)]
    elif k == 2:
      u, ref = u.reshape((1,) + u.shape), ref.reshape((1,) + ref.shape)
      u, ref = u.expand((2,) + u.shape[1:]), np.broadcast_to(ref, (2,) + ref.shape[1:])
    else:
      u, ref = u.reshape((int(np.prod(ref.shape)),)), ref.reshape(-1)
  np.testing.assert_array_equal(run_shaped(u, [x]), ref)


@pytest.mark.parametrize("perm", [(1, 2, 0), (2, 0, 1), (0, 2, 1), (2, 1, 0), (1, 0, 2)])
def test_rank3_permutations_pitfall5(perm):
  # (1, 2, 0) and (2, 0, 1) are not their own inverses: applying p instead of its inverse gets them wrong
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  u = buf(0, 24).reshape((2, 3, 4)).permute(perm)
  np.testing.assert_array_equal(run_shaped(u, [x.ravel()]), x.transpose(perm))
  np.testing.assert_array_equal(run_shaped(u.reshape((24,)), [x.ravel()]), x.transpose(perm).ravel())


@pytest.mark.parametrize("perm", [(1, 2, 3, 0), (3, 0, 1, 2), (2, 3, 0, 1), (1, 3, 0, 2)])
def test_rank4_permutations(perm):
  x = np.arange(120, dtype=np.int32).reshape(2, 3, 4, 5)
  u = buf(0, 120, dtypes.int32).reshape((2, 3, 4, 5)).permute(perm)
  np.testing.assert_array_equal(run_shaped(u, [x.ravel()]), x.transpose(perm))


# ---------------------------------------------------------------- the seed's programs
def test_view_chain_two_loads():
  x = buf(0, 12).reshape((3, 4))
  y = x.permute((1, 0)).shrink(((1, 3), (0, 3)))         # rows 1..2 of x^T: (2, 3)
  b = buf(1, 3).reshape((1, 3)).expand((2, 3))
  root = y * b
  xa, ba = data(12, dtypes.float32, 1), data(3, dtypes.float32, 2)
  np.testing.assert_array_equal(run_shaped(root, [xa, ba]), xa.reshape(3, 4).T[1:3, 0:3] * ba[None, :])
  src = c_source(root, 2)
  assert len(re.findall(r"data[01]\[", src)) == 2, src        # five movement ops, zero copies
  assert "/" not in src and "%" not in src, src


def test_flat_transpose_index_exercise1():
  # x.permute((1, 0)).reshape((12,)): element r is x[r % 3, r // 3], the only // and % left in the index
  x = np.arange(12, dtype=np.float32)
  u = buf(0, 12).reshape((3, 4)).permute((1, 0)).reshape((12,))
  np.testing.assert_array_equal(run_shaped(u, [x]), x.reshape(3, 4).T.ravel())
  loads = re.findall(r"data0\[(.*)\];", c_source(u, 1))
  assert len(loads) == 1 and "%3" in loads[0] and "/3" in loads[0], loads


def _gemm_uir(n: int) -> str:
  return f"""
  %0 = buffer {n*n} : dtype=f32 slot=0
  %1 = buffer {n*n} : dtype=f32 slot=1
  %2 = reshape %0, ({n}, 1, {n})
  %3 = reshape %1, ({n}, {n})
  %4 = permute %3, (1, 0)
  %5 = reshape %4, (1, {n}, {n})
  %6 = mul %2, %5
  %7 = reduce %6 : op=add pop=1"""


def test_gemm_from_movement_ops():
  N = 16
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((N, N)).astype(np.float32), rng.standard_normal((N, N)).astype(np.float32)
  g = parse(_gemm_uir(N))
  np.testing.assert_allclose(run_shaped(g, [a.ravel(), b.ravel()]), a @ b, rtol=1e-5, atol=1e-5)
  # the textbook triple loop: the accumulator lives in the j loop, the update in the k loop
  src = c_source(parse(_gemm_uir(4)), 2)
  (init,) = loops_around(src, r"acc0 = 0\.0f;")
  (upd,) = loops_around(src, r"acc0 = (\(|fmaf\()")       # a sum of products is one fused multiply-add
  assert len(init) == 2 and len(upd) == 3 and upd[:2] == init, src


def test_syllabus_gemm_is_not_a_gemm():
  # the syllabus program computes A * rowsum(B) (Pitfall 1)
  N = 8
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((N, N)).astype(np.float32), rng.standard_normal((N, N)).astype(np.float32)
  g = parse(f"""
  %0 = buffer {N*N} : dtype=f32 slot=0
  %1 = buffer {N*N} : dtype=f32 slot=1
  %2 = reshape %0, ({N}, {N}, 1)
  %3 = reshape %1, ({N}, 1, {N})
  %4 = mul %2, %3
  %5 = reduce %4 : op=add pop=1""")
  out = run_shaped(g, [a.ravel(), b.ravel()])
  np.testing.assert_allclose(out, a * b.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
  assert not np.allclose(out, a @ b, atol=1e-2)
  # A's load does not mention k, so it sits outside the k loop
  src = c_source(g, 2)
  (a_load,) = loops_around(src, r"= data0\[")
  (upd,) = loops_around(src, r"acc0 = (\(|fmaf\()")
  assert len(a_load) == 2 and len(upd) == 3, src


def test_fixed_syllabus_gemm_256_exercise8():
  # A (i, k) -> (N, N, 1) and B (k, j) -> (1, N, N) meet on (i, k, j); move k last and sum it: A @ B, both row-major
  N = 256
  rng = np.random.default_rng(2)
  a, b = rng.integers(-3, 4, (N, N)).astype(np.float32), rng.integers(-3, 4, (N, N)).astype(np.float32)
  g = parse(f"""
  %0 = buffer {N*N} : dtype=f32 slot=0
  %1 = buffer {N*N} : dtype=f32 slot=1
  %2 = reshape %0, ({N}, {N}, 1)
  %3 = reshape %1, (1, {N}, {N})
  %4 = mul %2, %3
  %5 = permute %4, (0, 2, 1)
  %6 = reduce %5 : op=add pop=1""")
  np.testing.assert_array_equal(run_shaped(g, [a.ravel(), b.ravel()]), a @ b)     # integer data: exact


def conv1d(L: int, K: int) -> UOp:
  Lo = L - K + 1
  x, w = buf(0, L), buf(1, K)
  win = UOp(Ops.STACK, tuple(x.shrink(((k, k + Lo),)) for k in range(K)))      # (K, Lo): win[k, i] = x[i+k]
  cols = win.permute((1, 0))                                                    # (Lo, K)
  return (cols * w.reshape((1, K)).expand((Lo, K))).reduce(Ops.ADD, 1)


@pytest.mark.parametrize("L,K", [(8, 3), (9, 1), (5, 5), (12, 4)])
def test_conv1d(L, K):
  rng = np.random.default_rng(L * 10 + K)
  x, w = rng.standard_normal(L).astype(np.float32), rng.standard_normal(K).astype(np.float32)
  np.testing.assert_allclose(run_shaped(conv1d(L, K), [x, w]), np.convolve(x, w[::-1], "valid"), rtol=1e-5, atol=1e-5)


def test_conv1d_seed_values_and_hoisted_loads():
  x, w = np.arange(8, dtype=np.float32), np.array([1, 10, 100], np.float32)
  np.testing.assert_array_equal(run_shaped(conv1d(8, 3), [x, w]), np.convolve(x, w[::-1], "valid"))
  src = c_source(conv1d(8, 3), 2)
  x_loads = loops_around(src, r"= data0\[")
  assert len(x_loads) == 3 and all(len(s) == 1 for s in x_loads), src     # the three window loads leave the k loop


def conv2d(H: int, W: int, KH: int, KW: int) -> UOp:
  """Exercise 4: valid 2D correlation from SHRINK, STACK, PERMUTE, RESHAPE, EXPAND, MUL and REDUCE only."""
  Ho, Wo = H - KH + 1, W - KW + 1
  x, w = buf(0, H * W).reshape((H, W)), buf(1, KH * KW).reshape((KH, KW))
  win = UOp(Ops.STACK, tuple(UOp(Ops.STACK, tuple(x.shrink(((i, i + Ho), (j, j + Wo))) for j in range(KW)))
                             for i in range(KH)))                              # (KH, KW, Ho, Wo)
  cols = win.permute((2, 3, 0, 1))                                              # (Ho, Wo, KH, KW)
  return (cols * w.reshape((1, 1, KH, KW)).expand((Ho, Wo, KH, KW))).reduce(Ops.ADD, 2)


@pytest.mark.parametrize("H,W,KH,KW", [(6, 7, 3, 2), (5, 5, 1, 1), (4, 6, 4, 3), (8, 8, 3, 3)])
def test_conv2d_exercise4(H, W, KH, KW):
  root = conv2d(H, W, KH, KW)
  assert {u.op for u in root.toposort()} <= {Ops.BUFFER, Ops.SHRINK, Ops.STACK, Ops.PERMUTE, Ops.RESHAPE, Ops.EXPAND,
                                             Ops.MUL, Ops.REDUCE}
  rng = np.random.default_rng(H * W + KH)
  x, w = rng.standard_normal((H, W)), rng.standard_normal((KH, KW))
  out = run_shaped(root, [x.astype(np.float32).ravel(), w.astype(np.float32).ravel()])
  np.testing.assert_allclose(out, scipy.signal.correlate2d(x, w, "valid"), rtol=1e-4, atol=1e-4)
  assert_loads_in_bounds(lowered(root, 2))


@pytest.mark.parametrize("H,W", [(4, 6), (2, 2), (8, 4)])
def test_max_pool_2x2_exercise7(H, W):
  x = data((H, W), dtypes.float32, H + W)
  u = buf(0, H * W).reshape((H // 2, 2, W // 2, 2)).permute((0, 2, 1, 3)).reduce(Ops.MAX, 2)
  ops = [v.op for v in u.toposort()]
  assert ops.count(Ops.RESHAPE) == ops.count(Ops.PERMUTE) == ops.count(Ops.REDUCE) == 1
  np.testing.assert_array_equal(run_shaped(u, [x.ravel()]), x.reshape(H // 2, 2, W // 2, 2).max((1, 3)))


# ---------------------------------------------------------------- loop structure, read from the C
def test_sub_max_row_max_once_per_row():
  x = buf(0, 12).reshape((3, 4))
  root = x - x.reduce(Ops.MAX, 1).reshape((3, 1)).expand((3, 4))
  xa = data(12, dtypes.float32, 3)
  np.testing.assert_array_equal(run_shaped(root, [xa]), xa.reshape(3, 4) - xa.reshape(3, 4).max(1, keepdims=True))
  src = c_source(root, 1)
  (init,) = loops_around(src, r"acc0 = -INFINITY;")
  (upd,) = loops_around(src, r"acc0 = r?max")
  (store,) = loops_around(src, r"data1\[.*\] =")
  # max loop and column loop are siblings in the row loop
  assert len(init) == 1 and upd[:1] == store[:1] == init, src
  assert len(upd) == len(store) == 2 and upd[1] != store[1], src
  assert len(_FOR.findall(src)) == 3, src


def test_reshape_round_trip_keeps_row_max_outside_column_loop():
  # section 6.9: ((i*4 + j)//4) % 4 is i; left unsimplified it would put the max inside the j loop (O(N^3))
  x = buf(0, 16).reshape((4, 4))
  rowmax = x.reduce(Ops.MAX, 1).reshape((4, 1)).expand((4, 4))
  root = (x - rowmax).reshape((16,)).reshape((4, 4))
  xa = data(16, dtypes.float32, 4)
  np.testing.assert_array_equal(run_shaped(root, [xa]), xa.reshape(4, 4) - xa.reshape(4, 4).max(1, keepdims=True))
  src = c_source(root, 1)
  (init,) = loops_around(src, r"acc0 = -INFINITY;")
  (upd,) = loops_around(src, r"acc0 = r?max")
  (store,) = loops_around(src, r"data1\[.*\] =")
  assert len(init) == 1 and upd[:1] == store[:1] == init and upd[1] != store[1], src


def test_neighbors_two_accumulators_one_loop():
  x = buf(0, 20).reshape((4, 5))
  y = x.reduce(Ops.ADD, 1)
  z = y.shrink(((0, 3),)) + y.shrink(((1, 4),))        # s[i] + s[i+1]
  xa = data(20, dtypes.float32, 5)
  s = xa.reshape(4, 5).sum(1)
  np.testing.assert_array_equal(run_shaped(z, [xa]), s[:3] + s[1:])
  src = c_source(z, 1)
  inits = loops_around(src, r"acc\d+ = 0\.0f;")
  upds = loops_around(src, r"acc\d+ = (\(|fmaf\()")
  assert len(inits) == 2 and len(set(inits)) == 1 and len(inits[0]) == 1, src
  assert len(upds) == 2 and len(set(upds)) == 1 and len(upds[0]) == 2, src       # both in the same reduce loop
  assert len(_FOR.findall(src)) == 2, src


def test_expanded_reduce_is_computed_per_output_element_exercise3():
  # x.reshape((1, 3, 4)).expand((2, 3, 4)).reduce(ADD, 2) has shape (2,). The REDUCE is asked for its value at
  # the output index (i,), and _reduce places the accumulator in every loop that index mentions: the i loop.
  # The EXPAND sits *below* the REDUCE, so its map (i -> 0) reaches only the summand: the loads do not mention
  # i, but nothing hoists a reduction whose summand ignores an output loop. The 12-element sum runs twice.
  u = buf(0, 12).reshape((1, 3, 4)).expand((2, 3, 4)).reduce(Ops.ADD, 2)
  xa = data(12, dtypes.float32, 6)
  np.testing.assert_array_equal(run_shaped(u, [xa]), np.broadcast_to(xa.reshape(1, 3, 4), (2, 3, 4)).sum((1, 2)))
  src = c_source(u, 1)
  (init,) = loops_around(src, r"acc0 = 0\.0f;")
  (upd,) = loops_around(src, r"acc0 = \(")
  (load,) = loops_around(src, r"= data0\[")
  assert init == ("ridx0",) and upd[0] == "ridx0" and len(upd) == 3 and load == upd, src
  assert "ridx0" not in re.search(r"data0\[(.*)\];", src).group(1), src      # the summand ignores i
  trips = {m[0]: int(m[1]) for m in _FOR.findall(src)}
  assert np.prod([trips[r] for r in upd]) == 2 * 12                          # twice the work of one sum


def test_merge_then_split_index_is_plain_pitfall4():
  # merge (4, 4, 4) -> (64,) then split back: (((i*4 + j)*4 + k) // 16) % 4 must simplify to i, which needs
  # distribution first; the load is data0[ridx0], hoisted out of the j and k loops
  v = buf(0, 4).reshape((4, 1, 1)).expand((4, 4, 4))
  root = v.reshape((64,)).reshape((4, 4, 4))
  xa = data(4, dtypes.float32, 7)
  np.testing.assert_array_equal(run_shaped(root, [xa]), np.broadcast_to(xa.reshape(4, 1, 1), (4, 4, 4)))
  src = c_source(root, 1)
  (load,) = re.findall(r"data0\[(.*?)\]", src)
  assert load == "ridx0", src
  assert "/" not in src and "%" not in src, src
  (where,) = loops_around(src, r"= data0\[")
  assert where == ("ridx0",), src


def test_merge_then_split_under_reduce_keeps_loop_structure():
  # the same chain feeding a row max: the max must stay out of the j and k loops (Pitfalls 2 and 4 together)
  x = buf(0, 16).reshape((4, 4))
  m = x.reduce(Ops.MAX, 1).reshape((4, 1, 1)).expand((4, 4, 4)).reshape((64,)).reshape((4, 4, 4))
  root = m + buf(1, 64).reshape((4, 4, 4))
  xa, ya = data(16, dtypes.float32, 8), data(64, dtypes.float32, 9)
  ref = xa.reshape(4, 4).max(1)[:, None, None] + ya.reshape(4, 4, 4)
  np.testing.assert_array_equal(run_shaped(root, [xa, ya]), ref)
  src = c_source(root, 2)
  (init,) = loops_around(src, r"acc0 = -INFINITY;")
  assert len(init) == 1, src


@pytest.mark.parametrize("make,ref", [
  (lambda: buf(0, 6).reduce(Ops.ADD, 1), lambda x: x.sum()),
  (lambda: buf(0, 6).reshape((2, 3)).reduce(Ops.MAX, 2), lambda x: x.max()),
  (lambda: buf(0, 6).reshape((1, 6)).reduce(Ops.ADD, 1), lambda x: x.reshape(1, 6).sum(1)),
  (lambda: buf(0, 6).reshape((2, 3)).reduce(Ops.ADD, 1).shrink(((1, 2),)), lambda x: x.reshape(2, 3).sum(1)[1:2]),
  (lambda: buf(0, 6).reshape((2, 3)).reduce(Ops.ADD, 1).shrink(((1, 2),)).reshape((1, 1)).expand((1, 4)),
   lambda x: np.broadcast_to(x.reshape(2, 3).sum(1)[1:2].reshape(1, 1), (1, 4))),
])
def test_reduce_at_an_index_without_ranges(make, ref):
  # the accumulator's index mentions no RANGE (a scalar result, a size-1 output, a constant index): it is
  # declared at the top of the function, not inside the reduce loop
  xa = data(6, dtypes.float32, 10)
  np.testing.assert_array_equal(run_shaped(make(), [xa]), ref(xa))


# ---------------------------------------------------------------- type errors at construction
X = lambda: buf(0, 12).reshape((3, 4))
IX = lambda: buf(1, 2, dtypes.int32)


@pytest.mark.parametrize("make,msg", [
  (lambda: X().reshape((5,)), r"^RESHAPE \(3, 4\) -> \(5,\)$"),
  (lambda: X().reshape((2, 2, 2)), r"^RESHAPE \(3, 4\) -> \(2, 2, 2\)$"),
  (lambda: UOp(Ops.RESHAPE, (X(),), (12.0,)), r"RESHAPE|shape"),
  (lambda: X().expand((3, 8)), r"^EXPAND \(3, 4\) -> \(3, 8\)$"),
  (lambda: X().expand((1, 4)), r"^EXPAND \(3, 4\) -> \(1, 4\)$"),
  (lambda: X().expand((2, 3, 4)), r"^EXPAND \(3, 4\) -> \(2, 3, 4\)$"),
  (lambda: X().permute((0, 0)), r"^PERMUTE \(0, 0\) of \(3, 4\)$"),
  (lambda: X().permute((1, 2)), r"^PERMUTE \(1, 2\) of \(3, 4\)$"),
  (lambda: X().permute((0, 1, 2)), r"^PERMUTE \(0, 1, 2\) of \(3, 4\)$"),
  (lambda: UOp(Ops.PERMUTE, (X(),), (0,)), r"^PERMUTE \(0,\) of \(3, 4\)$"),
  (lambda: X().shrink(((0, 4), (0, 4))), r"^SHRINK \(\(0, 4\), \(0, 4\)\) of \(3, 4\)$"),
  (lambda: X().shrink(((2, 1), (0, 4))), r"^SHRINK \(\(2, 1\), \(0, 4\)\) of \(3, 4\)$"),
  (lambda: X().shrink(((-1, 2), (0, 4))), r"^SHRINK \(\(-1, 2\), \(0, 4\)\) of \(3, 4\)$"),
  (lambda: X().shrink(((0, 3),)), r"^SHRINK \(\(0, 3\),\) of \(3, 4\)$"),
  (lambda: X().reduce(Ops.ADD, 3), r"^REDUCE \(Ops.ADD, 3\) of \(3, 4\)$"),
  (lambda: X().reduce(Ops.ADD, -1), r"^REDUCE \(Ops.ADD, -1\) of \(3, 4\)$"),
  (lambda: X().reduce(Ops.FDIV, 1), r"^REDUCE \(Ops.FDIV, 1\) of \(3, 4\)$"),
  (lambda: (X() < 0).reduce(Ops.ADD, 1), r"^REDUCE ADD of bool"),
  (lambda: (X() < 0).reduce(Ops.MUL, 1), r"^REDUCE MUL of bool"),
  (lambda: UOp(Ops.STACK, ()), r"^STACK: needs at least one source$"),
  (lambda: UOp(Ops.STACK, (X(), X().permute((1, 0)))),
   r"^STACK: sources differ: float32 \(3, 4\) vs float32 \(4, 3\)$"),
  (lambda: UOp(Ops.STACK, (X(), buf(1, 12, dtypes.int32).reshape((3, 4)))), r"^STACK: sources differ"),
  (lambda: X().pad(((1, 0),)), r"^PAD \(\(\(1, 0\),\), 0\.0\) of \(3, 4\)$"),
  (lambda: X().pad(((-1, 0), (0, 0))), r"^PAD .* of \(3, 4\)$"),
  (lambda: X().pad(((1, 0), (0, 0), (0, 2))), r"^PAD .* of \(3, 4\)$"),
  (lambda: UOp(Ops.PAD, (X(),), (((0, 0), (0, 0)),)), r"^PAD .* of \(3, 4\)$"),
  (lambda: X().flip((0, 0)), r"^FLIP \(0, 0\) of \(3, 4\)$"),
  (lambda: X().flip((-1,)), r"^FLIP \(-1,\) of \(3, 4\)$"),
  (lambda: UOp(Ops.FLIP, (X(),), (2,)), r"^FLIP \(2,\) of \(3, 4\)$"),
  (lambda: X().index(UOp.const(1), UOp.const(1), UOp.const(1)), r"^INDEX: 3 indices for shape \(3, 4\)$"),
  (lambda: X().index(UOp.const(1.0)), r"^INDEX: indices must be integers"),
  (lambda: X().index(IX(), IX().reshape((1, 2))), r"^INDEX: index shapes differ"),
  (lambda: UOp(Ops.INDEX, (X(),)), r"^INDEX: needs"),
])
def test_malformed_shape_ops_raise_at_construction(make, msg):
  with pytest.raises(UOpError, match=msg): make()


def test_flip_builder_axis_out_of_range_names_op():
  with pytest.raises(UOpError, match=r"^FLIP"): X().flip((2,))


@pytest.mark.parametrize("pads", [((0, 0),), ((0, 0), (0, 0), (0, 0))])
def test_zero_pad_of_wrong_rank_raises(pads):
  with pytest.raises(UOpError, match=r"^PAD"): X().pad(pads)


@settings(max_examples=100)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.lists(st.integers(0, 6), min_size=0, max_size=4))
def test_random_reshape_type_rule(shape, target):
  shape, target = tuple(shape), tuple(target)
  u = buf(0, prod(shape)).reshape(shape)
  if prod(target) == prod(shape): assert u.reshape(target).shape == np.zeros(shape).reshape(target).shape
  else:
    with pytest.raises(UOpError, match=re.escape(f"RESHAPE {shape} -> {target}")): u.reshape(target)


@settings(max_examples=100)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.lists(st.integers(-1, 4), min_size=0, max_size=5))
def test_random_permute_type_rule(shape, perm):
  shape, perm = tuple(shape), tuple(perm)
  u = buf(0, prod(shape)).reshape(shape)
  if sorted(perm) == list(range(len(shape))): assert u.permute(perm).shape == np.zeros(shape).transpose(perm).shape
  else:
    with pytest.raises(UOpError, match=re.escape(f"PERMUTE {perm} of {shape}")): u.permute(perm)


@settings(max_examples=100)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3).flatmap(
  lambda s: st.tuples(st.just(tuple(s)), st.tuples(*[st.tuples(st.integers(-1, 5), st.integers(-1, 5)) for _ in s]))))
def test_random_shrink_type_rule(case):
  shape, arg = case
  u = buf(0, max(1, prod(shape))).shrink(((0, prod(shape)),)).reshape(shape)
  if all(0 <= b <= e <= n for (b, e), n in zip(arg, shape)):
    assert u.shrink(arg).shape == np.zeros(shape)[tuple(slice(b, e) for b, e in arg)].shape
  else:
    with pytest.raises(UOpError, match=re.escape(f"SHRINK {arg} of {shape}")): u.shrink(arg)


# ---------------------------------------------------------------- reductions
RED_DTYPES = [dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.bool]


def np_reduce(rop: Ops, x: np.ndarray, n: int) -> np.ndarray:
  """NumPy's reduction of the last n axes in x's dtype (integers wrap); MAX/MIN of nothing is the identity."""
  axes = tuple(range(x.ndim - n, x.ndim))
  if rop is Ops.ADD: return np.add.reduce(x, axis=axes, dtype=x.dtype)
  if rop is Ops.MUL: return np.multiply.reduce(x, axis=axes, dtype=x.dtype)
  d = x.dtype
  lo, hi = (-np.inf, np.inf) if d.kind == "f" else (False, True) if d.kind == "b" else \
    (np.iinfo(d).min, np.iinfo(d).max)
  if rop is Ops.MAX: return np.maximum.reduce(x, axis=axes, initial=lo)
  return np.minimum.reduce(x, axis=axes, initial=hi)


@pytest.mark.parametrize("shape,n", [((7,), 1), ((3, 5), 1), ((2, 3, 4), 2), ((2, 3, 4), 3), ((3, 4), 0),
                                     ((3, 0), 1), ((2, 0, 3), 2), ((0,), 1), ((0, 4), 1)])
@pytest.mark.parametrize("dtype", RED_DTYPES, ids=lambda d: d.name)
def test_reduce_last_axes(dtype, shape, n):
  # ADD, MAX, MIN and MUL of one input, STACKed into one kernel (one compile per case); bool has MAX/MIN only
  rops = [Ops.MAX, Ops.MIN] if dtype is dtypes.bool else [Ops.ADD, Ops.MAX, Ops.MIN, Ops.MUL]
  u = buf(0, max(1, prod(shape)), dtype).shrink(((0, prod(shape)),)).reshape(shape)
  x = data(shape, dtype, prod(shape) + n)
  if dtype.is_float: x = (x / 8).astype(dtype.np)                            # products of 24 values stay finite
  out = run_shaped(UOp(Ops.STACK, tuple(u.reduce(r, n) for r in rops)), [np.resize(x.ravel(), max(1, x.size))])
  for k, rop in enumerate(rops):
    ref = np_reduce(rop, x, n)
    assert out[k].shape == ref.shape and out.dtype == ref.dtype, (rop, out.shape, ref.shape, out.dtype, ref.dtype)
    if dtype.is_float: np.testing.assert_allclose(out[k], ref, rtol=1e-5, err_msg=rop.name)
    else: np.testing.assert_array_equal(out[k], ref, err_msg=rop.name)


@pytest.mark.parametrize("rop", [Ops.ADD, Ops.MUL])
def test_bool_add_mul_reduce_rejected(rop):
  with pytest.raises(UOpError, match=f"^REDUCE {rop.name} of bool"): buf(0, 4, dtypes.bool).reduce(rop, 1)


@pytest.mark.parametrize("rop", [Ops.ADD, Ops.MAX, Ops.MIN, Ops.MUL])
def test_single_reduce_uint8_wraps(rop):
  # one reduction alone in its kernel, in a type narrower than int: sums and products wrap like NumPy's
  x = np.arange(200, 240, dtype=np.uint8)
  out = run_shaped(buf(0, 40, dtypes.uint8).reshape((4, 10)).reduce(rop, 1), [x])
  np.testing.assert_array_equal(out, np_reduce(rop, x.reshape(4, 10), 1))


@pytest.mark.parametrize("rop", [Ops.MAX, Ops.MIN])
@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float64], ids=lambda d: d.name)
def test_max_min_reduce_propagate_nan(dtype, rop):
  x = np.array([[1, np.nan, 3], [np.nan, 2, 1], [4, 5, np.nan], [1, -np.inf, np.inf]], dtype.np)
  out = run_shaped(buf(0, 12, dtype).reshape((4, 3)).reduce(rop, 1), [x.ravel()])
  np.testing.assert_array_equal(out, np_reduce(rop, x, 1))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_reduce_over_permuted_axes(n):
  # any axis set: PERMUTE it to the end, then REDUCE (section 6.4)
  x = data((2, 3, 4), dtypes.int32, 11)
  for perm in [(1, 2, 0), (2, 0, 1), (0, 2, 1)]:
    u = buf(0, 24, dtypes.int32).reshape((2, 3, 4)).permute(perm).reduce(Ops.ADD, n)
    np.testing.assert_array_equal(run_shaped(u, [x.ravel()]), np_reduce(Ops.ADD, x.transpose(perm), n))


# ---------------------------------------------------------------- Opts
def gemm(M: int, N: int, K: int) -> UOp:
  a = buf(0, M * K).reshape((M, 1, K)).expand((M, N, K))
  b = buf(1, K * N).reshape((K, N)).permute((1, 0)).reshape((1, N, K)).expand((M, N, K))
  return (a * b).reduce(Ops.ADD, 1)


OPTS = [Opts(), Opts(upcast={0: 4}), Opts(upcast={1: 4}), Opts(unroll=4), Opts(thread=0), Opts(tile={0: 4, 1: 4}),
        Opts(upcast={0: 4}, unroll=4, thread=0, tile={0: 8}),
        Opts(upcast={0: 4, 1: 2}, unroll=4, thread=0, tile={0: 8, 1: 4}),
        Opts(upcast={1: 4}, thread=1, tile={0: 2, 1: 8}, unroll=2)]


@pytest.mark.parametrize("opts", OPTS, ids=repr)
@pytest.mark.parametrize("M,N,K", [(16, 16, 16), (12, 8, 6), (13, 9, 5)])
def test_gemm_with_opts(M, N, K, opts):
  rng = np.random.default_rng(M + N + K)
  a, b = rng.integers(-5, 6, (M, K)).astype(np.float32), rng.integers(-5, 6, (K, N)).astype(np.float32)
  np.testing.assert_array_equal(run_shaped(gemm(M, N, K), [a.ravel(), b.ravel()], opts), a @ b)
  assert_loads_in_bounds(lowered(gemm(M, N, K), 2, opts))


@pytest.mark.parametrize("opts", [Opts(unroll=4), Opts(upcast={0: 4}), Opts(upcast={0: 4}, unroll=4, thread=0),
                                  Opts(unroll=3, tile={0: 4}), Opts(upcast={0: 2}, unroll=8, thread=0, tile={0: 4})],
                         ids=repr)
@pytest.mark.parametrize("rop", [Ops.ADD, Ops.MAX])
@pytest.mark.parametrize("shape", [(8, 12), (6, 10), (7, 5), (16, 3, 4)])
def test_reduce_with_opts(shape, rop, opts):
  x = data(shape, dtypes.int32, len(shape))
  u = buf(0, prod(shape), dtypes.int32).reshape(shape).reduce(rop, len(shape) - 1)
  np.testing.assert_array_equal(run_shaped(u, [x.ravel()], opts), np_reduce(rop, x, len(shape) - 1))


@pytest.mark.parametrize("rop", [Ops.ADD, Ops.MAX, Ops.MUL])
@pytest.mark.parametrize("shape,lanes", [((9, 20), 8), ((5, 7), 4), ((3, 4, 11), 8), ((6, 3), 8), ((4, 16), 8)])
def test_lane_tail_inside_other_reduce_loops_has_accumulators_apart(shape, lanes, rop):
  # an ordered reduce (a small graph's: element i in lane i % lanes, tails at every size) over all of x: each row's
  # tail (n % lanes) goes to accumulators of its own, combined with the lanes' before the tree; a tail that runs once
  # (no other reduce loop around it) stays in the first lanes
  x = data(shape, dtypes.int32, len(shape))
  for n, ref in ((len(shape), np_reduce(rop, x, len(shape))), (1, np_reduce(rop, x, 1))):
    u = buf(0, prod(shape), dtypes.int32).reshape(shape).reduce(rop, n)
    sink = lower(u, buf(1, max(1, prod(u.shape)), u.dtype), Ctx(ordered=lanes))
    out = np.zeros(max(1, prod(u.shape)), np.int32)
    run_c(sink, {0: x.ravel(), 1: out})
    np.testing.assert_array_equal(out[:max(1, prod(u.shape))].reshape(ref.shape), ref)
    apart = n > 1 and shape[-1] > lanes and shape[-1] % lanes != 0      # (fewer than lanes: one block of them)
    assert len({a for a in sink.toposort() if a.op is Ops.ALLOC}) == (2 if apart else 1), (shape, n)


def _pragma_loop(src: str) -> tuple[str, ...]:
  lines = nesting(src)
  k = [n for n, (_, s) in enumerate(lines) if s.startswith("#pragma omp parallel for")]
  assert len(k) == 1, src
  stack, nxt = lines[k[0] + 1]
  assert _FOR.match(nxt), src
  return stack


@pytest.mark.parametrize("opts", [
  Opts(thread=0), Opts(thread=1), Opts(thread=0, upcast={0: 4}), Opts(thread=1, upcast={1: 4}, unroll=4),
  Opts(thread=0, tile={0: 4}), Opts(thread=0, tile={0: 8, 1: 4}, upcast={0: 4}),
  Opts(thread=0, tile={1: 4}), Opts(thread=1, tile={0: 2}),
], ids=repr)
def test_thread_axis_is_the_outermost_loop(opts):
  M, N, K = 16, 8, 4
  g = gemm(M, N, K)
  rng = np.random.default_rng(3)
  a, b = rng.integers(-5, 6, (M, K)).astype(np.float32), rng.integers(-5, 6, (K, N)).astype(np.float32)
  np.testing.assert_array_equal(run_shaped(g, [a.ravel(), b.ravel()], opts), a @ b)
  assert _pragma_loop(c_source(g, 2, opts)) == (), c_source(g, 2, opts)


def test_threaded_loops_take_chunks_dynamically():
  # 4 chunks per thread handed out as threads finish (mt_chunk, in the prelude only under OpenMP); each iteration
  # computes its own outputs, so the values do not depend on which thread ran it
  src = c_source(gemm(16, 8, 4), 2, Opts(thread=0))
  assert "#pragma omp parallel for schedule(dynamic, mt_chunk(16)) if(!mt_serial)" in src, src
  assert "static inline int64_t mt_chunk(int64_t n)" in PRELUDE and PRELUDE.index("#ifdef _OPENMP") < \
    PRELUDE.index("mt_chunk")


def test_no_pragma_without_thread():
  assert "omp parallel" not in c_source(gemm(8, 8, 8), 2, Opts(upcast={0: 4}, unroll=4, tile={1: 4}))


def test_upcast_shares_one_reduce_loop():
  # an output axis upcast by 4 asks for the same REDUCE at four constant offsets: four accumulators, one k loop
  src = c_source(gemm(8, 8, 8), 2, Opts(upcast={0: 4}))
  inits = loops_around(src, r"acc\d+ = 0\.0f;")
  upds = loops_around(src, r"acc\d+ = (\(|fmaf\()")
  assert len(inits) == 4 and len(set(inits)) == 1 and len(upds) == 4 and len(set(upds)) == 1, src
  assert len(_FOR.findall(src)) == 3, src
