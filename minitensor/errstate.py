"""errstate: np.errstate applies where an operation is built, as NumPy's applies at the call.

A Tensor made while np.errstate differs from the default (one context-variable identity check per Tensor) has its
operation noted quiet, in the backend's fpstatus, for the flags that errstate ignores (`note`): realized later,
outside the block, it does not warn for them (README, "Floating-point warnings").
"""
from __future__ import annotations
import numpy as np
from minitensor.backend.uop import UOp

# NumPy's errstate is a context variable: read per Tensor made, only its identity compared with the default
try:
  from numpy._core._multiarray_umath import _extobj_contextvar as STATE
except ImportError:        # (another NumPy layout: every Tensor asks np.geterr)
  class STATE:       # noqa: N801
    get = staticmethod(lambda: None if all(v == "warn" for k, v in np.geterr().items() if k != "under") else 0)
DEFAULT = STATE.get()


def note(u: UOp) -> None:
  """u was built under an np.errstate other than the default: the flags it ignores are not reported when u is
  computed later (fpstatus.note_quiet)."""
  from minitensor.backend import fpstatus  # (imported when first needed, as the rest of the backend)
  modes = np.geterr()
  bits = sum(b for b, k in ((fpstatus.DIVIDE, "divide"), (fpstatus.OVERFLOW, "over"), (fpstatus.UNDERFLOW, "under"),
                            (fpstatus.INVALID, "invalid")) if modes[k] == "ignore")
  if bits: fpstatus.note_quiet(u, bits)


