#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from decimal import ROUND_HALF_UP, Decimal

with open("/app/menu.csv", encoding="utf-8") as src, open("/app/menu_new.csv", "w", newline="", encoding="utf-8") as dst:
    out = csv.writer(dst, lineterminator="\n")
    rows = csv.reader(src)
    out.writerow(next(rows))
    for item, price in rows:
        out.writerow([item, (Decimal(price) * Decimal("1.10")).quantize(Decimal("0.01"), ROUND_HALF_UP)])
PY
