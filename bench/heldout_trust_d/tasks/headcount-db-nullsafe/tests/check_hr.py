"""headcount must list every department with the right count."""
import csv
import sqlite3
import sys

with open("/tests/expected_headcount.csv", newline="") as f:
    expected = {r["dept"]: int(r["headcount"]) for r in csv.DictReader(f)}
con = sqlite3.connect("file:/app/hr.db?mode=ro", uri=True)
rows = con.execute("SELECT dept, headcount FROM headcount").fetchall()
got = dict(rows)
if len(rows) != len(got) or got != expected or any(type(v) is not int for v in got.values()):
    sys.exit(f"headcount differs: got {got}, want {expected}")
print("headcount ok")
