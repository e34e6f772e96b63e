"""W1-W9 of DESIGN.md side by side with NumPy: see minitensor/bench.py.

    python benchmarks/run.py [--quick] [--only W2,W7] [--chart ratios.png]
"""
import sys
from minitensor.bench import main

if __name__ == "__main__":
  sys.exit(main())
