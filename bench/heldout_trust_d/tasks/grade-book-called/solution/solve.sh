#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv, json
out = {}
with open("/app/scores.csv", newline="") as f:
    for r in csv.DictReader(f):
        s = round(0.25 * int(r["hw1"]) + 0.25 * int(r["hw2"]) + 0.5 * int(r["exam"]), 1)
        g = "A" if s >= 90 else "B" if s >= 80 else "C" if s >= 70 else "D" if s >= 60 else "F"
        out[r["student"]] = {"score": s, "grade": g}
json.dump(out, open("/app/grades.json", "w"), indent=2)
PY
