#!/bin/bash
cat > /app/totals.py <<'PY'
import csv
from decimal import ROUND_HALF_UP, Decimal

totals = {}
with open("/app/data/invoices.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        amount = int(row["qty"]) * Decimal(row["unit_price"]) * (1 - Decimal(row["discount_pct"]) / 100)
        totals[row["customer"]] = totals.get(row["customer"], Decimal(0)) + amount
for customer in sorted(totals):
    print(f"{customer},{totals[customer].quantize(Decimal('0.01'), ROUND_HALF_UP)}")
PY
