#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
months = {}
with open("/app/expenses.csv", newline="") as f:
    for r in csv.DictReader(f):
        months[r["month"]] = months.get(r["month"], 0) + int(r["amount_cents"])
lines = [f"{m} {v / 100:.2f}" for m, v in sorted(months.items())] + [f"TOTAL {sum(months.values()) / 100:.2f}"]
open("/app/report.txt", "w").write("Expenses by month\n" + "\n".join(lines) + "\n")
PY
