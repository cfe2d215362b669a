#!/bin/bash
set -euo pipefail
mkdir -p /app/out
python3 - <<'PY'
import csv
files = {}
with open("/app/orders.csv", newline="") as f:
    for r in csv.DictReader(f):
        out = files.get(r["region"])
        if out is None:
            out = files[r["region"]] = open(f"/app/out/{r['region']}.csv", "w")
            out.write("id,units\n")
        out.write(f"{r['id']},{r['units']}\n")
for out in files.values():
    out.close()
PY
