"""minitensor.einops: einops' generic API on Tensors, against the same calls on ndarrays."""
import einops
import numpy as np
import pytest
import minitensor as mt
import minitensor.einops  # noqa: F401  (defines the backend einops looks for)
from minitensor.backend.runtime import stats

X = np.random.default_rng(3).standard_normal((2, 3, 4, 6)).astype(np.float32)
CALLS = [
  (einops.rearrange, ("b c h w -> b h w c",), {}),
  (einops.rearrange, ("b c (h1 h2) w -> b (c h1) h2 w",), {"h1": 2}),
  (einops.rearrange, ("b c h w -> (b c) (h w)",), {}),
  (einops.reduce, ("b c h w -> b c", "mean"), {}),
  (einops.reduce, ("b c (h 2) (w 3) -> b c h w", "max"), {}),
  (einops.reduce, ("b c h w -> c", "sum"), {}),
  (einops.reduce, ("b c h w -> b 1 h w", "min"), {}),
  (einops.reduce, ("b c h w -> h w", "prod"), {}),
  (einops.repeat, ("b c h w -> b c h w r",), {"r": 3}),
  (einops.repeat, ("b c h w -> b (c r) h w",), {"r": 2}),
  (einops.einsum, ("b c h w, b c h w -> b c",), {}),
]


@pytest.mark.parametrize("f,args,kw", CALLS, ids=[c[1][0] + (" " + c[1][1] if len(c[1]) > 1 else "") for c in CALLS])
def test_einops_on_tensors_matches_ndarrays(f, args, kw):
  t = mt.asarray(X)
  operands = (t, t, args[0]) if f is einops.einsum else (t,) + args
  want = f(*((X, X, args[0]) if f is einops.einsum else (X,) + args), **kw)
  got = f(*operands, **kw)
  assert isinstance(got, mt.Tensor) and got.shape == want.shape and got.dtype == want.dtype
  np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6)


def test_einops_stays_lazy_and_packs():
  t = mt.asarray(X)
  n = stats.graph_misses + stats.graph_hits
  y = einops.reduce(einops.rearrange(t, "b c h w -> b h w c") * 2, "b h w c -> b c", "mean")
  assert stats.graph_misses + stats.graph_hits == n          # nothing computed yet
  np.testing.assert_allclose(np.asarray(y), X.mean(axis=(2, 3)) * 2, rtol=1e-5)
  packed, ps = einops.pack([t, t[:, :1]], "b * h w")
  assert isinstance(packed, mt.Tensor) and packed.shape == (2, 4, 4, 6)
  a, b = einops.unpack(packed, ps, "b * h w")
  np.testing.assert_array_equal(np.asarray(a), X)
  np.testing.assert_array_equal(np.asarray(b), X[:, :1])
