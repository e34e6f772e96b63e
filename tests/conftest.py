import os
import pytest
from hypothesis import HealthCheck, settings

# `ci`: derandomized and bounded, for the CI time budget; `dev`: ten times the examples, for local runs.
settings.register_profile("ci", derandomize=True, max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=600, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _settled():
  """The tier-1 compiles and specializations an earlier test started in the background are finished before this
  test runs, so the compile counters it reads (runtime.stats) move only by what it does."""
  from minitensor.backend import realize
  realize.settle(120)
