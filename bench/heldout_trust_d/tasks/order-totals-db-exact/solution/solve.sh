#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv, sqlite3
con = sqlite3.connect("/app/shop.db")
con.execute("CREATE TABLE order_totals(order_id INTEGER PRIMARY KEY, total_cents INTEGER)")
totals = {}
with open("/app/orders.csv", newline="") as f:
    for r in csv.DictReader(f):
        o = int(r["order_id"])
        totals[o] = totals.get(o, 0) + int(r["qty"]) * int(r["unit_price_cents"])
con.executemany("INSERT INTO order_totals VALUES (?, ?)", sorted(totals.items()))
con.commit()
PY
