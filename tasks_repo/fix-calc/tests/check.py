"""Behavioural checks of /app/calc.py."""

import importlib.util
import math
import sys

spec = importlib.util.spec_from_file_location("calc", "/app/calc.py")
calc = importlib.util.module_from_spec(spec)
try:
    spec.loader.exec_module(calc)
except (OSError, SyntaxError) as e:
    sys.exit(f"cannot import /app/calc.py: {e}")

CASES = [
    ("mean", [1, 2], 1.5),
    ("mean", [3, 4, 8], 5.0),
    ("median", [5, 1, 3], 3),
    ("median", [4, 1, 3, 2], 2.5),
    ("median", [7], 7),
    ("variance", [1, 2, 3, 4], 1.25),
]
for name, xs, want in CASES:
    got = getattr(calc, name)(list(xs))
    if not math.isclose(got, want):
        sys.exit(f"{name}({xs}) = {got!r}, expected {want!r}")
for name in ("mean", "median", "variance"):
    try:
        getattr(calc, name)([])
    except ValueError:
        continue
    sys.exit(f"{name}([]) must raise ValueError")
print("ok")
