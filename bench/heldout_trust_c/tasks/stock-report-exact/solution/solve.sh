#!/bin/bash
cat > /app/stock_report.py <<'EOF'
import csv

stock: dict[str, dict[str, int]] = {}
with open("/app/stock.csv", newline="") as f:
    for row in csv.DictReader(f):
        items = stock.setdefault(row["warehouse"], {})
        items[row["item"]] = items.get(row["item"], 0) + int(row["qty"])
print("Stock report")
for warehouse, items in stock.items():
    for item, qty in items.items():
        print(f"warehouse {warehouse}: {item} in stock: {qty}")
print(f"total items in stock: {sum(q for items in stock.values() for q in items.values())}")
EOF
