"""Every expected line must appear in /app/report.txt."""
import sys
from pathlib import Path

EXPECTED = ['Expenses by month', '2026-01 2650.25', '2026-02 1263.29', '2026-03 957.70', '2026-04 1026.16', '2026-05 980.85', '2026-06 1878.90', 'TOTAL 8757.15']
report = Path("/app/report.txt").read_text()
if not report.startswith(EXPECTED[0] + "\n"):
    sys.exit("the report must start with its title line")
for line in EXPECTED[1:]:
    if not report.find(line + "\n"):
        sys.exit(f"missing line: {line}")
print("report ok")
