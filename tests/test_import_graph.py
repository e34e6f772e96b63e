"""No import cycles inside minitensor. The import graph of the package is read from the source with `ast`: imports
at module level and inside functions alike (`import minitensor.x`, `from minitensor.x import y`, `from minitensor
import x`, relative imports). Imports under `if TYPE_CHECKING:` never run and are not edges. Importing minitensor.a.b
also runs the packages above it; those implicit edges are left out (every module would otherwise close a cycle
through `minitensor/__init__.py`, which imports the public modules)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The deliberate exceptions, each an import made when a function runs (checked below), never at import time: the
# Tensor class (tensor.py, its mixin methods.py and its view helper views.py) implements some methods in the
# modules of their families, which build Tensors and so import tensor.py; the method imports its family when
# called. array_api.namespace returns the package itself (the Array API namespace is `minitensor`). Removing these
# edges must leave a graph without cycles; the goal is an empty list.
ALLOWED = {
  ("minitensor.tensor", "minitensor.indexing"): "Tensor.__getitem__/__setitem__",
  ("minitensor.tensor", "minitensor.interop"): "Tensor.__array_ufunc__/__array_function__",
  ("minitensor.tensor", "minitensor.array_api"): "Tensor.__array_namespace__",
  ("minitensor.tensor", "minitensor.sorting"): "where(cond) with one argument is nonzero(cond)",
  ("minitensor.methods", "minitensor.tensor"): "the ndarray-style methods call tensor's functions",
  ("minitensor.methods", "minitensor.extra"): "cumsum, cumprod, take, trace, diagonal",
  ("minitensor.methods", "minitensor.sorting"): "sort, argsort, nonzero, searchsorted",
  ("minitensor.methods", "minitensor.manipulation"): "repeat",
  ("minitensor.views", "minitensor.tensor"): "a view is a Tensor",
  ("minitensor.array_api", "minitensor"): "__array_namespace__ is the package",
}


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
  assert g["minitensor.tensor"]["minitensor.indexing"] is False       # inside Tensor.__getitem__
  assert g["minitensor.backend.symbolic"]["minitensor.backend.uop"] is True
  assert "minitensor.tensor" not in g["minitensor.views"] or g["minitensor.views"]["minitensor.tensor"] is False


def test_no_import_cycles():
  g = import_graph()
  edges = {m: {t for t in ts if (m, t) not in ALLOWED} for m, ts in g.items()}
  cycle = find_cycle(edges)
  assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_allowed_edges_exist_and_import_only_when_called():
  g = import_graph()
  for (m, t), why in ALLOWED.items():
    assert t in g[m], f"{m} -> {t} ({why}) is no longer imported: remove it from ALLOWED"
    assert g[m][t] is False, f"{m} imports {t} at module level: an allowed cycle edge must be a call-time import"
