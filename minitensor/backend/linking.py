"""linking: the arguments that link a kernel library (runtime's build: the compiler run, then these).

    link(cc, flags)     the link of a build by cc: its own few libraries, or the compiler driver's usual one
    usual_only(cc)      a library so linked did not build or load: cc links as usual from now on

The usual link reads libc's and libm's linker scripts and shared objects and the start files for every library it
writes: for a small kernel, half of tcc's time (an empty kernel: 3.9-4.2 -> 1.9-2.0 ms) and a third of gcc's at -O1
(the link alone 24 -> 13.5 ms; AMD EPYC Zen 4). A kernel library is only ever loaded into a Python process, whose
global scope has libc (and, as the interpreter links it, libm), and it has no constructors for the start files to
run. So with -nostdlib:
  tcc   links tcc's own libtcc1.a (its helpers: conversions between unsigned 64-bit integers and floats) and binds
        libc's and libm's functions where it is loaded;
  gcc   links libm (with glibc's vector math library, which libm's linker script names), libgomp when it compiles
        OpenMP, and libgcc.a (its helpers: complex multiplication and division, 128-bit arithmetic); libc binds where
        it is loaded.
Another compiler, a tcc whose libtcc1.a is not where tcc installs it, and a compiler whose library so linked failed
to build or to load (an interpreter without libm in its global scope) link as usual (-lm).
"""
from __future__ import annotations
import glob
import os
import sys
from minitensor.backend import diskcache

USUAL = ("-lm",)
_links: dict[tuple[str, bool], tuple[str, ...]] = {}    # (compiler, OpenMP) -> its link
_usual: set[str] = set()                                # compilers that link as usual (usual_only)


def link(cc: str, flags: tuple) -> tuple[str, ...]:
  """The arguments after the source that link a build by cc with these flags (the module docstring)."""
  if cc in _usual: return USUAL
  if (args := _links.get(k := (cc, "-fopenmp" in flags))) is None:
    name = os.path.basename(os.path.realpath(diskcache.which(cc) or cc))
    if "tcc" in name: args = ("-nostdlib", lib) if (lib := _libtcc1(cc)) else USUAL
    elif "gcc" in name and "clang" not in name: args = ("-nostdlib", "-lm", *(("-lgomp",) if k[1] else ()), "-lgcc")
    else: args = USUAL
    _links[k] = args
  return args


def usual_only(cc: str) -> None:
  """A library linked by link(cc, ...) failed to build or to load: cc links as usual for the rest of the process."""
  _usual.add(cc)


def _libtcc1(cc: str) -> str | None:
  """libtcc1.a in tcc's install directory (`tcc -print-search-dirs`), PREFIX/lib/tcc or PREFIX/lib/<multiarch>/tcc
  as Debian installs it: found by name, without running tcc."""
  lib = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(diskcache.which(cc) or cc))), "lib")
  arch = getattr(sys.implementation, "_multiarch", None)
  for d in [os.path.join(lib, "tcc"), *([os.path.join(lib, arch, "tcc")] if arch else []),
            *sorted(glob.glob(os.path.join(lib, "*", "tcc")))]:
    if os.path.isfile(f := os.path.join(d, "libtcc1.a")): return f
  return None
