"""NumPy code that mutates: writes through views, arrays changed after capture, in-place operators and loops.

Every test runs the same program on NumPy arrays and on Tensors and compares all the values it can see.
"""
import threading
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import minitensor as mt
from minitensor.backend.runtime import stats


def same(t, a):
  got = np.asarray(t)
  assert got.shape == a.shape and got.dtype == a.dtype, (got.shape, got.dtype, a.shape, a.dtype)
  np.testing.assert_array_equal(got, a)


# ---------------------------------------------------------------------- writes through views
def _both(f, shape=(4, 4)):
  """f run on a NumPy zeros array and on mt.zeros; the final values of both compared."""
  a, t = np.zeros(shape), mt.zeros(shape)
  f(np, a)
  f(mt, t)
  same(t, a)


@pytest.mark.parametrize("write", [
  lambda xp, z: z[1:3, 1:3].__setitem__(np.array([[True, False], [False, True]]), 1),
  lambda xp, z: z[0].__setitem__(slice(None), 5),
  lambda xp, z: z.T.__setitem__(0, 1),
  lambda xp, z: np.copyto(z[1:], np.arange(4.0)),
  lambda xp, z: z[::-1, ::2].__setitem__((slice(None), 0), 7),
  lambda xp, z: z.reshape(2, 8)[1].__setitem__(slice(2, 5), 3),
  lambda xp, z: z.ravel()[::3].__setitem__(Ellipsis, 2),
  lambda xp, z: z[None, 1:, 2].__setitem__(Ellipsis, np.arange(3.0)),
  lambda xp, z: z[2:, 1:].T.reshape(-1).__setitem__(slice(None), 9),        # a copy in NumPy: nothing changes
  lambda xp, z: z.swapaxes(0, 1)[::-1][0].__setitem__(slice(None), -1),
  lambda xp, z: np.flip(z, 0)[0].__setitem__(slice(None), 4),
  lambda xp, z: z[1].__iadd__(2),
  lambda xp, z: z[:, 1:3].__imul__(0).__iadd__(np.arange(2.0)),
  lambda xp, z: z.squeeze()[3, 3:].fill(6),
], ids=lambda f: "")
def test_write_through_view(write):
  _both(write)


def test_views_see_writes_to_the_base_and_to_each_other():
  for xp in (np, mt):
    z = xp.zeros((3, 4)) if xp is np else mt.zeros((3, 4))
    row, col, t = z[1], z[:, 2], z.T
    row[:] = 1
    col += 10
    t[3] = -1
    if xp is np: ref = (z.copy(), row.copy(), col.copy(), t.copy())
  for got, want in zip((z, row, col, t), ref): same(got, want)


def test_read_only_views_raise_as_numpy():
  t = mt.arange(3.0)
  for v in (mt.broadcast_to(t, (2, 3)), t.broadcast_to((4, 3))[1:]):
    with pytest.raises(ValueError, match="read-only"): v[0] = 1
  same(t, np.arange(3.0))


def test_element_reads_are_values_not_views():
  t, a = mt.arange(4.0), np.arange(4.0)
  e, ea = t[1], a[1]
  t[1] = 9; a[1] = 9
  assert float(e) == float(ea) == 1.0
  ev, eva = t[1, ...], a[1, ...]          # with an Ellipsis NumPy returns a 0-d view
  t[1] = 5; a[1] = 5
  same(ev, eva)


# ---------------------------------------------------------------------- arrays changed after capture
def test_arrays_mutated_after_capture_keep_their_value_at_the_call():
  w = np.ones(3)
  t = mt.asarray(np.arange(3.0)) * w
  w += 1
  same(t, np.arange(3.0))
  x, W = np.random.default_rng(0).random((4, 3)), np.random.default_rng(1).random((3, 2))
  h = np.dot(mt.asarray(x), W)
  want = x @ W
  W += 1
  np.testing.assert_allclose(np.asarray(h), want)
  b = np.arange(4.0)
  r = b + mt.asarray(np.ones(4))          # ndarray op Tensor: b captured now
  b[:] = -1
  same(r, np.arange(4.0) + 1)


def test_training_loop_updating_numpy_weights_in_place():
  rng = np.random.default_rng(2)
  X, y = rng.random((16, 3)), rng.random(16)
  w_np, w_mt = np.zeros(3), np.zeros(3)
  for _ in range(5):
    w_np -= 0.1 * (X.T @ (X @ w_np - y)) / 16
    grad = mt.asarray(X).T @ (mt.asarray(X) @ w_mt - y) / 16     # uses w_mt as it is now
    w_mt -= 0.1 * np.asarray(grad)
  np.testing.assert_allclose(w_mt, w_np, rtol=1e-12)


def test_inplace_operators_on_aliases():
  t = mt.zeros(3)
  u = t
  t += 1
  same(u, np.ones(3))
  v = t
  t **= 2
  t -= np.arange(3.0)
  same(v, 1 - np.arange(3.0))


def test_ufunc_out_tensor_and_at():
  t = mt.zeros(4)
  row = t[1:]
  np.add(np.arange(4.0), 1, out=t)
  same(row, np.arange(1.0, 4.0) + 1)
  np.multiply(t, 2, out=t, where=np.array([True, False, True, False]))
  same(t, np.array([2.0, 2.0, 6.0, 4.0]))
  a, z = np.zeros(5), mt.zeros(5)
  np.add.at(a, [0, 0, 3], 1.5); mt.add.at(z, [0, 0, 3], 1.5)
  same(z, a)
  np.add.at(z, [4, 4], 2.0); np.add.at(a, [4, 4], 2.0)
  same(z, a)


# ---------------------------------------------------------------------- loops
def _heat(u, up, n):
  for _ in range(n):
    u[1:-1, 1:-1] = up[1:-1, 1:-1] + 0.1 * (up[2:, 1:-1] + up[:-2, 1:-1] + up[1:-1, 2:] + up[1:-1, :-2]
                                            - 4 * up[1:-1, 1:-1])
    up[:] = u[:]
  return up


def test_heat_stencil_loop_stays_linear():
  u0 = np.random.default_rng(3).random((16, 16))
  want = _heat(u0.copy(), u0.copy(), 100)
  c = stats.compiles
  got = _heat(mt.asarray(u0), mt.asarray(u0), 100)
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
  assert stats.compiles - c <= 6          # versions are materialized, and every batch of steps is one structure


def test_accumulating_in_place_many_times():
  x = mt.arange(10.0)
  acc = mt.zeros(())
  for _ in range(2000): acc += x.sum()
  assert float(acc) == 2000 * 45.0
  acc2 = mt.zeros(())
  for i in range(40): acc2 += mt.sum(x * i)
  assert float(acc2) == sum(45.0 * i for i in range(40))


def test_numpy_shuffle_of_a_tensor():
  a, t = np.arange(50), mt.arange(50)
  np.random.seed(7); np.random.shuffle(a)
  np.random.seed(7)
  with pytest.warns(UserWarning, match="not a subclass of 'Sequence'"): np.random.shuffle(t)
  same(t, a)


# ---------------------------------------------------------------------- random programs of views and writes
def _index(draw, shape):
  idx = []
  for n in shape:
    kind = draw(st.sampled_from(["slice", "int", "none"] if n else ["slice", "none"]))
    if kind == "int": idx.append(draw(st.integers(-n, n - 1)))
    elif kind == "none": idx += [None, slice(None)]
    else:
      step = draw(st.sampled_from([1, 1, 2, -1, -2, 3]))
      idx.append(slice(draw(st.none() | st.integers(-n - 1, n + 1)), draw(st.none() | st.integers(-n - 1, n + 1)),
                       step))
  if draw(st.booleans()) and idx: idx[draw(st.integers(0, len(idx) - 1))] = Ellipsis
  return tuple(idx)


@st.composite
def programs(draw):
  """A base shape and steps: make a view of one of the arrays so far, or write into one of them."""
  shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
  steps, shapes = [], [shape]
  for _ in range(draw(st.integers(1, 8))):
    k = draw(st.integers(0, len(shapes) - 1))
    s = shapes[k]
    what = draw(st.sampled_from(["index", "reshape", "transpose", "flip", "write", "iadd"]))
    if what == "index":
      idx = _index(draw, s)
      steps.append(("index", k, idx)); shapes.append(np.zeros(s)[idx].shape)
    elif what == "reshape":
      new = draw(st.sampled_from([(-1,), (int(np.prod(s)), 1), (1,) + s, s[::-1] if len(s) > 1 else s]))
      steps.append(("reshape", k, new)); shapes.append(np.zeros(s).reshape(new).shape)
    elif what == "transpose":
      steps.append(("transpose", k, None)); shapes.append(s[::-1])
    elif what == "flip":
      ax = draw(st.integers(0, len(s) - 1)) if s else None
      steps.append(("flip", k, ax)); shapes.append(s)
    else:
      idx = _index(draw, s)
      steps.append((what, k, (idx, draw(st.integers(-5, 5)))))
  return shape, steps


def _run(arrays, steps, xp):
  for what, k, arg in steps:
    x = arrays[k]
    if what == "index": arrays.append(x[arg])
    elif what == "reshape": arrays.append(x.reshape(arg))
    elif what == "transpose": arrays.append(x.T)
    elif what == "flip": arrays.append(xp.flip(x, arg))
    elif what == "write": x[arg[0]] = arg[1]
    else:
      v = x[arg[0]]
      if isinstance(v, np.generic) or \
          (isinstance(v, mt.Tensor) and v.ndim == 0 and not any(i is Ellipsis or i is None for i in arg[0])):
        x[arg[0]] = v + arg[1]            # an element: NumPy's scalar has no in-place form into x
      else: v += arg[1]
  return arrays


@given(programs())
def test_random_view_and_write_programs_match_numpy(prog):
  shape, steps = prog
  base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
  want = _run([base.copy()], steps, np)
  got = _run([mt.asarray(base)], steps, mt)
  for g, w in zip(got, want): same(g, np.asarray(w))


def test_realized_arrays_are_read_only_and_never_change():
  t = mt.asarray(np.arange(6.0)).reshape(2, 3)
  a = np.asarray(t)
  with pytest.raises(ValueError): a[0, 0] = 1           # read-only
  row = np.asarray(t[1])
  t[1] = -1
  t += 10
  assert a.tolist() == [[0, 1, 2], [3, 4, 5]] and row.tolist() == [3, 4, 5]
  same(t, np.array([[10.0, 11, 12], [9, 9, 9]]))


# ---------------------------------------------------------------------- threads
def _threads(targets: list, seconds: float = 60.0) -> None:
  """Run the targets in threads at once; every one must finish within `seconds` (a hang fails, it does not block)."""
  go = threading.Barrier(len(targets))
  errors = []
  def run(f):
    go.wait()
    try: f()
    except BaseException as e: errors.append(e)   # (a thread's exception would be lost)
  ts = [threading.Thread(target=run, args=(f,), daemon=True) for f in targets]
  for t in ts: t.start()
  for t in ts: t.join(seconds)
  assert not any(t.is_alive() for t in ts), f"threads still running after {seconds} s"
  assert not errors, errors


@pytest.mark.parametrize("how", ["setitem", "view_iadd", "with_readers", "add_at"])
def test_writes_from_threads_to_one_base_are_never_lost(how):
  """4 threads each write their own row of one base 50 times (NumPy: all rows end at 50): by setitem, in place, and
  by ufunc.at (which reads the whole base, then writes it). A write is one step with respect to every other write
  to the base (views.WRITES), and a concurrent realization of the base (readers) never drops a write that came in
  while it computed. Several trials, as the loss was intermittent."""
  for _ in range(4):
    b = mt.zeros((4, 8))
    def writer(tid):
      for i in range(50):
        if how == "view_iadd": b[tid] += 1
        elif how == "add_at": np.add.at(b, (tid,), 1)
        else: b[tid] = i + 1
    seen = []
    def reader():
      for _ in range(20): seen.append(b.numpy())
    _threads([lambda k=k: writer(k) for k in range(4)] + ([reader] * 2 if how == "with_readers" else []))
    same(b, np.full((4, 8), 50.0))
    for a in seen:        # a reader sees each row whole at some moment: no torn row
      assert (a == a[:, :1]).all() and ((a >= 0) & (a <= 50)).all()


# ---------------------------------------------------------------------- writes into a buffer no one else reads
def test_a_history_written_slice_by_slice_is_written_in_place():
  p = np.random.default_rng(5).standard_normal((10, 3))
  P, Pn = mt.zeros((10, 3, 50)).realize(), np.zeros((10, 3, 50))
  first = id(P._data)
  for i in range(50):
    P[:, :, i] = mt.asarray(p) * i
    Pn[:, :, i] = p * i
  assert id(P._data) == first and P._uop is None          # one buffer, written slice by slice
  same(P, Pn)


def test_writes_in_place_only_where_no_one_can_tell():
  """Every reader of a root's old buffer keeps the old values: an np.asarray view, a lazy value built before the
  write, a realized value hash-consing would share (the buffer is also that graph node's), and a view Tensor sees
  the write (NumPy's shared memory)."""
  a, b = mt.asarray(np.arange(4.0)), mt.asarray(np.ones(4))
  c = a + b
  np.asarray(c)                                # c's buffer is also the value of the node a + b
  c[0] = 9.0
  same(a + b, np.arange(4.0) + 1)              # (a new a + b is that node: its value is not c's write)
  same(c, np.array([9.0, 2, 3, 4]))
  t = mt.zeros(4)
  t[0] = 1.0
  snap = np.asarray(t)
  lazy = t * 1
  view = t[1:]
  t[1] = 5.0
  t[2] = 6.0
  assert snap.tolist() == [1, 0, 0, 0]
  same(lazy, np.array([1.0, 0, 0, 0]))
  same(view, np.array([5.0, 6, 0]))
  same(t, np.array([1.0, 5, 6, 0]))
  u = mt.zeros(3)
  u[1:] = u[:2] + 1                            # the value reads the root: computed first, then written
  same(u, np.array([0.0, 1, 1]))


@given(st.lists(st.tuples(st.sampled_from(["write", "snap", "lazy", "view", "drop"]), st.integers(0, 5),
                          st.integers(-9, 9)), min_size=1, max_size=25))
def test_in_place_writes_against_numpy_copies(ops):
  """Writes into a realized root between snapshots, lazy values, views and dropped readers: every reader has
  NumPy's value (a snapshot or a lazy value: a copy at its time; a view: the root's memory now)."""
  t, ref = mt.zeros(6), np.zeros(6)
  readers: list = []
  for what, k, v in ops:
    if what == "write":
      t[k:k + 2] = float(v)
      ref[k:k + 2] = v
    elif what == "snap": readers.append(("snap", np.asarray(t), ref.copy()))
    elif what == "lazy": readers.append(("lazy", t * 2 + 0, ref * 2))
    elif what == "view": readers.append(("view", t[k:], k))
    elif readers: readers.pop(k % len(readers))
  for kind, r, w in readers:
    if kind == "view": same(r, ref[w:])
    else: same(r, w)
  same(t, ref)


def test_a_write_reading_its_own_root_and_a_constant_root_go_in_place():
  u = mt.asarray(np.arange(5.0))
  first = id(u._realized())
  u[1:] = u[:-1] + 1.0                          # the right-hand side is computed first, as NumPy does
  assert id(u._data) == first
  same(u, np.array([0.0, 1, 2, 3, 4]))
  z = mt.zeros((3, 4))                           # a broadcast constant: its buffer is made at the first write
  z[1] = 2.0
  assert z._data is not None and z._uop is None
  same(z, np.array([[0.0] * 4, [2.0] * 4, [0.0] * 4]))
  f = mt.full((2, 2), -0.0)
  f[0, 0] = 1.0
  assert np.signbit(np.asarray(f)[1, 1])         # (-0.0 kept: not np.zeros)


@pytest.mark.parametrize("value", [lambda n: 7.5, lambda n: np.arange(n) * 1.5, lambda n: np.ones(1) * 3,
                                   lambda n: [2.0] * n, lambda n: mt.asarray(np.arange(n) - 4.0),
                                   lambda n: np.arange(n + 1.0), lambda n: np.ones((1, n)), lambda n: 1j])
@pytest.mark.parametrize("mask", [lambda v: v, mt.asarray])
def test_a_whole_mask_written_in_place_is_numpys_assignment(value, mask):
  """A boolean mask of the array's shape writes by its flat positions: NumPy's values, and NumPy's exception type
  for a value it does not take (a count that differs, two dimensions, a complex into floats)."""
  base = np.arange(12.0).reshape(3, 4)
  m = (base % 3) == 1
  want, t = base.copy(), mt.asarray(base.copy())
  try: want[m] = value(int(m.sum()))
  except Exception as e:                                            # noqa: BLE001  (NumPy's type is the oracle)
    with pytest.raises(type(e)): t[mask(m)] = value(int(m.sum()))
    same(t, base)
    return
  t[mask(m)] = value(int(m.sum()))
  same(t, want)


@given(st.lists(st.tuples(st.sampled_from(["mask", "ints", "snap", "lazy", "gather"]), st.integers(-9, 9)),
                min_size=1, max_size=12))
def test_masked_and_integer_writes_in_place_against_numpy(ops):
  """Writes through a boolean mask (a Tensor or an ndarray) and integer arrays, between snapshots and lazy readers:
  every reader keeps NumPy's value, and the root holds NumPy's."""
  t, ref = mt.asarray(np.arange(8.0)), np.arange(8.0)
  readers: list = []
  for what, v in ops:
    if what == "mask":
      m = t > float(v) / 3
      ref[ref > v / 3] = ref[ref > v / 3] * 2 + v
      t[m] = t[m] * 2 + v
    elif what == "ints":
      idx = np.array([abs(v) % 8, (abs(v) + 3) % 8, abs(v) % 8])
      ref[idx] = [1.0, 2.0, 3.0]
      t[idx] = mt.asarray([1.0, 2.0, 3.0])
    elif what == "snap": readers.append((np.asarray(t), ref.copy()))
    elif what == "lazy": readers.append((t * 1 - 0, ref.copy()))
    else: readers.append((t[np.array([v % 8, 0])], ref[np.array([v % 8, 0])].copy()))
  for r, w in readers: same(r, w)
  same(t, ref)


SCALARS = [1.5, -2, True, np.float32(0.25), np.int8(-3), np.array(4.0), mt.asarray(np.array(-1.5)), np.nan, 1e300]


@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), lead=st.integers(1, 3), seed=st.integers(0, 99),
       value=st.sampled_from(range(len(SCALARS))), dtype=st.sampled_from(["float64", "float32", "int64", "bool"]),
       source=st.sampled_from(["lazy", "ndarray", "reads_t"]))
def test_a_scalar_through_a_mask_into_a_lazy_array_is_numpys_fill(shape, lead, seed, value, dtype, source):
  """t[mask] = scalar into a lazy array, the mask over t's leading axes (a lazy Tensor, an ndarray or a Tensor
  reading t): NumPy's values, or NumPy's exception type (NaN into integers, out of range into int64)."""
  rng = np.random.default_rng(seed)
  shape = tuple(shape)
  base = (rng.standard_normal(shape) * 3).astype(dtype)
  lead = min(lead, len(shape))
  keep = rng.random(shape[:lead]) < 0.5
  v = SCALARS[value]
  want, t = base.copy(), mt.asarray(base) + np.zeros((), dtype)         # (t lazy)
  m = {"lazy": lambda: mt.asarray(keep) & True, "ndarray": lambda: keep.copy(),
       "reads_t": lambda: (t[(slice(None),) * lead + (0,) * (len(shape) - lead)] > 99) | mt.asarray(keep)}[source]()
  mv = np.asarray(v) if isinstance(v, mt.Tensor) else v
  try:
    with np.errstate(all="ignore"): want[keep] = mv
  except Exception as e:                                            # noqa: BLE001  (NumPy's type is the oracle)
    with pytest.raises(type(e)): t[m] = v
    return
  before = stats.graph_hits + stats.graph_misses
  with np.errstate(all="ignore"): t[m] = v
  assert stats.graph_hits + stats.graph_misses == before           # (no realization: a where over the mask)
  if source == "ndarray": m[...] = ~m                                # (read at the assignment, as NumPy does)
  same(t, want)


def test_a_scalar_through_a_mask_into_a_view_writes_its_root():
  a = np.arange(12.0).reshape(3, 4) - 5
  t = mt.asarray(a) * 1
  v = t[1:, ::2]
  v[v > 0] = -1.0
  want = a.copy()
  w = want[1:, ::2]
  w[w > 0] = -1.0
  same(t, want)
  same(v, w)


@pytest.mark.parametrize("value", [lambda n, w: np.arange(n) * 1.5, lambda n, w: mt.asarray(np.arange(n) - 4.0) * 2,
                                   lambda n, w: np.ones(1) * 3, lambda n, w: np.arange(n + 1.0),
                                   lambda n, w: np.ones((1, n)), lambda n, w: np.ones((n, 1)),
                                   lambda n, w: np.arange(n * w).reshape(n, w) * 1.0, lambda n, w: np.arange(w) * 1.0])
@pytest.mark.parametrize("lead", [1, 2])
@pytest.mark.parametrize("mask", [lambda m: m, mt.asarray])
def test_a_mask_true_everywhere_reads_and_writes_without_positions(value, lead, mask):
  """A mask of the leading axes that holds everywhere (`r[r > 0]` where r > 0): t[m] is t's elements in order (a
  copy: writes on either side stay there), and t[m] = v is NumPy's assignment, or NumPy's exception type."""
  base = np.arange(12.0).reshape(3, 4) + 1
  m = np.ones(base.shape[:lead], bool)
  n, w = int(m.sum()), 4 if lead == 1 else 1
  t = mt.asarray(base) * 1
  got, want = t[mask(m)], base[m]
  same(got, want)
  got[0], want[0] = -1, -1                       # (a copy: t keeps its values)
  same(t, base)
  t2, want2 = mt.asarray(base) * 1, base.copy()
  try: want2[m] = value(n, w)
  except Exception as e:                                            # noqa: BLE001  (NumPy's type is the oracle)
    with pytest.raises(type(e)): t2[mask(m)] = value(n, w)
    same(t2, base)
    return
  t2[mask(m)] = value(n, w)
  same(t2, want2)


def test_a_mask_true_everywhere_written_into_a_sole_buffer_keeps_readers():
  """r[r > 0] = f(r[r > 0]) into a realized r with a lazy reader of its old values: the reader keeps them."""
  base = np.arange(1.0, 7.0)
  r = mt.asarray(base) * 1
  np.asarray(r)
  old = r * 10
  r[r > 0] = r[r > 0] ** -1.5
  want = base.copy()
  want[want > 0] = want[want > 0] ** -1.5
  np.testing.assert_allclose(np.asarray(r), want, rtol=4e-16)     # (pow: libm's and libmvec's differ by an ulp)
  same(old, base * 10)
