#!/bin/bash
python3 - <<'PY'
import csv, json
rows = []
with open("/app/people.csv", newline="") as fh:
    for r in csv.DictReader(fh):
        rows.append({"name": r["name"], "age": int(r["age"]), "email": r["email"] or None,
                     "active": r["active"] == "yes"})
json.dump(rows, open("/app/people.json", "w"), indent=1)
PY
