"""machine: what the CPU that runs the kernels can do, read once, for opt.py and the compiler flags.

    vector_bytes   width of the widest vector registers the kernels use: 64 with AVX-512 (avx512f), 32 with AVX2
                   (avx2), 16 otherwise (SSE2 on x86-64, NEON/ASIMD on arm64)
    registers      how many of those registers the ISA names: 32 with AVX-512 or on arm64, else 16
    fma            fused multiply-add instructions exist (fma / asimd)
    l1, l2, l3     data cache sizes in bytes per core (L3: the whole cache), from /sys/devices/system/cpu/cpu0/cache
    cores          CPUs this process may run on (sched_getaffinity)

The ISA comes from the feature flags of /proc/cpuinfo (the same text runtime.target_cpu puts in the cache key);
cache sizes from sysfs. Where either is missing or unreadable (containers, other systems) each field falls back
to a safe value: 16-byte vectors, 16 registers, no FMA, 32 KiB / 1 MiB / 8 MiB caches. A smaller guess only makes
kernels slower, never wrong: the Opts are correct for any factors.

The generated code states its vector width: tier 1 compiles with `-mprefer-vector-width=<vector_bits>` on x86,
so gcc's per-CPU tuning (Intel's prefers 256-bit vectors even where 512-bit exist) cannot leave opt.py's register
tiles, sized for `vector_bytes`, half as wide as planned.
"""
from __future__ import annotations
import os
import platform
from typing import NamedTuple

DEFAULT_CACHES = (32 << 10, 1 << 20, 8 << 20)
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class Machine(NamedTuple):
  vector_bytes: int = 16
  registers: int = 16
  fma: bool = False
  l1: int = DEFAULT_CACHES[0]
  l2: int = DEFAULT_CACHES[1]
  l3: int = DEFAULT_CACHES[2]
  cores: int = 1
  x86: bool = False

  @property
  def vector_bits(self) -> int: return 8 * self.vector_bytes

  def lanes(self, itemsize: int) -> int:
    """Elements of `itemsize` bytes in one vector register (at least 1)."""
    return max(self.vector_bytes // max(itemsize, 1), 1)

  def flags(self) -> tuple[str, ...]:
    """Compiler flags that make the generated code use vectors of this width (x86 only; empty elsewhere)."""
    return (f"-mprefer-vector-width={self.vector_bits}",) if self.x86 else ()


def _cpu_flags(cpuinfo: str) -> set[str]:
  """The feature flags of the first processor in /proc/cpuinfo text (`flags` on x86, `Features` on arm)."""
  for line in cpuinfo.splitlines():
    k, _, v = line.partition(":")
    if k.strip() in ("flags", "Features"): return set(v.split())
  return set()


def _size(text: str) -> int | None:
  """'32K' -> 32768; None when unreadable."""
  t = text.strip().upper().removesuffix("B")
  try: return int(t[:-1]) * _UNITS[t[-1]] if t and t[-1] in _UNITS else int(t)
  except ValueError: return None


def _caches(root: str) -> tuple[int, int, int]:
  """(L1 data, L2, L3) bytes from a sysfs cache directory (index*/level, type, size); defaults for what is missing."""
  found: dict[int, int] = {}
  try: entries = sorted(os.listdir(root))
  except OSError: entries = []
  for e in entries:
    if not e.startswith("index"): continue
    try:
      with open(os.path.join(root, e, "level")) as f: level = int(f.read())
      with open(os.path.join(root, e, "type")) as f: kind = f.read().strip()
      with open(os.path.join(root, e, "size")) as f: size = _size(f.read())
    except (OSError, ValueError): continue
    if kind != "Instruction" and size and 1 <= level <= 3: found[level] = size
  return tuple(found.get(k + 1, d) for k, d in enumerate(DEFAULT_CACHES))   # type: ignore[return-value]


def _cores() -> int:
  try: return max(len(os.sched_getaffinity(0)), 1)
  except (AttributeError, OSError): return max(os.cpu_count() or 1, 1)


def detect(cpuinfo: str | None = None, cache_root: str = "/sys/devices/system/cpu/cpu0/cache",
           arch: str | None = None) -> Machine:
  """The Machine described by cpuinfo text (read from /proc/cpuinfo when None) and a sysfs cache directory."""
  if cpuinfo is None:
    try:
      with open("/proc/cpuinfo") as f: cpuinfo = f.read(1 << 16)
    except OSError: cpuinfo = ""
  arch = (arch or platform.machine()).lower()
  flags = _cpu_flags(cpuinfo)
  x86 = arch in ("x86_64", "amd64", "i686", "i386")
  arm = arch in ("aarch64", "arm64")
  if "avx512f" in flags: vec, regs = 64, 32
  elif "avx2" in flags: vec, regs = 32, 16
  else: vec, regs = 16, 32 if arm else 16
  l1, l2, l3 = _caches(cache_root)
  return Machine(vec, regs, "fma" in flags or "asimd" in flags, l1, l2, l3, _cores(), x86)


_machine: list[Machine] = []


def machine() -> Machine:
  """This process's Machine (detected once)."""
  if not _machine: _machine.append(detect())
  return _machine[0]
