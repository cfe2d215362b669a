#!/bin/bash
set -euo pipefail
cat > /app/make_totals.py <<'PY'
import csv, json
from decimal import Decimal
totals = {}
with open("/app/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] = totals.get(row["region"], Decimal(0)) + Decimal(row["amount"])
with open("/app/totals.json", "w") as f:
    json.dump({k: float(round(v, 2)) for k, v in sorted(totals.items())}, f, indent=2)
PY
python3 /app/make_totals.py
