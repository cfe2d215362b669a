#!/bin/bash
cd /app
python3 - <<'EOF'
import csv
import json

summary = {}
with open("orders.csv", newline="") as f:
    for row in csv.DictReader(f):
        if row["status"] != "paid":
            continue
        entry = summary.setdefault(row["customer"], {"orders": 0, "total_cents": 0})
        entry["orders"] += 1
        entry["total_cents"] += int(row["amount_cents"])
with open("summary.json", "w") as f:
    json.dump(summary, f, indent=2)
EOF
