"""minitensor: a NumPy-like lazy tensor library that compiles every result with its own small compiler."""
__version__ = "0.1.0"
