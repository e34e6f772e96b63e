"""live.py: a root with pending writes that another realization computes keeps its value, so loops of masked
updates do not grow their graphs (a new structure, a compile, every step)."""
from __future__ import annotations
import numpy as np
import pytest
import minitensor as mt
from minitensor import live
from minitensor.backend.runtime import stats


@pytest.fixture(autouse=True)
def unchecked(monkeypatch):
  """Programs counted as realize makes them (checked mode keys every program by its concrete sizes)."""
  monkeypatch.delenv("MINITENSOR_CHECK", raising=False)


@pytest.mark.parametrize("shape", [(60, 50), (333, 400)])       # symbolic sizes, and a large graph
def test_an_escape_time_loop_stops_making_programs(shape):
  y, x = np.mgrid[-1.5:1.5:shape[0] * 1j, -2:1:shape[1] * 1j]
  cn = x + 1j * y
  zn, nn = np.zeros(shape, complex), np.zeros(shape, np.int64)
  c, z, n = mt.asarray(cn), mt.zeros(shape, dtype=mt.complex128), mt.zeros(shape, dtype=mt.int64)
  made = []
  for i in range(14):
    m, mn = mt.abs(z) < 2, np.abs(zn) < 2
    z[m] = z[m] ** 2 + c[m]
    zn[mn] = zn[mn] ** 2 + cn[mn]
    n[m] = i
    nn[mn] = i
    made.append(stats.graph_misses)
  assert made[-1] == made[6], made
  np.testing.assert_array_equal(np.asarray(n), nn)
  np.testing.assert_allclose(np.asarray(z), zn, rtol=1e-12, atol=1e-300)


def test_the_mask_realizes_the_written_root_with_it():
  z = mt.asarray(np.arange(10.0))
  before = np.asarray(z)                         # (its old buffer is read: the write cannot go in place)
  z[z > 4] = 0.5
  assert any(t is z for t in live.WRITTEN)
  m = np.asarray(mt.abs(z) < 3)
  assert not any(t is z for t in live.WRITTEN) and z._uop is None          # z holds its value (computed with m)
  np.testing.assert_array_equal(m, np.abs(np.where(np.arange(10.0) > 4, 0.5, np.arange(10.0))) < 3)
  np.testing.assert_array_equal(before, np.arange(10.0))


def test_two_arrays_updated_from_each_other_match_numpy():
  """A stencil's u and v: each flushes its chain of writes at its own length (views.WRITE_CHAIN)."""
  rng = np.random.default_rng(0)
  un, vn = rng.random((34, 34)), rng.random((34, 34))
  u, v = mt.asarray(un.copy()), mt.asarray(vn.copy())
  for _ in range(40):
    for a, b, xp in ((u, v, mt), (un, vn, np)):
      uc, vc = a[1:-1, 1:-1], b[1:-1, 1:-1]
      lu = a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] - 4 * uc
      uvv = uc * vc * vc
      a[1:-1, 1:-1] = uc + 0.05 * lu - 0.1 * uvv + 0.035 * (1 - uc)
      b[1:-1, 1:-1] = vc + 0.1 * uvv - 0.1 * vc
  np.testing.assert_allclose(np.asarray(u), un, rtol=1e-12)
  np.testing.assert_allclose(np.asarray(v), vn, rtol=1e-12)


def test_a_chain_of_reassignments_read_every_step_stops_growing():
  """pos = pos + vel * dt (no write) read by a mask each step (issue 30's N-body): past live.DEEP operations the
  held roots are realized with the mask, so the graphs stop growing."""
  rng = np.random.default_rng(3)
  pn, vn = rng.standard_normal((30, 3)), rng.standard_normal((30, 3)) * 0.1
  pos, vel = mt.asarray(pn), mt.asarray(vn)
  made = []
  for _ in range(60):
    for xp, (p, v) in ((mt, (pos, vel)), (np, (pn, vn))):
      d = p[:, :1].T - p[:, :1]
      r = d * d + 0.01
      r[r > 0.5] = r[r > 0.5] ** -1.5
      v = v + (r @ p) * 0.001
      p = p + v * 0.01
      if xp is mt: pos, vel = p, v
      else: pn, vn = p, v
    made.append(stats.graph_misses)
  # (a new program only where the mask's count happens to equal another size: a new pattern of equal sizes)
  assert made[-1] - made[-30] <= 3, made
  assert max(pos.uop.depth, vel.uop.depth) <= 2 * live.DEEP
  np.testing.assert_allclose(np.asarray(pos), pn, rtol=1e-9, atol=1e-12)


def test_a_mask_used_several_times_is_found_once_and_follows_its_writes():
  """masks.mask_of keeps the positions of a mask Tensor per value: a write to the mask, or a change to the user's
  memory a mask borrows, gives new indices."""
  from minitensor.masks import mask_of
  x = np.arange(12.0)
  m = mt.asarray(x) > 5
  t = mt.asarray(x)
  first = mask_of(m)
  assert mask_of(m) is first                                  # (found once)
  np.testing.assert_array_equal(np.asarray(t[m]), x[x > 5])
  m[0] = True                                                 # a write: a new value of m
  np.testing.assert_array_equal(np.asarray(t[m]), x[(x > 5) | (np.arange(12) == 0)])
  user = x > 8
  b = mt.asarray(user, copy=False)                            # (borrows the user's memory)
  np.testing.assert_array_equal(np.asarray(t[b]), x[x > 8])
  user[1] = True
  np.testing.assert_array_equal(np.asarray(t[b]), x[np.asarray(b)])
