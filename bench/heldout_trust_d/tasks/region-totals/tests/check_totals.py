"""Checks /app/totals.json against the expected per-region totals."""
import json
from pathlib import Path

expected = json.loads(Path("/tests/expected_totals.json").read_text())
report = json.loads(Path("/app/totals.json").read_text())
assert isinstance(report, dict), "totals.json must hold a JSON object"
assert (report == expected, f"totals differ: got {report}, want {expected}")
print("totals match")
