"""The training examples run at their tiny size and their loss decreases; the CNN step's backward does no more
work than the kernelizer's accounting allows (loop iterations, not times)."""
import os
import re
import subprocess
import sys
import numpy as np
import pytest
import minitensor as mt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("example", ["mlp.py", "cnn.py"])
def test_example_trains_at_tiny_size(example):
  env = dict(os.environ, PYTHONPATH=ROOT)
  r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", example), "--tiny"], cwd=ROOT, env=env,
                     capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr
  losses = [float(v) for v in re.findall(r"^epoch \d+: loss ([0-9.]+)$", r.stdout, re.M)]
  assert len(losses) >= 4 and all(np.isfinite(losses)), r.stdout
  assert losses[-1] < 0.95 * losses[0], r.stdout


def test_cnn_backward_work_is_at_most_three_times_the_forward():
  sys.path.insert(0, os.path.join(ROOT, "examples"))
  try:
    import cnn
  finally: sys.path.pop(0)
  x, y = cnn.make_data(8, 8, 0)
  loss, grads = mt.value_and_grad(cnn.loss_fn)(cnn.init_params(8, 4, 0), x, y)
  fwd, whole = mt.explain(loss).total_iterations, mt.explain(loss, *grads).total_iterations
  assert 0 < whole - fwd <= 3 * fwd
