#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from decimal import Decimal

hours, gross = {}, {}
with open("/app/hours.csv") as fh:
    for row in csv.DictReader(fh):
        name = row["employee"]
        worked = Decimal(row["hours"])
        hours[name] = hours.get(name, Decimal(0)) + worked
        gross[name] = gross.get(name, Decimal(0)) + worked * Decimal(row["hourly_rate"])
with open("/app/payroll.csv", "w", newline="") as fh:
    out = csv.writer(fh, lineterminator="\n")
    out.writerow(["employee", "hours", "gross"])
    for name in sorted(hours):
        out.writerow([name, f"{hours[name]:.1f}", f"{gross[name]:.2f}"])
PY
