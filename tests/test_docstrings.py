"""One docstring source: every public function and Tensor method has a docstring, written inline where it is
defined. No module of the package sets or copies a docstring when it runs (`f.__doc__ = ...`, `setattr(f,
"__doc__", ...)`, `functools.wraps`), so the text in the source is the text users see."""
import ast
import inspect
from pathlib import Path
import minitensor as mt
import minitensor.fft
import minitensor.linalg
import minitensor.nn
import minitensor.random

ROOT = Path(__file__).resolve().parent.parent
MODULES = (mt, minitensor.nn, minitensor.linalg, minitensor.fft, minitensor.random)


def _public_functions():
  """(module name, name, object) for every public callable a module exports that minitensor defines (so not the
  NumPy dtypes the Array API namespace re-exports, nor a module's own imports from the backend)."""
  for mod in MODULES:
    for name in dir(mod):
      if name.startswith("_") and name != "__array_namespace_info__": continue
      obj = getattr(mod, name)
      if inspect.ismodule(obj) or not callable(obj): continue
      where = getattr(obj, "__module__", None) or ""
      if mod is mt and where.startswith("minitensor") or where == mod.__name__: yield mod.__name__, name, obj


def test_every_public_function_has_a_docstring():
  found = list(_public_functions())
  assert len(found) > 250 and {"where", "sum", "exp", "conv2d", "svd"} <= {n for _, n, _ in found}
  missing = [f"{m}.{n}" for m, n, f in found if not (f.__doc__ or "").strip()]
  assert not missing, f"without a docstring: {missing}"


def test_every_public_tensor_method_and_property_has_a_docstring():
  names = [n for n in dir(mt.Tensor) if not n.startswith("_")]
  assert {"sum", "reshape", "T", "shape", "sort", "dot", "astype", "to_device"} <= set(names)
  missing = [n for n in names if not (inspect.getattr_static(mt.Tensor, n).__doc__ or "").strip()]
  assert not missing, f"Tensor attributes without a docstring: {missing}"


def test_the_text_users_see_is_the_inline_docstring():
  # where lost its note on Python ints when a generated docstring replaced it
  assert "where(c, int8_t, 1000) holds -24" in mt.where.__doc__ and "Parameters" in mt.where.__doc__
  assert "initial : scalar" in mt.Tensor.sum.__doc__ and "where : array_like of bool" in mt.Tensor.sum.__doc__
  assert "device" in mt.arange.__doc__ and "Parameters" in minitensor.nn.relu.__doc__


def _doc_writes(tree: ast.AST):
  """The lines of every statement that sets or copies a docstring."""
  for n in ast.walk(tree):
    targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) \
      else []
    for t in targets:
      if isinstance(t, ast.Attribute) and t.attr == "__doc__" or isinstance(t, ast.Name) and t.id == "__doc__":
        yield n.lineno
    if isinstance(n, ast.Call):
      f = n.func
      name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
      if name == "setattr" and len(n.args) > 1 and isinstance(n.args[1], ast.Constant) and n.args[1].value == "__doc__":
        yield n.lineno
      if name in ("wraps", "update_wrapper"): yield n.lineno


def test_doc_write_finder_sees_each_form():
  src = ("f.__doc__ = 'x'\ng.__doc__ += 'y'\nsetattr(h, '__doc__', 'z')\n@functools.wraps(f)\ndef k(): pass\n"
         "x = f.__doc__\n")
  assert sorted(_doc_writes(ast.parse(src))) == [1, 2, 3, 4]


def test_no_module_sets_a_docstring_when_it_runs():
  found = []
  for p in sorted((ROOT / "minitensor").rglob("*.py")):
    found += [f"{p.relative_to(ROOT)}:{ln}" for ln in _doc_writes(ast.parse(p.read_text(), str(p)))]
  assert not found, f"docstrings set or copied at run time (write them inline instead): {found}"
