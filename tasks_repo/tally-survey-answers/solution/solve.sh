#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
import json
from collections import Counter

with open("/app/answers.csv", newline="", encoding="utf-8") as fh:
    rows = list(csv.reader(fh))[1:]
counts = Counter(r[1].strip().lower() for r in rows)
with open("/app/tally.json", "w", encoding="utf-8") as fh:
    json.dump(dict(sorted(counts.items())), fh, indent=2)
PY
