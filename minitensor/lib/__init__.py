"""minitensor.lib: the parts of numpy.lib that code reaches for through `xp.lib` (xarray's rolling calls
`xp.lib.stride_tricks.sliding_window_view`)."""
from minitensor.lib import stride_tricks

__all__ = ["stride_tricks"]
