"""hours.json must equal the expected totals (numbers compared with a small tolerance)."""

import json
import math
import sys
from pathlib import Path

expected = json.loads(Path("/tests/expected_hours.json").read_text())
path = Path("/app/hours.json")
if path.is_symlink() or not path.is_file():
    sys.exit("missing /app/hours.json")
try:
    got = json.loads(path.read_text())
except (json.JSONDecodeError, UnicodeDecodeError) as e:
    sys.exit(f"hours.json is not JSON: {e}")


def same(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, abs_tol=1e-6)
    return a == b


if not same(got, expected):
    sys.exit(f"expected {expected}, got {got}")
print("ok")
