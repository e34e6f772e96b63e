"""rougier/numpy-100 run with `import minitensor as np` next to NumPy, every output compared.

    python benchmarks/numpy100.py [EXERCISES] [-v] [--only 12,30]

EXERCISES is the collection's `source/exercises100.ktx` (or the environment variable NUMPY100_KTX). Each answer
(`< aN` block) runs twice, as a notebook runs its cells: in one namespace where `np` is NumPy and in one where it
is minitensor (import lines `numpy` -> `minitensor`), both global generators seeded with N before answer N.
Compared, in order: the arguments of every `print`, the value of a final expression, and every name the answer
binds (Tensors read as ndarrays: shape, dtype and values, NaN equal to NaN, floats within 1e-9 relative for
float64 and 1e-5 for float32; Python and NumPy scalars by value). An answer whose NumPy run raises matches when
minitensor raises the same exception type. IPython's `%timeit` answers are timing exercises and are not counted;
`%run `python -c "..."`` runs the quoted code.

Prints one line per answer that does not match (the first difference, or the exception; -v: every answer) and
the counts of run-and-match, differ (a wrong value, no error: the worst outcome) and raise (minitensor raised,
NumPy did not), and how many matches returned an ndarray (a value NumPy computed) where NumPy returns one.
"""
from __future__ import annotations
import argparse
import ast
import contextlib
import io
import os
import re
import sys
import types
import warnings
import numpy

_IMPORT_RULES = [(re.compile(r"^(\s*)from numpy\b", re.M), r"\1from minitensor"),
                 (re.compile(r"^(\s*)import numpy as\b", re.M), r"\1import minitensor as"),
                 (re.compile(r"\bimport numpy\b(?! as)"), "import minitensor as numpy")]


def answers(text: str) -> dict[int, str]:
  """Answer number -> source, from the .ktx text (`< aN` blocks up to the next `< ` header)."""
  out, cur = {}, None
  for line in text.splitlines():
    if m := re.match(r"^< ([qha])(\d+)\s*$", line):
      cur = int(m.group(2)) if m.group(1) == "a" else None
      if cur is not None: out[cur] = []
    elif cur is not None: out[cur].append(line)
  return {k: "\n".join(v).strip() + "\n" for k, v in out.items()}


def ipython(src: str) -> str | None:
  """src with IPython's `%run `python -c "CODE"`` replaced by CODE; None for a timing answer (`%timeit`)."""
  if re.search(r"^\s*%timeit", src, re.M): return None
  return re.sub(r'^%run `python -c "(.*)"`\s*$', lambda m: m.group(1).replace("; ", "\n"), src, flags=re.M)


def for_minitensor(src: str) -> str:
  for pat, rep in _IMPORT_RULES: src = pat.sub(rep, src)
  return src


class Run:
  """One namespace (a notebook's kernel) for one library."""

  def __init__(self, lib: str):
    self.lib, self.mod = lib, __import__(lib)
    self.ns: dict = {"__name__": "__numpy100__", "np": self.mod}

  def run(self, n: int, src: str):
    """(printed argument tuples, final expression's value, names bound, exception or None)."""
    printed: list = []
    self.ns["print"] = lambda *args, **kw: printed.append(args)
    __import__(self.lib).random.seed(n)
    before = dict(self.ns)
    last, err = None, None
    try:
      with contextlib.redirect_stdout(io.StringIO()):   # what NumPy itself prints (np.info) is not compared
        mod = ast.parse(src)
        tail = mod.body.pop() if mod.body and isinstance(mod.body[-1], ast.Expr) else None
        exec(compile(mod, f"<answer {n}>", "exec"), self.ns)
        if tail is not None: last = eval(compile(ast.Expression(tail.value), f"<answer {n}>", "eval"), self.ns)
    except Exception as e:   # noqa: BLE001 (an answer may raise anything; its type is compared)
      err = e
    bound = {k: v for k, v in self.ns.items()
             if k != "print" and not k.startswith("__") and (k not in before or before[k] is not v)}
    return printed, last, bound, err


def _plain(x):
  """x with Tensors (and instances of Tensor subclasses) as ndarrays (also inside tuples, lists and dicts)."""
  if any(c.__name__ == "Tensor" and c.__module__ == "minitensor.tensor" for c in type(x).__mro__):
    return numpy.asarray(x)
  if isinstance(x, (list, tuple)): return type(x)(_plain(v) for v in x) if not hasattr(x, "_fields") else tuple(
    _plain(v) for v in x)
  if isinstance(x, dict): return {k: _plain(v) for k, v in x.items()}
  return x


def differ(a, b, where: str) -> str | None:
  """A description of the first difference of NumPy's a and minitensor's b, or None."""
  b = _plain(b)
  if isinstance(a, (types.ModuleType, types.FunctionType, type, types.GeneratorType)) or callable(a): return None
  if isinstance(a, (numpy.ndarray, numpy.generic)):
    if not isinstance(b, (numpy.ndarray, numpy.generic, int, float, complex, bool)):
      return f"{where}: NumPy {type(a).__name__}, minitensor {type(b).__name__}"
    b = numpy.asarray(b)
    if a.dtype.fields is not None: return None if a.dtype == b.dtype and (a == b).all() else f"{where}: records differ"
    if a.shape != b.shape: return f"{where}: shape {a.shape} vs {b.shape}"
    if a.dtype != b.dtype and not (isinstance(a, numpy.generic) and b.ndim == 0 and a.dtype.kind == b.dtype.kind):
      return f"{where}: dtype {a.dtype} vs {b.dtype}"
    if a.dtype.kind in "fc":
      tol = 1e-5 if a.dtype.itemsize <= 4 * (2 if a.dtype.kind == "c" else 1) else 1e-9
      ok = numpy.allclose(b, a, rtol=tol, atol=0, equal_nan=True)
    else: ok = numpy.array_equal(a, b)
    return None if ok else f"{where}: values differ ({numpy.asarray(a).ravel()[:4]} vs {b.ravel()[:4]})"
  if isinstance(a, (list, tuple)):
    if not isinstance(b, (list, tuple)) or len(a) != len(b): return f"{where}: {type(a).__name__} vs {b!r:.60}"
    return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := differ(x, y, f"{where}[{i}]"))), None)
  if isinstance(a, (bool, int, float, complex)):
    if isinstance(b, numpy.ndarray) and b.ndim == 0: b = b[()]     # a 0-d Tensor where NumPy gives a scalar
    if not isinstance(b, (bool, int, float, complex, numpy.generic)) or \
       numpy.asarray(a).dtype.kind != numpy.asarray(b).dtype.kind: return f"{where}: {a!r:.60} vs {b!r:.60}"
    return None if a == b or (a != a and b != b) else f"{where}: {a!r:.60} vs {b!r:.60}"
  if isinstance(a, str) and a == numpy.__version__ and b == __import__("minitensor").__version__: return None
  if isinstance(a, str) or a is None:
    return None if type(a) is type(b) and a == b else f"{where}: {a!r:.60} vs {b!r:.60}"
  return None    # other objects (dtypes, iterators, records): not compared


def handed(a, b) -> bool:
  """Whether minitensor's b holds an ndarray where NumPy's a has one (a value NumPy computed, not a Tensor)."""
  if isinstance(a, numpy.ndarray): return isinstance(b, numpy.ndarray)
  if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)): return any(handed(x, y) for x, y in zip(a, b))
  return False


def compare(n: int, ref, got) -> tuple[str, str]:
  """(outcome, detail): outcome 'match', 'differ' or 'raise'; a match's detail names the values minitensor
  returned as ndarrays."""
  (p0, l0, b0, e0), (p1, l1, b1, e1) = ref, got
  if e1 is not None and (e0 is None or type(e0) is not type(e1)):
    return "raise", f"{type(e1).__name__}: {str(e1)[:150]}" + (f" (NumPy: {type(e0).__name__})" if e0 else "")
  if e0 is not None and e1 is None: return "differ", f"NumPy raised {type(e0).__name__}, minitensor did not"
  if len(p0) != len(p1): return "differ", f"{len(p0)} prints vs {len(p1)}"
  for i, (x, y) in enumerate(zip(p0, p1)):
    if d := differ(x, y, f"print {i + 1}"): return "differ", d
  if d := differ(l0, l1, "final expression"): return "differ", d
  for k, v in b0.items():
    if d := differ(v, b1.get(k), k): return "differ", d
  nd = [f"print {i + 1}" for i, (x, y) in enumerate(zip(p0, p1)) if handed(x, y)] + \
       (["final expression"] if handed(l0, l1) else []) + [k for k, v in b0.items() if handed(v, b1.get(k))]
  return "match", ("ndarrays from minitensor: " + ", ".join(nd)) if nd else ""


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("exercises", nargs="?", default=os.environ.get("NUMPY100_KTX"))
  ap.add_argument("-v", action="store_true", help="print every answer's outcome")
  ap.add_argument("--only", default="", help="comma-separated answer numbers")
  args = ap.parse_args(argv)
  if not args.exercises: ap.error("give the path of exercises100.ktx (or set NUMPY100_KTX)")
  with open(args.exercises, encoding="utf-8") as f: todo = answers(f.read())
  only = {int(s) for s in args.only.split(",") if s}
  ref, mt = Run("numpy"), Run("minitensor")
  counts = {"match": 0, "differ": 0, "raise": 0, "timing": 0, "ndarray": 0}
  for n, src in sorted(todo.items()):
    if only and n not in only: continue
    if (src := ipython(src)) is None:
      counts["timing"] += 1
      continue
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      outcome, detail = compare(n, ref.run(n, src), mt.run(n, for_minitensor(src)))
    counts[outcome] += 1
    counts["ndarray"] += outcome == "match" and bool(detail)
    if outcome != "match" or args.v: print(f"{n:3d} {outcome:6s} {detail}")
  ran = counts["match"] + counts["differ"] + counts["raise"]
  print(f"{ran} answers (+{counts['timing']} timing): {counts['match']} run and match, {counts['differ']} differ, "
        f"{counts['raise']} raise; {counts['ndarray']} of the matches returned some ndarray where NumPy does")
  return 0


if __name__ == "__main__":
  sys.exit(main())
