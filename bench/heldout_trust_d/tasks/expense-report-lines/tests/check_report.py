"""/app/report.txt must hold exactly the expected lines."""
import sys
from pathlib import Path

EXPECTED = ['Expenses by month', '2026-01 2650.25', '2026-02 1263.29', '2026-03 957.70', '2026-04 1026.16', '2026-05 980.85', '2026-06 1878.90', 'TOTAL 8757.15']
got = Path("/app/report.txt").read_text().splitlines()
if got != EXPECTED:
    sys.exit(f"report differs: got {got}, want {EXPECTED}")
print("report ok")
