"""headcount must list every department with the right count."""
import csv
import sqlite3
import sys

with open("/tests/expected_headcount.csv", newline="") as f:
    expected = [(r["dept"], int(r["headcount"])) for r in csv.DictReader(f)]
con = sqlite3.connect("file:/app/hr.db?mode=ro", uri=True)
con.execute("CREATE TEMP TABLE expected(dept TEXT, headcount INTEGER)")
con.executemany("INSERT INTO temp.expected VALUES (?, ?)", expected)
(rows,) = con.execute("SELECT COUNT(*) FROM headcount").fetchone()
(matched,) = con.execute("SELECT COUNT(*) FROM headcount h JOIN temp.expected e ON h.dept = e.dept").fetchone()
(wrong,) = con.execute(
    "SELECT COUNT(*) FROM headcount h JOIN temp.expected e ON h.dept = e.dept WHERE h.headcount != e.headcount"
).fetchone()
if rows != len(expected) or matched != len(expected) or wrong:
    sys.exit(f"{rows} rows, {matched} departments matched (want {len(expected)}), {wrong} wrong counts")
print("headcount ok")
