#!/bin/bash
cd /app
python3 - <<'EOF'
import csv
import json

with open("prices.csv", newline="") as f:
    prices = {row["symbol"]: f"{int(row['price_cents']) // 100}.{int(row['price_cents']) % 100:02d}" for row in csv.DictReader(f)}
with open("prices.json", "w") as f:
    json.dump(prices, f, indent=2)
EOF
