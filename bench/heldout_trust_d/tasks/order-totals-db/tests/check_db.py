"""Every row of order_totals must be a correct total."""
import csv
import sqlite3
import sys

with open("/tests/expected_order_totals.csv", newline="") as f:
    expected = [(int(r["order_id"]), int(r["total_cents"])) for r in csv.DictReader(f)]
con = sqlite3.connect("file:/app/shop.db?mode=ro", uri=True)
con.execute("CREATE TEMP TABLE expected(order_id INTEGER, total_cents INTEGER)")
con.executemany("INSERT INTO temp.expected VALUES (?, ?)", expected)
wrong = con.execute(
    "SELECT order_id, total_cents FROM order_totals EXCEPT SELECT order_id, total_cents FROM temp.expected"
).fetchall()
if wrong:
    sys.exit(f"wrong totals: {wrong}")
print("order totals ok")
