#!/bin/bash
set -euo pipefail
mkdir -p /app/out
python3 - <<'PY'
import csv, json
with open("/app/order/items.csv", newline="") as f:
    sub = sum(int(r["qty"]) * int(r["unit_price_cents"]) for r in csv.DictReader(f))
tax = (sub * 8 + 50) // 100
json.dump({"subtotal_cents": sub, "tax_cents": tax, "total_cents": sub + tax}, open("/app/out/invoice.json", "w"))
PY
