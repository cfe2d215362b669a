#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
import json
from decimal import ROUND_HALF_UP, Decimal

calibration = json.load(open("/app/sensors.json"))
with open("/app/readings.csv") as src, open("/app/calibrated.csv", "w", newline="") as dst:
    out = csv.writer(dst, lineterminator="\n")
    out.writerow(["sensor", "timestamp", "value"])
    for row in csv.DictReader(src):
        cal = calibration.get(row["sensor"])
        if cal is None:
            continue
        value = (Decimal(row["raw"]) + Decimal(str(cal["offset"]))) * Decimal(str(cal["scale"]))
        out.writerow([row["sensor"], row["timestamp"], value.quantize(Decimal("0.01"), ROUND_HALF_UP)])
PY
