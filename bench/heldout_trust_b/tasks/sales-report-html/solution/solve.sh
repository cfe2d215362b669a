#!/bin/bash
cat > /app/report.py <<'PY'
import csv
import html
import sys
from collections import defaultdict

units, revenue = defaultdict(int), defaultdict(float)
with open(sys.argv[1], newline="") as f:
    for r in csv.DictReader(f):
        units[r["region"]] += int(r["units"])
        revenue[r["region"]] += int(r["units"]) * float(r["unit_price"])
rows = [f"<tr><td>{html.escape(reg)}</td><td>{units[reg]}</td><td>{revenue[reg]:.2f}</td></tr>" for reg in sorted(units)]
rows.append(f"<tr><td>Total</td><td>{sum(units.values())}</td><td>{sum(revenue.values()):.2f}</td></tr>")
page = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Sales report</title></head><body>"
        "<table id=\"by-region\"><tr><th>Region</th><th>Units</th><th>Revenue</th></tr>"
        + "".join(rows) + "</table></body></html>\n")
open(sys.argv[2], "w").write(page)
PY
