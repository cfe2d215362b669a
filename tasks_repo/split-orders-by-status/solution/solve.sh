#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from pathlib import Path

out = Path("/app/by_status")
out.mkdir(exist_ok=True)
groups = {"shipped": [], "pending": [], "cancelled": []}
with open("/app/orders.csv") as fh:
    for row in csv.DictReader(fh):
        groups[row["status"]].append([row["order_id"], row["customer"], row["total"]])
for status, rows in groups.items():
    with (out / f"{status}.csv").open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["order_id", "customer", "total"])
        writer.writerows(rows)
PY
