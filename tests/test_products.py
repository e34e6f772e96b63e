"""Products (matmul, dot, tensordot, einsum, vecdot, inner) against NumPy: float16's accumulation.

NumPy multiplies float16 operands and sums the products in float32, rounding to float16 once at the end; so does
minitensor (numpy_rules.PRODUCT_ACC). A float16 accumulator overflows where NumPy's does not, and a random product
differs from NumPy's in most entries by several float16 ulps. NumPy's einsum sums in float32 with optimize=True
(its default loop rounds some partial sums to float16): minitensor's einsum is compared with that.
"""
import numpy as np
import pytest
import minitensor as mt

F16_ULP = 2.0 ** -10      # float16's relative spacing


def products(xp, a, b):
  """Every product family on a (m, k) and b (k, n). A chain of three operands is one float32 sum in minitensor
  (NumPy's optimized einsum rounds the first product to float16; its default loop rounds partial sums): it is
  compared with NumPy's einsum in float32, rounded once."""
  three = (lambda *ops: mt.einsum("ij,jk,kl->il", *ops)) if xp is mt else \
    (lambda *ops: np.einsum("ij,jk,kl->il", *(o.astype(np.float32) for o in ops)).astype(np.float16))
  lin = mt.linalg if xp is mt else np.linalg
  opt = {} if xp is mt else {"optimize": True}    # (NumPy's default einsum rounds its partial sums to float16)
  return {"matmul": a @ b, "dot": xp.dot(a, b), "tensordot": xp.tensordot(a, b, 1),
          "einsum": xp.einsum("ij,jk->ik", a, b, **opt), "einsum3": three(a, b, b.T[:, :2]),
          "inner": xp.inner(a, b.T), "vecdot": xp.vecdot(a[:, None, :], b.T[None]), "matmul1d": a[0] @ b,
          "linalg.matmul": lin.matmul(a, b), "vecdot_linalg": lin.vecdot(a[0], b[:, 0])}


def check_all(a, b, rtol):
  want = products(np, a, b)
  got = products(mt, mt.asarray(a), mt.asarray(b))
  arrays = mt.realize(*got.values())
  for (name, w), g in zip(want.items(), arrays):
    assert g.dtype == w.dtype == np.float16 and g.shape == w.shape, (name, g.dtype, g.shape, w.shape)
    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=1e-5, err_msg=name)


def test_float16_products_accumulate_in_float32():
  """60000 + 60000 - 60000 overflows a float16 accumulator (inf); NumPy's float32 one gives 6e4."""
  a = np.array([[60000, 60000, -60000]], np.float16)
  check_all(a, np.ones((3, 1), np.float16), rtol=0)


@pytest.mark.parametrize("seed", [0, 1])
def test_random_float16_products_match_numpy_to_one_rounding(seed):
  """A 30x30 float16 product: NumPy's value to within one float16 rounding (the order of the float32 sums may
  differ; a float16 accumulator differed in 555 of 900 entries, by several ulps)."""
  rng = np.random.default_rng(seed)
  a, b = (rng.standard_normal((30, 30)).astype(np.float16) for _ in range(2))
  check_all(a, b, rtol=F16_ULP)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(3, 5, 7), (1, 1, 1), (64, 1, 2), (5, 8, 1)])
def test_the_matrix_fast_path_builds_the_general_graph_and_numpys_values(dtype, m, k, n):
  # (products.matmul's path for two float matrices: the nodes of its general steps, so the same kernels)
  from minitensor.backend.uop import Ops
  rng = np.random.default_rng(m * 100 + k * 10 + n)
  a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
  ta, tb = mt.asarray(a), mt.asarray(b)
  got = ta @ tb
  ua, ub = ta.uop, tb.uop
  want = (ua.reshape((m, 1, k)).expand((m, n, k)) * ub.permute((1, 0)).reshape((1, n, k)).expand((m, n, k)))
  assert got.uop is want.reduce(Ops.ADD, 1) and got.dtype == dtype and got.shape == (m, n)
  np.testing.assert_allclose(np.asarray(got), a @ b, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
  for x, y in ((ta, mt.asarray(b.astype(np.float16))), (ta[:, :0], tb[:0]), (ta, tb.T)):   # the general path
    if x.shape[-1] == y.shape[0]:
      np.testing.assert_allclose(np.asarray(x @ y), np.asarray(x) @ np.asarray(y), rtol=1e-2, atol=1e-3)
    else:
      with pytest.raises(ValueError, match="matmul"): x @ y
