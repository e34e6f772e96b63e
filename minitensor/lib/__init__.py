"""numpy.lib's counterparts: `mt.lib.stride_tricks` (imported on first use of `mt.lib`)."""
from minitensor.lib import stride_tricks

__all__ = ["stride_tricks"]
