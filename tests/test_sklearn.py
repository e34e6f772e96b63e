"""scikit-learn as a client: `sklearn.utils.estimator_checks.check_array_api_input` with check_values=True (every
fitted attribute and method output against the same estimator fitted on NumPy input) for each estimator whose
default instance scikit-learn tags as supporting the Array API, on Tensors.

PCA's default instance keeps all 10 components of scikit-learn's check data (make_classification, rank 8): the
last two span a degenerate eigenspace, whose basis is arbitrary for any input that differs in the last bit, so
PCA is checked with the instances scikit-learn's own array API test of PCA uses (n_components=2 and 0.1).
LabelEncoder is a target transformer (`fit(y)`), which the X/y check cannot call.

The checks run in a subprocess: scikit-learn's array API dispatch needs SCIPY_ARRAY_API=1 set before SciPy is
imported, which other tests of this process may have done without it.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = r"""
import json, warnings
warnings.simplefilter("ignore")
from sklearn.decomposition import PCA
from sklearn.utils import get_tags
from sklearn.utils.discovery import all_estimators
from sklearn.utils.estimator_checks import check_array_api_input
cases = []
def supported(est):
  try: return get_tags(est).array_api_support
  except AttributeError: return False         # a meta-estimator without its estimator has no tags
for name, E in all_estimators():
  try: est = E()
  except TypeError: continue                  # needs constructor arguments
  if name not in ("PCA", "LabelEncoder") and supported(est): cases.append((name, est))
cases += [("PCA", PCA(n_components=2, svd_solver="full")), ("PCA", PCA(n_components=2, svd_solver="full", whiten=True)),
          ("PCA", PCA(n_components=0.1, svd_solver="full", whiten=True)),
          ("PCA", PCA(n_components=2, svd_solver="covariance_eigh", whiten=True))]
out = {}
for name, est in cases:
  shown = ("n_components", "svd_solver", "whiten")
  key = f"{name}({', '.join(f'{k}={v!r}' for k, v in est.get_params().items() if k in shown)})"
  try:
    check_array_api_input(name, est, "minitensor", dtype_name="float64", check_values=True)
    out[key] = "ok"
  except Exception as e:
    out[key] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


def test_check_array_api_input_passes_for_the_array_api_estimators():
  env = {**os.environ, "SCIPY_ARRAY_API": "1", "PYTHONPATH": str(ROOT)}
  r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr[-3000:]
  results = json.loads(r.stdout.strip().splitlines()[-1])
  names = {k.split("(")[0] for k in results}
  assert {"StandardScaler", "MinMaxScaler", "LinearDiscriminantAnalysis", "Ridge", "PCA"} <= names, names
  failed = {k: v for k, v in results.items() if v != "ok"}
  assert not failed, failed
