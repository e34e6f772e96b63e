"""NumPy's names that are not array functions, for code written as `import minitensor as np`.

    seterr geterr errstate seterrcall geterrcall
                        NumPy's own: minitensor's floating-point warnings follow NumPy's error state, so there
                        is one state, set by either spelling
    set_printoptions get_printoptions printoptions
                        NumPy's own: a Tensor prints through NumPy's array printing (repr and str of its
                        realized values), so they shape how Tensors print too
    dtype, the scalar types (float64, ubyte, intc, ..., datetime64, str_) and abstract ones (number, floating,
    ...), issubdtype,
    euler_gamma, s_, index_exp, typecodes, ...
                        NumPy's objects; a dtype minitensor does not compute with (structured, string,
                        datetime) raises asarray's TypeError when an array of it is made
    ndarray             `Tensor`: minitensor's array type, so `isinstance(x, mt.ndarray)` and annotations
                        written against np.ndarray hold for Tensors. Tensor is not a subclass of numpy.ndarray
                        (isinstance(t, numpy.ndarray) is False) and has no ndarray constructor
                        (mt.ndarray(shape) builds nothing: use mt.empty/mt.zeros); subclassing Tensor the way
                        NumPy code subclasses ndarray (__array_finalize__, .view(cls)) is not supported
    info show_config    NumPy's info on any object (minitensor's docstrings included); minitensor's
                        configuration (compiler, CPU, cache) followed by NumPy's
"""
from __future__ import annotations
import sys
import numpy as np
from minitensor.tensor import Tensor

__all__ = ["seterr", "geterr", "errstate", "seterrcall", "geterrcall", "set_printoptions", "get_printoptions",
           "printoptions", "dtype", "bool_", "byte", "ubyte", "short", "ushort", "intc", "uintc", "int_", "uint",
           "long", "ulong", "longlong", "ulonglong", "intp", "uintp", "half", "single", "double", "csingle",
           "cdouble", "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact", "floating",
           "complexfloating", "issubdtype", "euler_gamma", "little_endian", "True_", "False_", "typecodes",
           "sctypeDict", "ScalarType", "s_", "index_exp", "datetime64", "timedelta64", "str_", "bytes_", "void",
           "object_", "ndarray", "info", "show_config"]

seterr, geterr, errstate, seterrcall, geterrcall = np.seterr, np.geterr, np.errstate, np.seterrcall, np.geterrcall
set_printoptions, get_printoptions, printoptions = np.set_printoptions, np.get_printoptions, np.printoptions
dtype, issubdtype, euler_gamma, little_endian = np.dtype, np.issubdtype, np.euler_gamma, sys.byteorder == "little"
bool_, True_, False_, byte, ubyte, short, ushort = np.bool_, np.True_, np.False_, np.byte, np.ubyte, np.short, np.ushort
intc, uintc, int_, uint, long, ulong = np.intc, np.uintc, np.int_, np.uint, np.long, np.ulong
longlong, ulonglong, intp, uintp = np.longlong, np.ulonglong, np.intp, np.uintp
half, single, double, csingle, cdouble = np.half, np.single, np.double, np.csingle, np.cdouble
generic, number, integer, signedinteger, unsignedinteger = np.generic, np.number, np.integer, np.signedinteger, \
  np.unsignedinteger
inexact, floating, complexfloating = np.inexact, np.floating, np.complexfloating
typecodes, sctypeDict, ScalarType, s_, index_exp = np.typecodes, np.sctypeDict, np.ScalarType, np.s_, np.index_exp
datetime64, timedelta64, str_, bytes_, void, object_ = np.datetime64, np.timedelta64, np.str_, np.bytes_, np.void, \
  np.object_
ndarray = Tensor


def info(object=None, maxwidth: int = 76, output=None, toplevel: str = "minitensor") -> None:
  """Print the documentation of an object (a function, class, module, Tensor method), as numpy.info.

  Parameters
  ----------
  object : object or str, optional
      A string is looked up in the `toplevel` module's namespace.
  maxwidth : int, optional
  output : file object, optional
      Default sys.stdout.
  toplevel : str, optional
  """
  np.info(object, maxwidth=maxwidth, output=sys.stdout if output is None else output, toplevel=toplevel)


def show_config() -> None:
  """Print minitensor's configuration (version, C compilers, CPU model, kernel cache), then NumPy's."""
  from minitensor.backend import diskcache, machine, runtime, tiers
  m = machine.machine()
  print(f"minitensor {sys.modules['minitensor'].__version__}\n  C compiler: {runtime.compiler()}\n"
        f"  fast compiler (tier 0): {tiers.fast_compiler() or 'none'}\n"
        f"  CPU: {m.cores} cores, {m.vector_bits}-bit vectors, FMA {m.fma}, "
        f"caches {m.l1 >> 10}K/{m.l2 >> 10}K/{m.l3 >> 10}K\n  kernel cache: {diskcache.cache_dir()}")
  np.show_config()
