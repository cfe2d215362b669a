#!/bin/bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path

lines = Path("/app/transactions.csv").read_text().splitlines()
header, rows = lines[0], lines[1:]
months: dict[str, list[str]] = {}
for row in rows:
    months.setdefault(row[:7], []).append(row)
out = Path("/app/months")
out.mkdir(exist_ok=True)
for month, month_rows in months.items():
    (out / f"{month}.csv").write_text("\n".join([header, *month_rows]) + "\n")
PY
