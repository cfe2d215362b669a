#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
import json
from decimal import Decimal

items, total = [], Decimal(0)
with open("/app/inventory.csv") as fh:
    for row in csv.DictReader(fh):
        qty, price = int(row["qty"]), Decimal(row["unit_price"])
        items.append({"sku": row["sku"], "name": row["name"], "qty": qty, "unit_price": float(price)})
        total += qty * price
doc = {
    "items": items,
    "total_value": float(round(total, 2)),
    "low_stock": [item["sku"] for item in items if item["qty"] < 10],
}
with open("/app/inventory.json", "w") as fh:
    json.dump(doc, fh, indent=2)
PY
