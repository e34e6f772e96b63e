"""mt.fft: the Array API's FFT extension with numpy.fft's names, signatures and results.

    realizing: fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft
        the input is computed, then NumPy's pocketfft runs (float32 and complex64 stay single precision, as in
        NumPy 2); the result is a realized Tensor when minitensor has its dtype. Complex results need minitensor's
        complex dtypes: without them the result is NumPy's ndarray, and nothing here changes when they exist
    lazy (recorded in the graph):
        fftfreq rfftfreq      an iota, wrapped at n // 2 (fftfreq), times 1 / (n d) as NumPy computes it
        fftshift ifftshift    roll by n // 2 (resp. -(n // 2)) along the axes (all of them by default)

`norm` is "backward" (None; 1/n on the inverse), "ortho" (1/sqrt(n) both ways) or "forward" (1/n forward).
"""
from __future__ import annotations
import operator
import numpy as np
from minitensor.creation import arange
from minitensor.linalg import from_numpy
from minitensor.rearranging import roll
from minitensor.tensor import Tensor, asarray, normalize_axes, where

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq",
           "fftshift", "ifftshift"]


def _transform(name: str, x, **kwargs):
  """numpy.fft.<name> of the realized x; a realized Tensor (an ndarray for a dtype minitensor lacks)."""
  a = x if isinstance(x, np.ndarray) else np.asarray(asarray(x))
  if a.ndim == 0: raise ValueError(f"{name}: the input must have at least one dimension, got a 0-d array")
  return from_numpy(getattr(np.fft, name)(a, **kwargs))


def fft(x, /, n=None, axis: int = -1, norm=None):
  """The 1-D discrete Fourier transform along axis (realizes; pocketfft through NumPy).

  Parameters
  ----------
  x : array_like
  n : int, optional
      Length of the transformed axis: the input is cropped or zero-padded to it.
  axis : int, optional
  norm : {None, "backward", "ortho", "forward"}, optional

  Returns
  -------
  Tensor (complex)
  """
  return _transform("fft", x, n=n, axis=axis, norm=norm)


def ifft(x, /, n=None, axis: int = -1, norm=None):
  """The inverse of fft (realizes; parameters as fft)."""
  return _transform("ifft", x, n=n, axis=axis, norm=norm)


def fftn(x, /, s=None, axes=None, norm=None):
  """The n-D discrete Fourier transform over axes (all, or the last len(s)) with lengths s (realizes).

  Parameters
  ----------
  x : array_like
  s : sequence of ints, optional
      Length of each transformed axis (cropped or zero-padded).
  axes : sequence of ints, optional
  norm : {None, "backward", "ortho", "forward"}, optional

  Returns
  -------
  Tensor (complex)
  """
  return _transform("fftn", x, s=s, axes=axes, norm=norm)


def ifftn(x, /, s=None, axes=None, norm=None):
  """The inverse of fftn (realizes; parameters as fftn)."""
  return _transform("ifftn", x, s=s, axes=axes, norm=norm)


def rfft(x, /, n=None, axis: int = -1, norm=None):
  """The FFT of real input: the n // 2 + 1 non-negative frequency terms (realizes; parameters as fft)."""
  return _transform("rfft", x, n=n, axis=axis, norm=norm)


def irfft(x, /, n=None, axis: int = -1, norm=None):
  """The inverse of rfft: a real result of length n (default 2 (m - 1)) along axis (realizes)."""
  return _transform("irfft", x, n=n, axis=axis, norm=norm)


def rfftn(x, /, s=None, axes=None, norm=None):
  """The n-D FFT of real input, the last axis halved as in rfft (realizes; parameters as fftn)."""
  return _transform("rfftn", x, s=s, axes=axes, norm=norm)


def irfftn(x, /, s=None, axes=None, norm=None):
  """The inverse of rfftn: a real result (realizes; parameters as fftn)."""
  return _transform("irfftn", x, s=s, axes=axes, norm=norm)


def hfft(x, /, n=None, axis: int = -1, norm=None):
  """The FFT of a Hermitian-symmetric signal given by its first half: a real result of length n (realizes)."""
  return _transform("hfft", x, n=n, axis=axis, norm=norm)


def ihfft(x, /, n=None, axis: int = -1, norm=None):
  """The inverse of hfft: the n // 2 + 1 first terms of a real signal's inverse FFT (realizes)."""
  return _transform("ihfft", x, n=n, axis=axis, norm=norm)


def _freq_args(n, d, op: str) -> tuple[int, float]:
  try: n = operator.index(n)
  except TypeError: raise TypeError(f"{op}: n should be an integer, got {n!r}") from None
  if n <= 0: raise ValueError(f"{op}: n must be positive, got {n}")
  return n, 1.0 / (n * d)


def fftfreq(n, /, d=1.0, *, dtype=None, device=None) -> Tensor:
  """The sample frequencies of an n-point fft with sample spacing d: [0, 1, ..., (n - 1) // 2, -(n // 2), ...,
  -1] / (n d); lazy.

  Parameters
  ----------
  n : int
  d : float, optional
  dtype : real floating dtype, optional (default float64)
  device : None or "cpu", optional

  Returns
  -------
  Tensor
  """
  if device not in (None, "cpu"): raise ValueError(f"fftfreq: minitensor has one device, 'cpu'; got {device!r}")
  n, val = _freq_args(n, d, "fftfreq")
  i = arange(n)
  r = where(i < (n - 1) // 2 + 1, i, i - n) * val
  return r if dtype is None else r.astype(dtype)


def rfftfreq(n, /, d=1.0, *, dtype=None, device=None) -> Tensor:
  """The sample frequencies of an n-point rfft: [0, 1, ..., n // 2] / (n d); lazy (parameters as fftfreq)."""
  if device not in (None, "cpu"): raise ValueError(f"rfftfreq: minitensor has one device, 'cpu'; got {device!r}")
  n, val = _freq_args(n, d, "rfftfreq")
  r = arange(n // 2 + 1) * val
  return r if dtype is None else r.astype(dtype)


def _shift(x, axes, sign: int, op: str) -> Tensor:
  t = asarray(x)
  axes = tuple(range(t.ndim)) if axes is None else (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
  if not axes: return t.copy()
  n = [t.shape[normalize_axes(a, t.ndim, op)[0]] for a in axes]
  return roll(t, [sign * (k // 2) for k in n], axes)


def fftshift(x, /, axes=None) -> Tensor:
  """The zero frequency moved to the center: roll by n // 2 along axes (all by default); lazy.

  Parameters
  ----------
  x : array_like
  axes : int or sequence of ints, optional

  Returns
  -------
  Tensor
  """
  return _shift(x, axes, 1, "fftshift")


def ifftshift(x, /, axes=None) -> Tensor:
  """The inverse of fftshift: roll by -(n // 2) along axes (all by default); lazy."""
  return _shift(x, axes, -1, "ifftshift")
