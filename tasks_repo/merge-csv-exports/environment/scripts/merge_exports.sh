#!/bin/bash
# Draft of the nightly CRM merge (run by hand until the cron job is set up).
set -euo pipefail
python3 - <<'PY'
import csv
from pathlib import Path

latest = {}
for export in sorted(Path("/app/exports").glob("*.csv")):
    with export.open() as fh:
        for row in csv.DictReader(fh):
            current = latest.get(row["id"])
            if current is None or row["updated_at"] > current["updated_at"]:
                latest[row["id"]] = row

with open("/app/merged.csv", "w", newline="") as fh:
    out = csv.DictWriter(fh, fieldnames=["id", "name", "email", "updated_at"], lineterminator="\n")
    out.writeheader()
    for key in sorted(latest, key=int):
        out.writerow(latest[key])
PY
