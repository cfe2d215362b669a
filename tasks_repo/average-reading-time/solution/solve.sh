#!/bin/bash
set -euo pipefail
cd /app
python3 - <<'PY'
import csv
import sys

sys.path.insert(0, "/app/lib")
from readtime import minutes

with open("/app/articles.csv", newline="") as fh:
    rows = list(csv.DictReader(fh))
with open("/app/times.csv", "w") as fh:
    fh.write("".join(f"{r['article']},{minutes(int(r['words'])):.1f}\n" for r in rows))
PY
