"""What the disk-cache tests share: the repository root (for child processes) and the files under a cache."""
import os
import minitensor as mt

REPO = os.path.dirname(os.path.dirname(os.path.abspath(mt.__file__)))
CACHE_ENV = ("MINITENSOR_CACHE_DIR", "MINITENSOR_NOCACHE", "MINITENSOR_CACHE_BYTES", "MINITENSOR_CC")


def files(d, suffix: str = "") -> list[str]:
  """Every file under d whose name ends with suffix, sorted."""
  return sorted(os.path.join(dp, f) for dp, _, fs in os.walk(d) for f in fs if f.endswith(suffix))
