"""Neural-network operations built from Tensor operations (no Python loops over data).

Sliding windows cost no memory and no copies: `_windows` views an axis of length L as (K, Lo) with
win[k, o] = x[k*dilation + o*stride] by the seed's "diagonal trick" (expand to K rows, flatten, view with a
row length of L + dilation, so each row starts `dilation` later) and a strided slice. Convolution is then a
product over (C/groups, KH, KW) that rangeify lowers to a direct loop nest, and pooling a reduce of the
window axes.
"""
from __future__ import annotations
import math
import numpy as np
from minitensor.backend.uop import Ops, UOp, prod
from minitensor.numpy_rules import normalize_axes
from minitensor.tensor import Tensor, apply_ufunc, asarray, where


def _t(x) -> Tensor: return x if isinstance(x, Tensor) else asarray(x)


def softmax(x, axis: int = -1) -> Tensor:
  """exp(x - max) / sum(exp(x - max)) along axis; one fused kernel along the last axis.

  Parameters
  ----------
  x : Tensor or array_like
  axis : int, default -1

  Returns
  -------
  Tensor
  """
  x = _t(x)
  e = apply_ufunc(np.exp, x - x.max(axis=axis, keepdims=True))
  return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis: int = -1) -> Tensor:
  """x - logsumexp(x) along axis: the log of softmax, computed stably.

  Parameters
  ----------
  x : Tensor or array_like
  axis : int, default -1

  Returns
  -------
  Tensor
  """
  x = _t(x)
  return x - logsumexp(x, axis=axis, keepdims=True)


def logsumexp(x, axis=None, keepdims: bool = False) -> Tensor:
  """log(sum(exp(x))) computed stably: rows of -inf give -inf, +inf gives +inf, no overflow near float max.

  Parameters
  ----------
  x : Tensor or array_like
  axis : None, int or tuple of ints
  keepdims : bool, default False

  Returns
  -------
  Tensor
  """
  x = _t(x)
  m = x.max(axis=axis, keepdims=True)
  m = where(apply_ufunc(np.isfinite, m), m, 0)
  s = apply_ufunc(np.log, apply_ufunc(np.exp, x - m).sum(axis=axis, keepdims=True)) + m
  return s if keepdims else s.squeeze(axis=normalize_axes(axis, x.ndim, "logsumexp"))


def relu(x) -> Tensor:
  """max(x, 0) elementwise.

  Parameters
  ----------
  x : Tensor or array_like

  Returns
  -------
  Tensor
  """
  return apply_ufunc(np.maximum, _t(x), 0)


def sigmoid(x) -> Tensor:
  """1 / (1 + exp(-x)) elementwise.

  Parameters
  ----------
  x : Tensor or array_like

  Returns
  -------
  Tensor
  """
  x = _t(x)
  return 1 / (1 + apply_ufunc(np.exp, -x))


def silu(x) -> Tensor:
  """x * sigmoid(x) elementwise.

  Parameters
  ----------
  x : Tensor or array_like

  Returns
  -------
  Tensor
  """
  x = _t(x)
  return x * sigmoid(x)


def softplus(x) -> Tensor:
  """log(1 + exp(x)), stable for large |x|.

  Parameters
  ----------
  x : Tensor or array_like

  Returns
  -------
  Tensor
  """
  x = _t(x)
  return apply_ufunc(np.maximum, x, 0) + apply_ufunc(np.log1p, apply_ufunc(np.exp, -apply_ufunc(np.absolute, x)))


def gelu(x, approximate: str = "none") -> Tensor:
  """x * Phi(x); approximate="tanh" uses the tanh form.

  Parameters
  ----------
  x : Tensor or array_like
  approximate : 'none' or 'tanh'

  Returns
  -------
  Tensor
  """
  x = _t(x)
  if approximate == "tanh":
    return 0.5 * x * (1 + apply_ufunc(np.tanh, math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))
  if approximate != "none": raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
  return 0.5 * x * (1 + Tensor(UOp(Ops.ERF, ((x * (1 / math.sqrt(2))).uop,))))


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
  """(x - mean) / sqrt(var + eps) over the last len(normalized_shape) axes, then * weight + bias.

  Parameters
  ----------
  x : Tensor or array_like
  normalized_shape : int or tuple of ints (the trailing axes)
  weight, bias : array_like, optional
  eps : float, default 1e-5

  Returns
  -------
  Tensor
  """
  x = _t(x)
  ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
  if tuple(x.shape[len(x.shape) - len(ns):]) != ns:
    raise ValueError(f"layer_norm: normalized_shape {ns} does not match the trailing axes of {x.shape}")
  axes = tuple(range(x.ndim - len(ns), x.ndim))
  m = x.mean(axis=axes, keepdims=True)
  d = x - m
  y = d / apply_ufunc(np.sqrt, (d * d).mean(axis=axes, keepdims=True) + eps)
  if weight is not None: y = y * _t(weight)
  if bias is not None: y = y + _t(bias)
  return y


def _windows(u: UOp, axis: int, k: int, stride: int, dilation: int) -> UOp:
  """Axis `axis` (length L) of u becomes two axes (k, Lo): win[j, o] = u[j*dilation + o*stride]."""
  L = u.shape[axis]
  lo = (L - dilation * (k - 1) - 1) // stride + 1
  u = u.permute(tuple(a for a in range(len(u.shape)) if a != axis) + (axis,))
  lead = u.shape[:-1]
  nd = len(u.shape)
  back = list(range(axis)) + [nd - 1, nd] + list(range(axis, nd - 1))
  if stride == k and dilation == 1:
    # disjoint windows (pooling): a plain (lo, k) view; its adjoint is then a zero-pad, not a sum over shifted rows
    e = u.shrink(tuple((0, s) for s in lead) + ((0, lo * k),)).reshape(lead + (lo, k))
    swap = tuple(range(nd - 1)) + (nd, nd - 1)
    return e.permute(tuple(swap[b] for b in back))
  e = u.reshape(lead + (1, L)).expand(lead + (k, L)).reshape(lead + (k * L,))
  e = e.pad(tuple((0, 0) for _ in lead) + ((0, k * dilation),))             # room for the sheared rows
  e = e.reshape(lead + (k, L + dilation)).shrink(tuple((0, s) for s in lead) + ((0, k), (0, (lo - 1) * stride + 1)))
  if stride > 1:
    n = (lo - 1) * stride + 1
    e = e.pad(tuple((0, 0) for _ in lead) + ((0, 0), (0, lo * stride - n))).reshape(lead + (k, lo, stride))
    e = e.shrink(tuple((0, s) for s in lead) + ((0, k), (0, lo), (0, 1))).reshape(lead + (k, lo))
  return e.permute(tuple(back))


def _pair(v, n: int, name: str) -> tuple[int, ...]:
  t = (v,) * n if isinstance(v, int) else tuple(v)
  if len(t) != n or any(not isinstance(a, (int, np.integer)) for a in t):
    raise ValueError(f"{name} must be an int or {n} ints, got {v!r}")
  return tuple(int(a) for a in t)


def _conv(x: Tensor, w: Tensor, bias, stride, padding, dilation, groups: int, nd: int, name: str) -> Tensor:
  x, w = _t(x), _t(w)
  if x.ndim != nd + 2 or w.ndim != nd + 2:
    raise ValueError(f"{name}: expected input (N, C, *spatial) and weight (O, C/groups, *kernel) of rank {nd + 2}, "
                     f"got {x.shape} and {w.shape}")
  n, c, o, cg = x.shape[0], x.shape[1], w.shape[0], w.shape[1]
  if groups < 1 or c % groups or o % groups or cg != c // groups:
    raise ValueError(f"{name}: input channels {c}, weight {w.shape} and groups={groups} do not match")
  ks, st, dl = w.shape[2:], _pair(stride, nd, "stride"), _pair(dilation, nd, "dilation")
  if padding == "valid": pads = ((0, 0),) * nd
  elif padding == "same":
    tot = [d * (k - 1) for d, k in zip(dl, ks)]
    pads = tuple((t // 2, t - t // 2) for t in tot)
  else: pads = tuple((p, p) for p in _pair(padding, nd, "padding"))
  sp = tuple(s + a + b for s, (a, b) in zip(x.shape[2:], pads))
  if any(s < d * (k - 1) + 1 for s, d, k in zip(sp, dl, ks)):
    raise ValueError(f"{name}: kernel {ks} larger than padded input {sp}")
  dt = np.result_type(x.dtype, w.dtype)
  u = x.astype(dt).uop
  # padded input materialized once (STAGE): the convolution's inner loops then load without bounds guards
  if any(p != (0, 0) for p in pads): u = u.pad(((0, 0), (0, 0)) + pads).stage()
  for a in range(nd): u = _windows(u, 2 + 2 * a, ks[a], st[a], dl[a])             # (N, C, k0, o0, k1, o1, ...)
  outs = u.shape[3::2]
  g = groups
  # (N, G, Cg, k0, o0, ...) -> (N, G, o..., Cg, k...)   and weight (G, Og, Cg, k...)
  u = u.reshape((n, g, c // g) + u.shape[2:])
  perm = (0, 1) + tuple(4 + 2 * a for a in range(nd)) + (2,) + tuple(3 + 2 * a for a in range(nd))
  u = u.permute(perm)                                                              # (N, G, o..., Cg, k...)
  red = (c // g,) + tuple(ks)
  u = u.reshape((n, g, 1) + tuple(outs) + red).expand((n, g, o // g) + tuple(outs) + red)
  wu = w.astype(dt).uop.reshape((1, g, o // g) + (1,) * nd + red).expand((n, g, o // g) + tuple(outs) + red)
  r = (u * wu).reduce(Ops.ADD, len(red)).reshape((n, o) + tuple(outs))
  out = Tensor(r)
  if bias is not None: out = out + _t(bias).reshape((1, o) + (1,) * nd)
  return out


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
  """2-D cross-correlation, NCHW input, (O, C/groups, KH, KW) weight; padding int, pair, "same" or "valid".

  Parameters
  ----------
  x : (N, C, H, W)
  weight : (O, C/groups, KH, KW)
  bias : (O,), optional
  stride, dilation : int or pair
  padding : int, pair, 'same' or 'valid'
  groups : int

  Returns
  -------
  Tensor
  """
  return _conv(x, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1) -> Tensor:
  """1-D cross-correlation, NCL input, (O, C/groups, K) weight.

  Parameters
  ----------
  x : (N, C, L)
  weight : (O, C/groups, K)
  bias : (O,), optional
  stride, dilation : int
  padding : int, 'same' or 'valid'
  groups : int

  Returns
  -------
  Tensor
  """
  return _conv(x, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def _pool(x, kernel_size, stride, padding, op: Ops, name: str, pad_value) -> Tensor:
  x = _t(x)
  if x.ndim < 2: raise ValueError(f"{name}: expected at least 2 dimensions, got {x.shape}")
  ks = _pair(kernel_size, 2, "kernel_size")
  st = ks if stride is None else _pair(stride, 2, "stride")
  pd = _pair(padding, 2, "padding")
  if any(p > k // 2 for p, k in zip(pd, ks)):
    raise ValueError(f"{name}: padding {pd} must be at most half the kernel {ks}")
  lead = x.ndim - 2
  u = x.uop.pad(((0, 0),) * lead + tuple((p, p) for p in pd), pad_value)
  u = _windows(u, lead, ks[0], st[0], 1)
  u = _windows(u, lead + 2, ks[1], st[1], 1)                                     # (..., k0, o0, k1, o1)
  nd = len(u.shape)
  u = u.permute(tuple(range(lead)) + (nd - 3, nd - 1, nd - 4, nd - 2))
  return Tensor(u.reduce(op, 2))


def max_pool2d(x, kernel_size, stride=None, padding=0) -> Tensor:
  """Max over kernel_size windows of the last two axes (padding counts as -inf).

  Parameters
  ----------
  x : Tensor or array_like (..., H, W)
  kernel_size : int or pair
  stride : int or pair, default kernel_size
  padding : int or pair

  Returns
  -------
  Tensor
  """
  x = _t(x)
  lowest = -math.inf if x.uop.dtype.is_float else x.uop.dtype.min
  return _pool(x, kernel_size, stride, padding, Ops.MAX, "max_pool2d", lowest)


def avg_pool2d(x, kernel_size, stride=None, padding=0) -> Tensor:
  """Mean over kernel_size windows of the last two axes (zero padding counted, as count_include_pad=True).

  Parameters
  ----------
  x : Tensor or array_like (..., H, W)
  kernel_size : int or pair
  stride : int or pair, default kernel_size
  padding : int or pair

  Returns
  -------
  Tensor
  """
  x = _t(x)
  if not x.uop.dtype.is_float: x = x.astype(np.float64)
  ks = _pair(kernel_size, 2, "kernel_size")
  s = _pool(x, ks, stride, padding, Ops.ADD, "avg_pool2d", 0)
  return s / float(prod(ks))


def scaled_dot_product_attention(q, k, v, mask=None, is_causal: bool = False, scale: float | None = None) -> Tensor:
  """softmax(q @ k^T * scale + mask) @ v, scale = 1/sqrt(d); is_causal masks j > i. A composition: the compiler
  runs it (and the same composition written out) as one fused kernel (backend/attention.py).

  Parameters
  ----------
  q, k, v : (..., L, d), (..., S, d), (..., S, dv)
  mask : bool or additive, optional
  is_causal : bool
  scale : float, optional

  Returns
  -------
  Tensor
  """
  q, k, v = _t(q), _t(k), _t(v)
  s = (q @ k.mT) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
  if is_causal:
    L, S = s.shape[-2], s.shape[-1]
    s = where(asarray(np.tril(np.ones((L, S), dtype=bool))), s, -math.inf)
  if mask is not None:
    m = _t(mask)
    s = where(m, s, -math.inf) if m.dtype == np.bool_ else s + m
  return softmax(s, axis=-1) @ v


def one_hot(indices, num_classes: int, dtype=np.float32) -> Tensor:
  """out[..., c] = (indices[...] == c).

  Parameters
  ----------
  indices : integer Tensor or array_like
  num_classes : int
  dtype : dtype-like, default float32

  Returns
  -------
  Tensor
  """
  i = _t(indices)
  if not np.issubdtype(i.dtype, np.integer): raise TypeError(f"one_hot: indices must be integers, got {i.dtype}")
  return (i.reshape(i.shape + (1,)) == asarray(np.arange(num_classes))).astype(dtype)


def cross_entropy(logits, target, axis: int = -1, reduction: str = "mean") -> Tensor:
  """-log_softmax(logits)[target] with integer class targets, or -sum(target * log_softmax) with probabilities.

  Parameters
  ----------
  logits : (..., C)
  target : integer class indices or probabilities
  axis : int
  reduction : 'mean', 'sum' or 'none'

  Returns
  -------
  Tensor
  """
  lg = _t(logits)
  lp = log_softmax(lg, axis=axis)
  t = _t(target)
  if np.issubdtype(t.dtype, np.integer): t = one_hot(t, lg.shape[axis], dtype=lg.dtype)
  loss = -(t * lp).sum(axis=axis)
  if reduction == "mean": return loss.mean()
  if reduction == "sum": return loss.sum()
  if reduction == "none": return loss
  raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
