#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from decimal import Decimal
with open("/app/sales.csv") as fh:
    total = sum(Decimal(r["amount"]) for r in csv.DictReader(fh) if r["region"] == "north")
open("/app/answer.txt", "w").write(f"{total:.2f}\n")
PY
