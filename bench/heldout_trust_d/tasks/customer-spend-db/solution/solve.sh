#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import sqlite3
con = sqlite3.connect("/app/shop.db")
con.execute("CREATE TABLE customer_spend(customer TEXT PRIMARY KEY, spend_cents INTEGER)")
con.execute("INSERT INTO customer_spend SELECT customer, SUM(qty * price_cents) FROM orders GROUP BY customer")
con.commit()
PY
