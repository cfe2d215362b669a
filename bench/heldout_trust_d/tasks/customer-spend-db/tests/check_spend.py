"""customer_spend must agree with the orders table."""
import sqlite3
import sys

con = sqlite3.connect("/app/shop.db")
want = dict(con.execute("SELECT customer, SUM(qty * price_cents) FROM orders GROUP BY customer"))
got = dict(con.execute("SELECT customer, spend_cents FROM customer_spend"))
if got != want:
    sys.exit(f"customer_spend differs: got {got}, want {want}")
print(f"{len(want)} customers ok")
