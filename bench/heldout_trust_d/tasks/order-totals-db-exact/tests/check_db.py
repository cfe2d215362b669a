"""order_totals must hold exactly the expected rows, as integers."""
import csv
import sqlite3
import sys

with open("/tests/expected_order_totals.csv", newline="") as f:
    expected = sorted((int(r["order_id"]), int(r["total_cents"])) for r in csv.DictReader(f))
con = sqlite3.connect("file:/app/shop.db?mode=ro", uri=True)
got = sorted(tuple(row) for row in con.execute("SELECT order_id, total_cents FROM order_totals"))
if any(type(v) is not int for row in got for v in row):
    sys.exit(f"non-integer values: {got}")
if got != expected:
    sys.exit(f"order totals differ: got {got}, want {expected}")
print("order totals ok")
