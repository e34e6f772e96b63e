"""minitensor: a NumPy-like lazy tensor library that compiles every result with its own small compiler.

    import minitensor as mt
    x = mt.asarray(np.random.rand(4, 8).astype(np.float32))
    e = mt.exp(x - x.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)      # nothing has run yet
    np.asarray(p)                              # lowered, compiled, run: one fused kernel
"""
__version__ = "0.1.0"

from minitensor.tensor import (Tensor, asarray, array, realize, where, broadcast_shapes)
from minitensor.creation import full, zeros, ones, empty
# the families of Tensor's methods (tensor.py's docstring): each adds its methods to Tensor when imported
from minitensor import operators, movement, reductions, products, indexing, interop, methods, ndarray_attrs  # noqa: F401
from minitensor.movement import expand_dims
from minitensor.products import matmul, dot, tensordot
from minitensor.functions import *  # noqa: F401,F403  (the NumPy-named functions)
from minitensor.creation import *  # noqa: F401,F403
from minitensor.manipulation import *  # noqa: F401,F403
from minitensor.rearranging import *  # noqa: F401,F403
from minitensor.reduction_functions import *  # noqa: F401,F403
from minitensor.inspect import explain, to_dot  # noqa: F401
from minitensor.extra import *  # noqa: F401,F403
from minitensor.sorting import *  # noqa: F401,F403
from minitensor.statistics import *  # noqa: F401,F403
from minitensor.einsum import einsum  # noqa: F401
from minitensor.methods import ptp  # noqa: F401
from minitensor.autodiff import grad, value_and_grad, vjp, stop_gradient  # noqa: F401
from minitensor.jit import jit, TracerError  # noqa: F401
from minitensor.elementwise import *  # noqa: F401,F403
from minitensor.nan_reductions import *  # noqa: F401,F403
from minitensor.index_helpers import *  # noqa: F401,F403
from minitensor.setops import *  # noqa: F401,F403
from minitensor.quantiles import *  # noqa: F401,F403
from minitensor.io import *  # noqa: F401,F403
from minitensor.numpy_names import *  # noqa: F401,F403
from minitensor.ndarray_attrs import *  # noqa: F401,F403  (ndim, shape, size: no realization)
from minitensor.array_api_creation import *  # noqa: F401,F403  (with `device`)
from minitensor.array_api import *  # noqa: F401,F403  (last: the Array API's spellings and `device` win)

# imported on first use (`mt.random`, `mt.nn`, `mt.testing`, `mt.linalg`, `mt.fft`, `mt.emath`, `mt.lib`):
# numpy.random alone costs ~10 ms of import time, testing needs hypothesis
_SUBMODULES = ("random", "nn", "testing", "linalg", "fft", "emath", "lib")


def __getattr__(name: str):
  if name in _SUBMODULES:
    import importlib
    try: return importlib.import_module(f"minitensor.{name}")
    except ImportError as e:      # minitensor.testing without hypothesis: hasattr(mt, "testing") is False
      if name != "testing": raise
      raise AttributeError(f"module 'minitensor' has no attribute 'testing' ({e})") from None
  raise AttributeError(f"module 'minitensor' has no attribute {name!r}")


def __dir__() -> list[str]:
  return sorted(set(globals()) | set(_SUBMODULES))
