#!/bin/bash
set -euo pipefail
mkdir -p /app/out
python3 - <<'PY'
import csv
seen = {}
with open("/app/raw/contacts.csv", newline="") as f:
    for row in csv.DictReader(f):
        seen.setdefault(row["email"].strip().lower(), row["name"].strip())
with open("/app/out/contacts.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["email", "name"])
    for email in sorted(seen):
        w.writerow([email, seen[email]])
PY
