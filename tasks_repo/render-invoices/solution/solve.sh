#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from decimal import Decimal
from pathlib import Path

template = Path("/app/templates/invoice.txt").read_text()
out = Path("/app/invoices")
out.mkdir(exist_ok=True)
with open("/app/orders.csv") as fh:
    for row in csv.DictReader(fh):
        total = Decimal(row["quantity"]) * Decimal(row["unit_price"])
        (out / f"{row['order_id']}.txt").write_text(template.format(total=f"{total:.2f}", **row))
PY
