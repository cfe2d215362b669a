#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
import json
from decimal import Decimal

totals, counts = {}, {}
with open("/app/expenses.csv") as fh:
    for row in csv.DictReader(fh):
        cat = row["category"]
        totals[cat] = totals.get(cat, Decimal(0)) + Decimal(row["amount"])
        counts[cat] = counts.get(cat, 0) + 1
summary = {
    "by_category": {c: {"count": counts[c], "total": float(round(totals[c], 2))} for c in sorted(totals)},
    "grand_total": float(round(sum(totals.values()), 2)),
    "largest_category": max(totals, key=totals.get),
}
with open("/app/summary.json", "w") as fh:
    json.dump(summary, fh, indent=2)
PY
