#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from decimal import ROUND_HALF_UP, Decimal

with open("/app/readings.csv") as src, open("/app/readings_c.csv", "w", newline="") as dst:
    out = csv.writer(dst, lineterminator="\n")
    out.writerow(["station", "timestamp", "temp_c"])
    for row in csv.DictReader(src):
        celsius = (Decimal(row["temp_f"]) - 32) * 5 / 9
        out.writerow([row["station"], row["timestamp"], celsius.quantize(Decimal("0.1"), ROUND_HALF_UP)])
PY
