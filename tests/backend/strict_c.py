"""Shared by the backend tests: generated C must compile with warnings as errors."""
import os
import shutil
import subprocess
import tempfile

CC = shutil.which("cc") or shutil.which("gcc")


def compile_strict(src: str) -> None:
  """The source compiles with warnings as errors (an unused variable, a bad conversion, a missing return...)."""
  with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "k.c")
    with open(path, "w") as f: f.write(src)
    p = subprocess.run([CC, "-Wall", "-Werror", "-fwrapv", "-std=gnu99", "-c", path, "-o", path[:-2] + ".o"],
                       capture_output=True, text=True)
    assert p.returncode == 0, f"{CC} -Wall -Werror rejected the kernel:\n{p.stderr}\n{src[src.index('void '):]}"
