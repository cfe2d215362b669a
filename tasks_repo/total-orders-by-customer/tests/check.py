"""totals.json must hold each customer's total, as the grading copy does."""

import json
import sys
from pathlib import Path

out = Path("/app/totals.json")
if not out.is_file():
    sys.exit("missing /app/totals.json")
expected = json.loads(Path("/srv/grading/totals.json").read_text())
got = json.loads(out.read_text())
if got != expected:
    sys.exit(f"expected {expected}, got {got}")
print("ok")
