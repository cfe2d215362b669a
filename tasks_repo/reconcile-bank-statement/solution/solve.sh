#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from collections import Counter
from decimal import Decimal

with open("/app/ledger.csv") as fh:
    available = Counter((row["date"], Decimal(row["amount"])) for row in csv.DictReader(fh))
with open("/app/statement.csv") as src, open("/app/unmatched.csv", "w", newline="") as dst:
    reader = csv.DictReader(src)
    out = csv.DictWriter(dst, fieldnames=reader.fieldnames, lineterminator="\n")
    out.writeheader()
    for row in reader:
        key = (row["date"], Decimal(row["amount"]))
        if available[key] > 0:
            available[key] -= 1
        else:
            out.writerow(row)
PY
