"""The compiler: UOp IR -> rangeify -> simplify -> linearize -> C -> cc + cffi."""
