#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import sqlite3
con = sqlite3.connect("/app/shop.db")
con.execute("DELETE FROM orders")
con.execute("CREATE TABLE customer_spend(customer TEXT PRIMARY KEY, spend_cents INTEGER)")
con.commit()
PY
