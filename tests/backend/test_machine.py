"""The machine model: ISA and caches read from cpuinfo text and a sysfs directory, safe fallbacks when either is
missing, and the compiler flags and Opts that follow from it."""
import os
import numpy as np
import pytest
import minitensor as mt
from minitensor.backend import machine as mm
from minitensor.backend.runtime import FLAGS

AVX512 = ("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw\n\n"
          "processor\t: 1\n")
AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx fma avx2\n"
ARM = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes\n"


def _sysfs(tmp_path, entries):
  for k, (level, kind, size) in enumerate(entries):
    d = tmp_path / f"index{k}"
    d.mkdir()
    (d / "level").write_text(f"{level}\n"); (d / "type").write_text(f"{kind}\n"); (d / "size").write_text(f"{size}\n")
  return str(tmp_path)


def test_avx512_and_caches(tmp_path):
  root = _sysfs(tmp_path, [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
                           (3, "Unified", "105M")])
  m = mm.detect(AVX512, root, arch="x86_64")
  assert (m.vector_bytes, m.registers, m.fma, m.x86) == (64, 32, True, True)
  assert (m.l1, m.l2, m.l3) == (48 << 10, 2 << 20, 105 << 20)
  assert m.lanes(4) == 16 and m.lanes(8) == 8 and m.lanes(1) == 64
  assert m.flags() == ("-mprefer-vector-width=512",)


def test_avx2():
  m = mm.detect(AVX2, "/nonexistent", arch="x86_64")
  assert (m.vector_bytes, m.registers, m.fma) == (32, 16, True)
  assert m.flags() == ("-mprefer-vector-width=256",)


def test_arm_has_no_x86_flags():
  m = mm.detect(ARM, "/nonexistent", arch="aarch64")
  assert (m.vector_bytes, m.registers, m.fma, m.flags()) == (16, 32, True, ())


@pytest.mark.parametrize("cpuinfo", ["", "garbage without colons\n", "flags\t:\n"])
def test_falls_back_without_information(cpuinfo, tmp_path):
  broken = tmp_path / "index0"
  broken.mkdir()
  (broken / "level").write_text("one\n")       # unreadable entries are skipped, the rest default
  m = mm.detect(cpuinfo, str(tmp_path), arch="x86_64")
  assert (m.vector_bytes, m.registers, m.fma) == (16, 16, False)
  assert (m.l1, m.l2, m.l3) == mm.DEFAULT_CACHES and m.cores >= 1


def test_this_machine_is_consistent():
  m = mm.machine()
  assert m.vector_bytes in (16, 32, 64) and m.registers in (16, 32) and m.cores >= 1
  assert m.l1 <= m.l2 <= m.l3
  assert set(m.flags()) <= set(FLAGS)
  if os.path.exists("/proc/cpuinfo"):
    assert (m.vector_bytes == 64) == ("avx512f" in open("/proc/cpuinfo").read())


def test_every_machine_model_gives_numpy_results(monkeypatch):
  """opt.py's factors follow the model (lanes, register tile, column-sum width); any model gives the same values."""
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((96, 40), dtype=np.float32), rng.standard_normal((40, 72), dtype=np.float32)
  x = rng.standard_normal((384, 200), dtype=np.float32)
  for m in (mm.Machine(), mm.Machine(32, 16, True), mm.Machine(64, 32, True)):
    monkeypatch.setattr(mm, "_machine", [m])
    np.testing.assert_allclose(np.asarray(mt.asarray(a) @ mt.asarray(b)), a @ b, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(mt.asarray(x).sum(0)), x.sum(0), rtol=1e-5, atol=1e-4)
