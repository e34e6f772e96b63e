"""Scalar types of the IR.

A DType knows everything the stages need: its C spelling for the renderer, its NumPy dtype for the runtime,
its value range for bounds analysis and constant folding. complex64 and complex128 are C99 `float _Complex` and
`double _Complex` (NumPy's layout: real part, then imaginary part); their values are Python complex. Two pseudo
types exist only inside the compiler:
`index` (loop counters and address arithmetic, an unbounded integer until the renderer picks a width) and
`void` (effects: STORE, END, SINK).
"""
from __future__ import annotations
import functools
import math
import numpy as np


class DType:
  """One scalar type, made once (the `dtypes` below), compared by identity, immutable."""
  # (a plain class: a dataclass costs ~0.5 ms to define, and the backend's dataclasses were a third of a cold start)
  name: str           # NumPy's name: "float32"
  short: str          # the .uir spelling: "f32"
  itemsize: int
  ctype: str
  kind: str           # "b" bool, "i" signed int, "u" unsigned int, "f" float, "c" complex, "x" index, "v" void
  suffix: str         # the C PRELUDE helpers' suffix for its values (max_f32, floordiv_i64): narrow ints compute in i32
  mantissa: int       # a float's precision in bits (with the implicit one): float32 24

  def __init__(self, name: str, short: str, itemsize: int, ctype: str, kind: str, suffix: str = "", mantissa: int = 0):
    self.__dict__.update(name=name, short=short, itemsize=itemsize, ctype=ctype, kind=kind, suffix=suffix,
                         mantissa=mantissa)

  def __setattr__(self, name: str, value) -> None: raise AttributeError(f"DType is immutable: cannot set {name!r}")
  def __delattr__(self, name: str) -> None: raise AttributeError(f"DType is immutable: cannot delete {name!r}")

  def __repr__(self) -> str: return f"dtypes.{self.name}"
  def __reduce__(self): return (_by_name, (self.name,))

  @property
  def is_float(self) -> bool: return self.kind == "f"
  @property
  def is_int(self) -> bool: return self.kind in "iux"
  @property
  def is_unsigned(self) -> bool: return self.kind == "u"
  @property
  def is_bool(self) -> bool: return self.kind == "b"
  @property
  def is_complex(self) -> bool: return self.kind == "c"
  @property
  def real(self) -> DType:
    """The dtype of a part of a complex value (float32 for complex64); self for the other dtypes."""
    return (dtypes.float32 if self.itemsize == 8 else dtypes.float64) if self.kind == "c" else self
  @functools.cached_property
  def np(self) -> np.dtype: return np.dtype(self.name)

  @functools.cached_property
  def min(self) -> int | float | complex:
    if self.kind == "f": return -math.inf
    if self.kind == "c": return complex(-math.inf, -math.inf)     # below every value in NumPy's lexicographic order
    if self.kind in "ub": return 0
    if self.kind == "x": return -(1 << 63)
    return -(1 << (8 * self.itemsize - 1))

  @functools.cached_property
  def max(self) -> int | float | complex:
    if self.kind == "f": return math.inf
    if self.kind == "c": return complex(math.inf, math.inf)
    if self.kind == "b": return 1
    if self.kind == "u": return (1 << (8 * self.itemsize)) - 1
    return (1 << (8 * self.itemsize - 1)) - 1

  def python(self, v):
    """v as the Python value this dtype holds: integers wrap like C, floats (and both parts of a complex) round
    to the dtype."""
    if self.kind == "b": return bool(v)
    if self.kind == "c":
      if self.itemsize == 16: return complex(v)
      with np.errstate(over="ignore"): return complex(np.array(v, dtype=self.np))
    if self.kind == "f":
      if self.itemsize == 8: return float(v)
      with np.errstate(over="ignore"): return float(np.array(v, dtype=self.np))
    if self.kind == "x": return int(v)
    if isinstance(v, float) and not math.isfinite(v): return 0
    bits = 8 * self.itemsize
    v = int(v) & ((1 << bits) - 1)
    return v - (1 << bits) if self.kind == "i" and v >= (1 << (bits - 1)) else v


def float_to_int(v: float, to: DType) -> int:
  """v converted to integer dtype `to` as NumPy's conversion does on x86-64 (render_c's f2i helpers): truncation,
  and for NaN, inf or out of range the value cvttsd2si gives (INT_MIN of 32 or 64 bits) wrapped to the width."""
  def cvt(x: float, bits: int) -> int:
    return math.trunc(x) if -2.0 ** (bits - 1) <= x < 2.0 ** (bits - 1) else -(1 << (bits - 1))
  if to.itemsize == 8 and to.kind == "u": r = cvt(v - 2.0 ** 63, 64) ^ (1 << 63) if v >= 2.0 ** 63 else cvt(v, 64)
  else: r = cvt(v, 64 if to.itemsize == 8 or to.kind == "u" and to.itemsize == 4 else 32)
  return to.python(r)


class dtypes:
  bool = DType("bool", "bool", 1, "_Bool", "b", "i32")
  int8 = DType("int8", "i8", 1, "int8_t", "i", "i32")
  uint8 = DType("uint8", "u8", 1, "uint8_t", "u", "i32")
  int16 = DType("int16", "i16", 2, "int16_t", "i", "i32")
  uint16 = DType("uint16", "u16", 2, "uint16_t", "u", "i32")
  int32 = DType("int32", "i32", 4, "int32_t", "i", "i32")
  uint32 = DType("uint32", "u32", 4, "uint32_t", "u", "u32")
  int64 = DType("int64", "i64", 8, "int64_t", "i", "i64")
  uint64 = DType("uint64", "u64", 8, "uint64_t", "u", "u64")
  float16 = DType("float16", "f16", 2, "_Float16", "f", "f32", 11)
  float32 = DType("float32", "f32", 4, "float", "f", "f32", 24)
  float64 = DType("float64", "f64", 8, "double", "f", "f64", 53)
  complex64 = DType("complex64", "c64", 8, "float _Complex", "c")
  complex128 = DType("complex128", "c128", 16, "double _Complex", "c")
  index = DType("index", "index", 8, "int64_t", "x")
  void = DType("void", "void", 0, "void", "v")
  all = (bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, float32, float64, complex64,
         complex128)

  @staticmethod
  def min(d: DType): return d.min
  @staticmethod
  def max(d: DType): return d.max

  @staticmethod
  def from_numpy(d) -> DType:
    """The DType of a NumPy dtype; TypeError for kinds the compiler has no C type for."""
    if (t := _FROM_NP.get(d)) is not None: return t
    nd = np.dtype(d)
    if nd.isnative and (t := _BY_NAME.get(nd.name)) is not None and t.kind not in "xv":
      _FROM_NP[d] = t
      return t
    raise TypeError(f"minitensor does not support dtype {nd} (supported: {', '.join(t.name for t in dtypes.all)})")


_BY_NAME = {d.name: d for d in (*dtypes.all, dtypes.index, dtypes.void)}
_BY_SHORT = {d.short: d for d in (*dtypes.all, dtypes.index, dtypes.void)}
_FROM_NP: dict = {}


def _by_name(name: str) -> DType: return _BY_NAME[name]


def from_short(s: str) -> DType:
  """The DType spelled `s` in .uir text ("f32", "i64", "bool", "index")."""
  if s in _BY_SHORT: return _BY_SHORT[s]
  raise KeyError(s)
