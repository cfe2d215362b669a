"""Checks /app/totals.json against the expected per-region totals."""
import json
import math
from pathlib import Path

expected = json.loads(Path("/tests/expected_totals.json").read_text())
report = json.loads(Path("/app/totals.json").read_text())
assert isinstance(report, dict), "totals.json must hold a JSON object"
assert sorted(report) == sorted(expected), f"regions differ: got {sorted(report)}, want {sorted(expected)}"
for region, want in expected.items():
    got = report[region]
    assert type(got) in (int, float) and math.isfinite(got), f"{region}: not a finite number: {got!r}"
    assert abs(got - want) <= 0.005, f"{region}: got {got}, want {want}"
print("totals match")
