"""Prints a reward.json object scoring each field of /app/report.json."""

import json
from pathlib import Path

EXPECTED = {"by_status": {"200": 93, "304": 39, "404": 32, "500": 36}, "top_path": "/index.html", "total": 200}

scores = {key: 0 for key in EXPECTED}
try:
    report = json.loads(Path("/app/report.json").read_text())
except (OSError, json.JSONDecodeError):
    report = {}
if isinstance(report, dict):
    for key, want in EXPECTED.items():
        scores[key] = int(report.get(key) == want)
print(json.dumps(scores))
