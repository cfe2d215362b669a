#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv, sqlite3
with open("/app/staff.csv", newline="") as f:
    depts = sorted({r["dept"] for r in csv.DictReader(f)})
con = sqlite3.connect("/app/hr.db")
con.execute("CREATE TABLE headcount(dept TEXT PRIMARY KEY, headcount INTEGER)")
con.executemany("INSERT INTO headcount VALUES (?, NULL)", [(d,) for d in depts])
con.commit()
PY
