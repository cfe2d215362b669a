#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv

people = {}
with open("/app/subscribers.csv", encoding="utf-8") as fh:
    reader = csv.DictReader(fh)
    fields = reader.fieldnames
    for row in reader:
        row["email"] = row["email"].strip().lower()
        kept = people.get(row["email"])
        if kept is None or row["signed_up"] < kept["signed_up"]:
            people[row["email"]] = row
with open("/app/subscribers_clean.csv", "w", newline="", encoding="utf-8") as fh:
    out = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
    out.writeheader()
    for email in sorted(people):
        out.writerow(people[email])
PY
