#!/bin/bash
cat > /app/export.py <<'PY'
import csv
import json
import sys

rows = {}
with open(sys.argv[1]) as f:
    for line in f:
        if not line.strip():
            continue
        rec = json.loads(line)
        email = str(rec.get("email", "")).strip().lower()
        if "@" not in email:
            continue
        name = " ".join(w.capitalize() for w in str(rec.get("name", "")).split())
        rows[email] = [email, name, str(rec.get("country") or "").upper(), "yes" if rec.get("opted_in") is True else "no"]
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["email", "name", "country", "opted_in"])
    w.writerows(rows.values())
PY
