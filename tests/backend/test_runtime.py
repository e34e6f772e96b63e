"""runtime: compile errors, the memory and disk caches of compile_c, a missing compiler, and run_c's checks
of the arrays it is given."""
import os
import uuid
import numpy as np
import pytest
from minitensor.backend import runtime
from minitensor.backend.debug import run_c
from minitensor.backend.dtype import dtypes
from minitensor.backend.runtime import CompileError, compile_c, stats
from minitensor.backend.uop import buf, range_, sink


@pytest.fixture
def cache(tmp_path, monkeypatch):
  """An empty disk cache of our own and an empty memory cache (restored afterwards)."""
  for v in ("MINITENSOR_CC", "MINITENSOR_NOCACHE", "MINITENSOR_CACHE_BYTES"): monkeypatch.delenv(v, raising=False)
  monkeypatch.setenv("MINITENSOR_CACHE_DIR", str(tmp_path / "cache"))
  monkeypatch.setattr(runtime, "_loaded", {})
  return tmp_path / "cache"


def fresh_source(body: str = "data0[0] += 1.0f;") -> tuple[str, str]:
  """A translation unit no cache has seen: (source, kernel name)."""
  name = f"k_{uuid.uuid4().hex[:12]}"
  return f"void {name}(float* restrict data0) {{\n  {body}\n}}\n", name


def files(d, suffix=""):
  return sorted(os.path.join(dp, f) for dp, _, fs in os.walk(d) for f in fs if f.endswith(suffix))


def test_syntax_error_reports_compiler_text_and_saved_source(cache):
  src, name = fresh_source("data0[0] = ;  /* syntax error */")
  with pytest.raises(CompileError) as e:
    compile_c(src)
  msg = str(e.value)
  assert "error" in msg and "expected expression" in msg, msg            # the compiler's own words
  assert e.value.source_path is not None and os.path.exists(e.value.source_path)
  assert e.value.source_path in msg
  with open(e.value.source_path) as f: assert f.read() == src
  assert not files(cache, ".so"), "a failed build must not leave a cache entry"


def test_compile_error_is_not_cached(cache):
  src, _ = fresh_source("undeclared_thing = 1;")
  for _ in range(2):
    with pytest.raises(CompileError, match="undeclared_thing"): compile_c(src)


def test_memory_then_disk_cache(cache):
  src, name = fresh_source()
  c0, m0, d0 = stats.compiles, stats.memory_hits, stats.disk_hits
  k = compile_c(src)[name]
  assert (stats.compiles, stats.memory_hits, stats.disk_hits) == (c0 + 1, m0, d0)
  sos = files(cache, ".so")
  assert len(sos) == 1 and not [f for f in files(cache) if f.endswith(".c") or os.path.basename(f).startswith(".tmp")]
  assert compile_c(src)[name].fn is k.fn                                   # second call: a memory hit
  assert (stats.compiles, stats.memory_hits, stats.disk_hits) == (c0 + 1, m0 + 1, d0)
  runtime._loaded.clear()                                                  # a new process, as far as caches go
  k2 = compile_c(src)[name]
  assert (stats.compiles, stats.memory_hits, stats.disk_hits) == (c0 + 1, m0 + 1, d0 + 1)
  a = np.zeros(1, np.float32)
  runtime.call(k2, [a]); runtime.call(k, [a])
  assert a[0] == 2.0


def test_different_source_or_flags_compile_again(cache):
  src, name = fresh_source()
  compile_c(src)
  c0 = stats.compiles
  compile_c(src.replace("1.0f", "2.0f"))
  compile_c(src, flags=tuple(f for f in runtime.FLAGS if f != "-O3") + ("-O1",))
  assert stats.compiles == c0 + 2


def test_missing_compiler(cache, monkeypatch):
  monkeypatch.setenv("MINITENSOR_CC", "/nonexistent/cc")
  src, _ = fresh_source()
  with pytest.raises(CompileError, match="MINITENSOR_CC") as e:
    compile_c(src)
  assert "/nonexistent/cc" in str(e.value)
  assert not files(cache, ".c") and not files(cache, ".so")


def test_run_c_with_source_text(cache):
  src, name = fresh_source("for (int i = 0; i < 4; i++) data0[i] = data0[i] * 2.0f + 1.0f;")
  a = np.arange(4, dtype=np.float32)
  want = a * 2 + 1
  run_c(src, {0: a}, name)
  np.testing.assert_array_equal(a, want)


# ---------------------------------------------------------------- run_c's argument checks
def copy_kernel(n=8, d=dtypes.float32):
  r = range_(n, 0)
  return sink(buf(1, n, d).index(r).store(buf(0, n, d).index(r).load()).end(r))


@pytest.mark.parametrize("bad", [
  {0: np.zeros(8, np.float64), 1: np.zeros(8, np.float32)},                # wrong dtype
  {0: np.zeros(8, np.float32), 1: np.zeros(8, np.int32)},
  {0: np.zeros(16, np.float32)[::2], 1: np.zeros(8, np.float32)},          # not contiguous
  {0: np.zeros((8, 2), np.float32).T, 1: np.zeros(8, np.float32)},
  {0: np.zeros(7, np.float32), 1: np.zeros(8, np.float32)},                # too small
  {0: np.zeros(8, np.float32), 1: np.zeros(4, np.float32)},
  {0: np.zeros(8, np.float32)},                                            # a slot without an array
  {0: [0.0] * 8, 1: np.zeros(8, np.float32)},                              # not an ndarray
], ids=["dtype-in", "dtype-out", "strided", "transposed", "small-in", "small-out", "missing", "list"])
def test_run_c_rejects_bad_arrays(bad):
  before = {k: v.copy() for k, v in bad.items() if isinstance(v, np.ndarray)}
  with pytest.raises(ValueError, match=r"run_c: .*slot \d"):
    run_c(copy_kernel(), bad)
  for k, v in before.items(): np.testing.assert_array_equal(bad[k], v)       # nothing ran


def test_run_c_rejects_read_only_output():
  out = np.zeros(8, np.float32)
  out.flags.writeable = False
  with pytest.raises(ValueError, match="read-only"):
    run_c(copy_kernel(), {0: np.ones(8, np.float32), 1: out})


def test_run_c_accepts_larger_and_read_only_inputs():
  a = np.arange(10, dtype=np.float32)
  a.flags.writeable = False
  out = np.zeros(8, np.float32)
  run_c(copy_kernel(), {0: a, 1: out})
  np.testing.assert_array_equal(out, a[:8])


@pytest.mark.parametrize("version, tuned", [(None, True), ("Debian clang version 14.0.6", False)])
def test_gcc_o3_builds_get_the_compile_time_flags(cache, tmp_path, monkeypatch, version, tuned):
  """GCC_O3_FLAGS reach gcc's -O3 builds only: not an -O1 build, not a compiler whose --version is clang's."""
  real, log = runtime.compiler(), tmp_path / "argv"
  answer = f'echo "{version}"; exit 0' if version else f'exec "{real}" "$@"'
  cc = tmp_path / "logcc"
  cc.write_text(f'#!/bin/sh\ncase "$1" in --version) {answer};; esac\necho "$@" >> "{log}"\nexec "{real}" "$@"\n')
  cc.chmod(0o755)
  monkeypatch.setenv("MINITENSOR_CC", str(cc))
  monkeypatch.setattr(runtime, "_identity", {})
  src, name = fresh_source()
  a = np.zeros(1, np.float32)
  runtime.call(compile_c(src)[name], [a])
  runtime.call(compile_c(src, flags=tuple(f for f in runtime.FLAGS if f != "-O3") + ("-O1",))[name], [a])
  assert a[0] == 2.0
  o3, o1 = log.read_text().splitlines()
  assert "-O3" in o3.split() and "-O1" in o1.split()
  assert all((f in o3.split()) == tuned for f in runtime.GCC_O3_FLAGS)
  assert not set(runtime.GCC_O3_FLAGS) & set(o1.split())


def _mapped(d) -> set[str]:
  """The files under d this process has mapped (loaded libraries, also those since deleted: a build directory's)."""
  with open("/proc/self/maps") as f:
    return {line.split(None, 5)[5].strip().removesuffix(" (deleted)") for line in f
            if len(line.split(None, 5)) == 6 and str(d) in line}


def test_loaded_libraries_are_bounded_and_held_ones_keep_working(cache, monkeypatch):
  """Past LOADED_LIMIT the least recently used library no kernel holds is closed (its mapping goes); a kernel still
  held (as a program holds its kernels) keeps its library loaded and runs after the eviction pressure."""
  monkeypatch.setattr(runtime, "LOADED_LIMIT", 3)
  held_src, held_name = fresh_source("data0[0] = data0[0] * 3.0f + 1.0f;")
  held = compile_c(held_src)[held_name]
  for k in range(12):
    src, name = fresh_source(f"data0[0] += {k}.0f;")
    a = np.zeros(1, np.float32)
    runtime.call(compile_c(src)[name], [a])
    assert a[0] == k
  assert len(runtime._loaded) == 3 and held_src not in {k.src for ks in runtime._loaded.values() for k in ks.values()}
  assert len(_mapped(cache)) <= 3 + 1                    # the three kept and the held one
  a = np.full(1, 2.0, np.float32)
  runtime.call(held, [a])
  assert a[0] == np.float32(2.0) * 3 + 1
  c0 = stats.compiles
  compile_c(held_src)                                    # evicted from the memory cache: found on disk again
  assert stats.compiles == c0


def test_a_long_source_of_units_compiles_as_one_unit_per_core_at_once(cache, monkeypatch):
  """compile_units: pieces joined by UNIT_BREAK compile as one translation unit when short, else one per core
  (balanced by length, each its own cache entry) in parallel; every kernel is found, whichever unit holds it, and
  an error in one unit is raised in the caller."""
  from types import SimpleNamespace
  pieces = [f"/* {'x' * (200 * (k % 3))} */\nvoid k{k}(float* restrict a) {{ a[{k}] += {k + 1}.0f; }}\n"
            for k in range(7)]
  sigs = {f"k{k}": ("void*",) for k in range(7)}
  calls: list[str] = []
  compile_c_ = runtime.compile_c
  monkeypatch.setattr(runtime, "compile_c", lambda src, *a: calls.append(src) or compile_c_(src, *a))
  monkeypatch.setattr(runtime, "machine", lambda: SimpleNamespace(cores=3))
  a = np.zeros(7, np.float32)
  run = lambda ks: [runtime.call(ks[f"k{k}"], [a]) for k in range(7)]
  run(runtime.compile_units("", runtime.UNIT_BREAK.join(pieces), runtime.FLAGS, runtime.compiler(), sigs))
  assert len(calls) == 1                                       # (shorter than PARALLEL_SOURCE: one unit)
  monkeypatch.setattr(runtime, "PARALLEL_SOURCE", 100)
  run(runtime.compile_units("", runtime.UNIT_BREAK.join(pieces), runtime.FLAGS, runtime.compiler(), sigs))
  assert len(calls) == 4 and sum(s.count("void k") for s in calls[1:]) == 7      # (3 units: 7 kernels among them)
  assert all(s.count("void k") >= 2 for s in calls[1:])
  np.testing.assert_array_equal(a, 2 * np.arange(1, 8, dtype=np.float32))
  bad = pieces[:6] + ["void k6(float* restrict a) { a[0] += ; }\n"]
  with pytest.raises(CompileError):
    runtime.compile_units("", runtime.UNIT_BREAK.join(bad), runtime.FLAGS, runtime.compiler(), sigs)
