"""Hostile compilers and a full disk (runtime._build, diskcache.out_of_space): a compiler that exits 0 but leaves a
truncated library, or speaks bytes that are not UTF-8, gives a result or a CompileError, never a crash or a
UnicodeDecodeError; a cache that runs out of space (ENOSPC) falls back on a private temporary directory as an
unusable one does. The compilers are shell scripts written by the tests around the real one.
"""
from __future__ import annotations
import errno
import os
import signal
import subprocess
import sys
import textwrap
import warnings
import numpy as np
import pytest
import minitensor as mt
from minitensor.backend import diskcache, linking, runtime, spawn, tiers
from minitensor.backend import tcc as tccmod
from minitensor.backend.runtime import CompileError, compile_c
from cache_files import CACHE_ENV, REPO
from cache_files import files as _files


def _fake_cc(tmp_path, body: str, version: str = 'exec "$REAL" "$@"') -> str:
  """A compiler script: `--version` runs `version`, a compile runs `body` (shell; $REAL is the real compiler)."""
  cc = tmp_path / "fake_cc"
  cc.write_text(f'#!/bin/sh\nREAL="{runtime.compiler()}"\ncase "$1" in --version) {version};; esac\n{body}\n')
  cc.chmod(0o755)
  return str(cc)


def _value(x: np.ndarray):
  """A small fused graph that needs a compiled kernel, and NumPy's value of it."""
  return (mt.exp(mt.asarray(x) * 0.5) + 2.0).numpy(), np.exp(x * 0.5) + 2.0


def test_truncated_library_from_a_compiler_that_exits_0_is_a_compile_error(tmp_path):
  """The compiler cuts its object in half and exits 0: loading it would SIGBUS the interpreter. In a child process,
  so a crash fails the test instead of killing pytest."""
  cc = _fake_cc(tmp_path, '"$REAL" "$@" || exit $?\nfor a; do case "$a" in *kernel.so) so="$a";; esac; done\n'
                          'n=$(stat -c %s "$so")\nhead -c $((n / 2)) "$so" > "$so.cut" && mv "$so.cut" "$so"')
  code = textwrap.dedent("""
    import numpy as np, minitensor as mt
    from minitensor.backend.runtime import CompileError
    try: np.asarray(mt.exp(mt.asarray(np.ones(4))) + 2.0)
    except CompileError as e: print("CompileError:", e)
  """)
  env = {k: v for k, v in os.environ.items() if k not in CACHE_ENV}
  env.update(MINITENSOR_CACHE_DIR=str(tmp_path / "cache"), MINITENSOR_CC=cc,
             PYTHONPATH=REPO + os.pathsep + env.get("PYTHONPATH", ""))
  p = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
  assert p.returncode == 0, f"child died (exit {p.returncode}):\n{p.stderr}"
  assert "CompileError:" in p.stdout and "incomplete shared object" in p.stdout
  assert not _files(tmp_path / "cache", ".so")


def test_non_utf8_version_and_messages_still_compile(cache, tmp_path, monkeypatch):
  cc = _fake_cc(tmp_path, 'printf "warning: \\377\\376 odd bytes\\n" >&2\nexec "$REAL" "$@"',
                version='printf "\\377\\376cc 9.9 \\351\\n"; exit 0')
  monkeypatch.setenv("MINITENSOR_CC", cc)
  x = np.linspace(-1, 1, 9)
  got, want = _value(x)
  np.testing.assert_allclose(got, want, rtol=1e-12)
  assert "\ufffd" in runtime._version_line(cc) and runtime._tuned(("-O3",), cc) == ("-O3",)


def test_non_utf8_error_message_is_a_compile_error(cache, tmp_path, monkeypatch):
  cc = _fake_cc(tmp_path, 'printf "kernel.c:1: error: \\377\\376\\n" >&2\nexit 1')
  monkeypatch.setenv("MINITENSOR_CC", cc)
  with pytest.raises(CompileError, match="error: \ufffd\ufffd"):
    compile_c("void k(float* restrict a) { a[0] = 1.0f; }\n")


def _falls_back(cache) -> None:
  """Realize four new kernels: right values, one warning naming the full disk, every library built in the
  temporary directory and none in the cache."""
  x = np.linspace(-1, 1, 7)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for f in ("exp", "sin", "cos", "tanh"):
      np.testing.assert_allclose(np.asarray(getattr(mt, f)(mt.asarray(x) * 0.5) + 2.0), getattr(np, f)(x * 0.5) + 2.0,
                                 rtol=1e-12)
  said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
  assert len(said) == 1 and "no space left" in said[0], said
  assert not _files(cache, ".so") and len(_files(diskcache._fallback[0], ".so")) == 4


def test_compiler_reporting_a_full_disk_falls_back_to_a_temporary_directory(cache, tmp_path, monkeypatch):
  """ld on a full disk: `No space left on device`, exit 1. Later builds go to the temporary directory at once."""
  log = tmp_path / "calls"
  cc = _fake_cc(tmp_path, f'for a; do case "$a" in *kernel.so) so="$a";; esac; done\n'
                          f'case "$so" in "{cache}"*) echo cache >> "{log}"\n'
                          f'  echo "ld: final link failed: {os.strerror(errno.ENOSPC)}" >&2; exit 1;; esac\n'
                          f'echo temp >> "{log}"\nexec "$REAL" "$@"')
  monkeypatch.setattr(diskcache, "_full", [])
  monkeypatch.setenv("MINITENSOR_CC", cc)
  _falls_back(cache)
  assert log.read_text().split() == ["cache"] + ["temp"] * 4


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_enospc_writing_the_cache_falls_back_to_a_temporary_directory(cache, monkeypatch, code):
  real = diskcache.build_dir
  def full_build_dir(shard):
    if shard.startswith(str(cache)): raise OSError(code, os.strerror(code), shard)
    return real(shard)
  monkeypatch.setattr(diskcache, "_full", [])
  monkeypatch.setattr(diskcache, "build_dir", full_build_dir)
  _falls_back(cache)


def test_a_full_tmpfs_cache_falls_back(cache, tmp_path, monkeypatch):
  """A real full filesystem: a 64 KiB tmpfs with 4 KiB left (root only: mount); tcc on it exits 0 with a short
  object, gcc's linker fails. Unmounted however the test ends."""
  if os.geteuid() != 0: pytest.skip("mounting a tmpfs needs root")
  mnt = tmp_path / "small"
  mnt.mkdir()
  if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True).returncode:
    pytest.skip("mount -t tmpfs is not permitted here")
  try:
    st = os.statvfs(mnt)
    with open(mnt / "filler", "wb") as f: f.write(b"\0" * (st.f_bavail * st.f_frsize - 4096))
    monkeypatch.setattr(diskcache, "_full", [])
    monkeypatch.setenv("MINITENSOR_CACHE_DIR", str(mnt / "cache"))
    _falls_back(mnt / "cache")
  finally: subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_version_line_is_asked_once_per_compiler_binary(cache, tmp_path, monkeypatch):
  """The compiler's `--version` line (read by an -O3 build, to add GCC's flags) is kept in the cache per binary: a
  new process reads it instead of spawning the compiler; a replaced binary (an upgrade: here a longer script, so its
  size changes whatever the clock's grain) is asked again. A cache key needs no spawn: it holds the binary's stamp,
  which the replacement changes."""
  log = tmp_path / "asked"
  cc = _fake_cc(tmp_path, 'exec "$REAL" "$@"', version=f'echo x >> {log}; echo "fakecc 1.0"; exit 0')
  src = "void k(float* restrict a) { a[0] = 1.0f; }\n"
  first = runtime._key(src, tiers.TCC_FLAGS, cc)
  assert not log.exists()                                 # (a key without -O3: no compiler spawned)
  assert runtime._tuned(("-O3",), cc) == ("-O3",) and runtime._version_line(cc) == "fakecc 1.0"
  assert log.read_text() == "x\n"
  monkeypatch.setattr(runtime, "_identity", {})           # (a new process: only the disk remembers)
  monkeypatch.setattr(runtime, "_versions", {})
  assert runtime._key(src, tiers.TCC_FLAGS, cc) == first and runtime._version_line(cc) == "fakecc 1.0"
  assert log.read_text() == "x\n" and len(_files(cache, ".cc")) == 1
  _fake_cc(tmp_path, 'exec "$REAL" "$@"', version=f'echo x >> {log}; echo "fakecc 2.0.1"; exit 0')
  monkeypatch.setattr(runtime, "_identity", {})
  monkeypatch.setattr(runtime, "_versions", {})
  assert runtime._key(src, tiers.TCC_FLAGS, cc) != first and log.read_text() == "x\n"
  assert runtime._version_line(cc) == "fakecc 2.0.1" and log.read_text() == "x\nx\n"


def test_gcc_flags_follow_the_version_line(cache, tmp_path, monkeypatch):
  """GCC_O3_FLAGS join an -O3 build by a compiler whose version line reads as GCC's, GCC_OPENMP_FLAGS its OpenMP
  builds, and no other build."""
  monkeypatch.setattr(runtime, "_versions", {})
  gcc = _fake_cc(tmp_path, 'exec "$REAL" "$@"', version='echo "gcc (Debian 12.2.0-14) 12.2.0"; exit 0')
  assert runtime._tuned(("-O3",), gcc) == ("-O3", *runtime.GCC_O3_FLAGS)
  assert runtime._tuned(("-O1",), gcc) == ("-O1",)
  assert runtime._tuned(("-O1", "-fopenmp"), gcc) == ("-O1", "-fopenmp", *runtime.GCC_OPENMP_FLAGS)
  assert runtime._tuned(("-O3", "-fopenmp"), gcc) == ("-O3", "-fopenmp", *runtime.GCC_OPENMP_FLAGS,
                                                       *runtime.GCC_O3_FLAGS)
  runtime._versions[gcc] = "Debian clang version 14.0.6"
  assert runtime._tuned(("-O3",), gcc) == ("-O3",)
  assert runtime._tuned(("-O1", "-fopenmp"), gcc) == ("-O1", "-fopenmp")


def _headers_anew(monkeypatch):
  """runtime's header text forgotten, as in a new process; a function that waits for the background thread making
  it."""
  monkeypatch.setattr(tccmod, "_headers", {})
  monkeypatch.setattr(tccmod, "_preprocessing", {})
  monkeypatch.setattr(tccmod, "_wanted", set())
  def wait():
    tccmod.start_headers()           # (realize's call once a program's first run is done)
    for t in list(tccmod._preprocessing.values()): t.join(60)
  return wait


@pytest.mark.skipif(tiers.fast_compiler() is None, reason="tcc is not installed")
def test_tcc_builds_start_with_the_headers_preprocessed_once(cache, tmp_path, monkeypatch):
  """tcc.preprocessed_headers: a process's first tcc build reads the headers itself and starts a thread that
  preprocesses math.h, stdint.h and fenv.h (their macros too, not tcc's predefined ones, which would warn as
  redefined); later builds start with that text and a line marker of kernel.c. tcc is asked for it once per cache
  (a new process reads it from the disk, unless a header changed); the kernels warn of nothing and compute the
  values."""
  tcc = tiers.fast_compiler()
  calls, real = [], spawn.run          # (the builds' compiler runs and the headers' tcc -E)
  monkeypatch.setattr(spawn, "run", lambda cmd, *a: calls.append(cmd) or real(cmd, *a))
  wait = _headers_anew(monkeypatch)
  # (isgreaterequal's expansion pastes tokens: tcc prints a `##` in -dD's output as its token number)
  src = ("#include <math.h>\n#include <stdint.h>\n"
         "void k(float* x) { x[0] = isless(x[0], 0.0f) && isgreaterequal(x[1], 2.0f) ? INFINITY : NAN; }\n")
  variants = iter([src.replace("INFINITY", v) for v in ("INFINITY", "-INFINITY", "2 * INFINITY", "3 * INFINITY")])
  build = lambda: compile_c(next(variants), tiers.TCC_FLAGS, tcc, {"k": ("void*",)})["k"]     # noqa: E731
  masks, preprocess = [], tccmod._preprocess
  monkeypatch.setattr(tccmod, "_preprocess", lambda *a: masks.append(signal.pthread_sigmask(signal.SIG_BLOCK, []))
                      or preprocess(*a))
  k = build()
  wait()
  assert len(masks) == 1 and signal.SIGINT in masks[0]        # (Ctrl-C goes to the main thread, not this one)
  x = np.array([-1.0, 2.0], np.float32)
  runtime.call(k, [x])
  assert x[0] == np.inf
  text = tccmod._headers[tcc]
  assert "#define _MATH_H" in text and "#define INFINITY" in text and "#define __TINYC__" not in text
  assert "#define __CONCAT(x,y) x ## y" in text and "MT_PASTE_PROBE" not in text
  assert text.endswith('# 1 "kernel.c"\n')
  build()
  _headers_anew(monkeypatch)                        # (a new process: the text is read from the disk cache)
  build()
  assert tccmod._headers[tcc] == text and not tccmod._preprocessing
  assert [c[1:3] for c in calls].count(["-E", "-dD"]) == 1 and len([c for c in calls if "-E" not in c]) == 3
  # a header whose stamp changed (an upgrade) makes the text anew
  (entry,) = _files(tmp_path / "cache", ".h")
  with open(entry, "rb") as f: n, first, rest = f.read().split(b"\n", 2)
  os.chmod(entry, 0o600)
  with open(entry, "wb") as f: f.write(b"\n".join([n, first.split(b"\t")[0] + b"\tan older stamp", rest]))
  wait = _headers_anew(monkeypatch)
  build()
  wait()
  assert [c[1:3] for c in calls].count(["-E", "-dD"]) == 2 and tccmod._headers[tcc] == text
  # an entry cut short is not used (it would break every build): made anew
  with open(entry, "rb") as f: data = f.read()
  with open(entry, "wb") as f: f.write(data[:len(data) // 2])
  wait = _headers_anew(monkeypatch)
  assert tccmod.preprocessed_headers(tcc) == ""
  wait()
  assert [c[1:3] for c in calls].count(["-E", "-dD"]) == 3 and tccmod._headers[tcc] == text
  (tmp_path / "kernel.c").write_text(text + src)
  p = subprocess.run([tcc, *tiers.TCC_FLAGS, "-o", "k.so", "kernel.c"], cwd=tmp_path, capture_output=True, text=True)
  assert p.returncode == 0 and not p.stderr.strip(), p.stderr


def test_another_compiler_reads_the_headers_itself(cache, monkeypatch):
  """Only tcc gets the preprocessed headers: gcc's builds start with the source as it is."""
  wait = _headers_anew(monkeypatch)
  compile_c("#include <math.h>\nvoid k(double* x) { x[0] = sqrt(x[0]); }\n", ("-O1", "-fPIC", "-shared"),
            runtime.compiler(), {"k": ("void*",)})
  wait()
  assert tccmod._headers.get(runtime.compiler()) == ""


@pytest.mark.skipif(tiers.fast_compiler() is None, reason="tcc is not installed")
def test_thepreprocessed_headers_expand_every_macro_as_the_headers_do(cache, tmp_path, monkeypatch):
  """The macros kernels use (classification, quiet comparisons, infinities and NaN, floating-point exception flags,
  integer limits) expand to the same tokens after the preprocessed text as after the headers themselves."""
  tcc = tiers.fast_compiler()
  text = tccmod._preprocess(tcc, str(tmp_path))
  body = ("double probe(double x, float y) { return isnan(x) + isinf(y) + isfinite(x) + signbit(y) + isnormal(x)"
          " + isgreater(x, y) + isgreaterequal(x, y) + isless(x, y) + islessequal(x, y) + islessgreater(x, y)"
          " + isunordered(x, y) + fpclassify(x) + INFINITY + NAN + HUGE_VAL + HUGE_VALF + FE_INVALID + FE_DIVBYZERO"
          " + FE_OVERFLOW + FE_UNDERFLOW + FE_ALL_EXCEPT + INT64_MIN + INT64_MAX + INT32_MIN + INT32_MAX"
          " + UINT64_MAX + UINT32_MAX + INT8_MIN + UINT8_MAX + INT16_MAX; }\n")
  includes = "".join(f"#include <{h}>\n" for h in tccmod.INLINED_HEADERS)
  expanded = []
  for name, src in (("a.c", includes + body), ("b.c", text + includes + body)):
    (tmp_path / name).write_text(src)
    out = subprocess.run([tcc, "-E", name], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    expanded.append(out[out.index("double probe("):].split())
  assert expanded[0] == expanded[1]


_CONVERSIONS = ("#include <math.h>\n#include <stdint.h>\n"
                "void k(double* x, uint64_t* u) { u[1] = (uint64_t)x[0]; x[1] = (double)u[0] + exp(x[2]) + "
                "fmod(x[3], 2.0); }\n")


def _conversions_run(k) -> None:
  """k of _CONVERSIONS gives C's values: unsigned 64-bit conversions (libtcc1.a's helpers), exp and fmod (libm)."""
  x, u = np.array([2.0 ** 63 + 4096, 0.0, 1.0, 5.5]), np.array([2 ** 64 - 2048, 0], np.uint64)
  runtime.call(k, [x, u])
  assert int(u[1]) == 2 ** 63 + 4096
  assert x[1] == float(2 ** 64 - 2048) + np.exp(1.0) + 1.5


@pytest.mark.skipif(tiers.fast_compiler() is None, reason="tcc is not installed")
def test_tcc_links_against_libtcc1_alone(cache, monkeypatch):
  """linking.link: a tcc build is linked with -nostdlib and tcc's libtcc1.a, and binds libc and libm where it is
  loaded (the interpreter's global scope): its unsigned conversions and libm calls compute C's values."""
  tcc = tiers.fast_compiler()
  monkeypatch.setattr(linking, "_usual", set())
  assert linking.link(tcc, tiers.TCC_FLAGS)[0] == "-nostdlib" and linking.link(tcc, ())[1].endswith("libtcc1.a")
  calls, real = [], runtime._run_compiler
  monkeypatch.setattr(runtime, "_run_compiler", lambda cmd, cwd: calls.append(cmd) or real(cmd, cwd))
  _conversions_run(compile_c(_CONVERSIONS, tiers.TCC_FLAGS, tcc, {"k": ("void*", "void*")})["k"])
  (build,) = [c for c in calls if "-E" not in c]
  assert "-nostdlib" in build and "-lm" not in build


def _is_gcc(cc: str) -> bool:
  name = os.path.basename(os.path.realpath(diskcache.which(cc) or cc))
  return "gcc" in name and "clang" not in name


@pytest.mark.skipif(not _is_gcc(runtime.compiler()), reason="the C compiler is not gcc")
@pytest.mark.parametrize("flags", [tiers.TIER0_FLAGS, runtime.FLAGS], ids=["tier 0", "tier 1"])
def test_gcc_links_libm_libgomp_and_libgcc_alone(cache, monkeypatch, flags):
  """linking.link: a gcc build is linked with -nostdlib, libm, libgomp (OpenMP builds) and libgcc.a: a parallel loop
  of expf (libmvec's vector version at -O3), complex products and quotients (libgcc's __mulsc3 and __divsc3) and
  unsigned conversions compute C's values, on every thread."""
  cc = runtime.compiler()
  monkeypatch.setattr(linking, "_usual", set())
  assert linking.link(cc, flags) == ("-nostdlib", "-lm", "-lgomp", "-lgcc")
  assert linking.link(cc, ("-O1",)) == ("-nostdlib", "-lm", "-lgcc")
  calls, real = [], runtime._run_compiler
  monkeypatch.setattr(runtime, "_run_compiler", lambda cmd, cwd: calls.append(cmd) or real(cmd, cwd))
  src = _CONVERSIONS + textwrap.dedent("""\
    #include <complex.h>
    void p(float* x, int64_t n) {
    #pragma omp parallel for
      for (int64_t i = 0; i < n; i++) x[i] = expf(x[i]);
    }
    void z(float _Complex* a, float _Complex* b) { a[2] = a[0] * b[0]; a[3] = a[1] / b[1]; }
    """)
  ks = compile_c(src, flags, cc, {"k": ("void*", "void*"), "p": ("void*", "int64_t"), "z": ("void*", "void*")})
  _conversions_run(ks["k"])
  y = np.linspace(-3, 3, 10_000, dtype=np.float32)
  ks["p"].fn(runtime.native().from_buffer(y), len(y))
  np.testing.assert_allclose(y, np.exp(np.linspace(-3, 3, 10_000, dtype=np.float32)), rtol=4e-7)
  a = np.array([1 + 2j, 3 - 1j, 0, 0], np.complex64)
  b = np.array([2 - 1j, 1 + 1j], np.complex64)
  runtime.call(ks["z"], [a, b])
  np.testing.assert_allclose(a[2:], [a[0] * b[0], a[1] / b[1]], rtol=1e-6)
  (build,) = [c for c in calls if "-E" not in c]
  assert "-nostdlib" in build and "-lgcc" in build


@pytest.mark.skipif(tiers.fast_compiler() is None, reason="tcc is not installed")
def test_a_library_that_does_not_load_is_linked_as_usual(cache, monkeypatch):
  """A library linked with linking.link that fails to load (an interpreter without libm in its global scope: made
  here by refusing the first load) is built again with the usual link, and so is every later build of its
  compiler."""
  tcc = tiers.fast_compiler()
  monkeypatch.setattr(linking, "_usual", set())
  calls, real = [], runtime._run_compiler
  monkeypatch.setattr(runtime, "_run_compiler", lambda cmd, cwd: calls.append(cmd) or real(cmd, cwd))
  opened = runtime._open
  refused = []
  def refuse_first(path, key, flags):
    if not refused:
      refused.append(path)
      return None
    return opened(path, key, flags)
  monkeypatch.setattr(runtime, "_open", refuse_first)
  _conversions_run(compile_c(_CONVERSIONS, tiers.TCC_FLAGS, tcc, {"k": ("void*", "void*")})["k"])
  builds = [c for c in calls if "-E" not in c]
  assert len(builds) == 2 and "-nostdlib" in builds[0] and builds[1][-1] == "-lm"
  assert linking.link(tcc, tiers.TCC_FLAGS) == linking.USUAL
  compile_c(_CONVERSIONS.replace("2.0)", "3.0)"), tiers.TCC_FLAGS, tcc, {"k": ("void*", "void*")})
  builds = [c for c in calls if "-E" not in c]
  assert len(builds) == 3 and builds[2][-1] == "-lm"


def test_a_compile_error_is_reported_once_linked_as_usual(cache, monkeypatch):
  """A source that does not compile fails with its error after the usual link's try too (the faster link is not
  what failed), and the compiler keeps its faster link."""
  cc = runtime.compiler()
  monkeypatch.setattr(linking, "_usual", set())
  with pytest.raises(CompileError, match="failed"):
    compile_c("void k(float* x) { x[0] = undeclared; }\n", tiers.TIER0_FLAGS, cc, {"k": ("void*",)})
  assert cc not in linking._usual
