#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv, sqlite3
counts = {}
with open("/app/staff.csv", newline="") as f:
    for r in csv.DictReader(f):
        counts.setdefault(r["dept"], 0)
        counts[r["dept"]] += r["contract"] == "full"
con = sqlite3.connect("/app/hr.db")
con.execute("CREATE TABLE headcount(dept TEXT PRIMARY KEY, headcount INTEGER)")
con.executemany("INSERT INTO headcount VALUES (?, ?)", sorted(counts.items()))
con.commit()
PY
