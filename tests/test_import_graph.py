"""No import cycles inside minitensor. The import graph of the package is read from the source with `ast`: imports
at module level and inside functions alike (`import minitensor.x`, `from minitensor.x import y`, `from minitensor
import x`, relative imports). Imports under `if TYPE_CHECKING:` never run and are not edges. Importing minitensor.a.b
also runs the packages above it; those implicit edges are left out (every module would otherwise close a cycle
through `minitensor/__init__.py`, which imports the public modules). There are no exceptions: the Tensor class
gets the methods of other modules by their registration (tensor.py's `tensor_methods`), not by importing them."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> dict[str, Path]:
  """Every module of the package by its dotted name (a package by its own name)."""
  out = {}
  for p in sorted((ROOT / "minitensor").rglob("*.py")):
    parts = p.relative_to(ROOT).with_suffix("").parts
    out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
  return out


def _imports(tree: ast.AST):
  """(import node, inside a function?) for every import that can run (not under `if TYPE_CHECKING:`)."""
  def walk(n, in_fn):
    if isinstance(n, ast.If) and "TYPE_CHECKING" in (getattr(n.test, "id", None), getattr(n.test, "attr", None)):
      for m in n.orelse: yield from walk(m, in_fn)
      return
    if isinstance(n, (ast.Import, ast.ImportFrom)): yield n, in_fn
    fn = in_fn or isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    for c in ast.iter_child_nodes(n): yield from walk(c, fn)
  yield from walk(tree, False)


def import_graph() -> dict[str, dict[str, bool]]:
  """module -> {imported package module: True when some import of it runs at module level}."""
  mods = _modules()
  graph: dict[str, dict[str, bool]] = {m: {} for m in mods}
  for name, path in mods.items():
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for n, in_fn in _imports(ast.parse(path.read_text(), str(path))):
      if isinstance(n, ast.Import): targets = [a.name for a in n.names]
      else:
        base = n.module or ""
        if n.level:   # relative: the package, up level - 1 packages
          up = pkg.split(".")[:len(pkg.split(".")) - (n.level - 1)]
          base = ".".join(up + ([base] if base else []))
        # `from pkg import name` imports the submodule pkg.name when there is one, else only pkg
        targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in n.names]
      for t in targets:
        if t in mods and t != name: graph[name][t] = graph[name].get(t, False) or not in_fn
  return graph


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
  """A cycle [a, b, ..., a] of the directed graph, or None."""
  state: dict[str, int] = {}     # 1: on the current path, 2: done
  path: list[str] = []
  def visit(v):
    state[v] = 1; path.append(v)
    for w in sorted(edges.get(v, ())):
      if state.get(w) == 1: return path[path.index(w):] + [w]
      if w not in state and (c := visit(w)): return c
    state[v] = 2; path.pop()
    return None
  for v in sorted(edges):
    if v not in state and (c := visit(v)): return c
  return None


def test_find_cycle_finds_and_names_cycles():
  assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
  assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
  assert find_cycle({"x": {"y"}, "y": {"y"}}) == ["y", "y"]


def test_graph_sees_module_and_function_level_imports():
  g = import_graph()
  assert g["minitensor.tensor"]["minitensor.ufuncs"] is True          # `from minitensor import ufuncs as U`
  assert g["minitensor.array_api"]["minitensor.linalg"] is False       # inside array_api._older
  assert g["minitensor.backend.symbolic"]["minitensor.backend.uop"] is True
  assert g["minitensor.indexing"]["minitensor.tensor"] is True


def test_no_import_cycles():
  g = import_graph()
  cycle = find_cycle({m: set(ts) for m, ts in g.items()})
  assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_family_cannot_replace_a_method_of_tensor():
  import minitensor as mt
  from minitensor.tensor import tensor_methods
  with pytest.raises(TypeError, match="Tensor.sum is defined twice"):
    @tensor_methods
    class _Again:
      def sum(self): return 0
  assert mt.Tensor.sum.__qualname__ == "Tensor.sum" and mt.asarray([1, 2]).sum().item() == 3


def private_reaches() -> list[str]:
  """Every place a backend module, or the frontend, uses a private name (a leading underscore) of another backend
  module: `from minitensor.backend.x import _y`, or `x._y` where x is an imported backend module."""
  mods = _modules()
  out = []
  for name, path in mods.items():
    tree = ast.parse(path.read_text(), str(path))
    aliases: dict[str, str] = {}          # local name -> the backend module it is
    for n, _ in _imports(tree):
      if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("minitensor.backend"):
        for a in n.names:
          if f"{n.module}.{a.name}" in mods: aliases[a.asname or a.name] = f"{n.module}.{a.name}"
          elif a.name.startswith("_") and n.module != name:
            out.append(f"{name}:{n.lineno} imports {n.module}.{a.name}")
      elif isinstance(n, ast.Import):
        for a in n.names:
          if a.name.startswith("minitensor.backend") and a.asname: aliases[a.asname] = a.name
    for n in ast.walk(tree):
      if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in aliases and \
         n.attr.startswith("_") and not n.attr.startswith("__") and aliases[n.value.id] != name:
        out.append(f"{name}:{n.lineno} reads {aliases[n.value.id]}.{n.attr}")
  return out


def test_no_stage_reaches_into_another_stages_private_names():
  assert private_reaches() == []


def test_private_reaches_are_found(tmp_path, monkeypatch):
  pkg = tmp_path / "minitensor" / "backend"
  pkg.mkdir(parents=True)
  (pkg / "__init__.py").write_text("")
  (pkg / "a.py").write_text("_x = 1\ny = 2\n")
  (pkg / "b.py").write_text("from minitensor.backend.a import _x, y\n"
                            "from minitensor.backend import a\nz = a._x + a.y\n")
  monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
  assert private_reaches() == ["minitensor.backend.b:1 imports minitensor.backend.a._x",
                               "minitensor.backend.b:3 reads minitensor.backend.a._x"]


# the backend modules that building graphs needs; every other one (the compiler's stages, the runtime, cffi) is
# imported by the first realize
GRAPH_BUILDING = {"minitensor.backend", "minitensor.backend.dtype", "minitensor.backend.ops", "minitensor.backend.uop",
                  "minitensor.backend.typerules", "minitensor.backend.walk", "minitensor.backend.leaves",
                  "minitensor.backend.composite"}


def test_import_does_not_load_the_compiler():
  child = ("import json, sys; import minitensor as mt; t = mt.asarray([1.0, 2.0]) + 1; "
           "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('minitensor.backend', 'cffi', '_cffi')))))")
  env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
  p = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
  assert p.returncode == 0, p.stderr
  loaded = set(json.loads(p.stdout))
  assert loaded <= GRAPH_BUILDING, f"imported by `import minitensor` and a graph: {sorted(loaded - GRAPH_BUILDING)}"
  for stage in ("realize", "kernelize", "rangeify", "render_c", "runtime", "gemm", "attention"):
    assert f"minitensor.backend.{stage}" in _modules()         # (the names above are the package's)


def test_no_module_is_over_600_lines():
  """One stage per file, each short enough to read whole (issue 29): a file past 600 lines is split by concern."""
  long = {name: n for name, p in _modules().items() if (n := len(p.read_text().splitlines())) > 600}
  assert not long, f"modules over 600 lines: {long}"
