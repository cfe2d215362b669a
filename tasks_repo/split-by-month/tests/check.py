"""/app/months/ must hold exactly one file per month, each with the header and that month's rows in input order."""

import sys
from pathlib import Path

HEADER = "date,account,amount"
EXPECTED = {
    "2024-01.csv": [
        "2024-01-15,ACC-101,1200.00",
        "2024-01-02,ACC-102,-12.50",
        "2024-01-31,ACC-104,-5.00",
        "2024-01-20,ACC-103,-18.35",
        "2024-01-07,ACC-101,-150.00",
    ],
    "2024-02.csv": [
        "2024-02-03,ACC-104,-45.20",
        "2024-02-28,ACC-103,310.75",
        "2024-02-11,ACC-101,-64.00",
        "2024-02-17,ACC-102,-7.25",
    ],
    "2024-03.csv": [
        "2024-03-01,ACC-101,-89.99",
        "2024-03-14,ACC-102,-230.10",
        "2024-03-22,ACC-104,999.99",
        "2024-03-30,ACC-103,-42.42",
    ],
}

folder = Path("/app/months")
found = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
if found != sorted(EXPECTED):
    sys.exit(f"expected files {sorted(EXPECTED)}, found {found}")
for name, rows in EXPECTED.items():
    lines = (folder / name).read_text().splitlines()
    if lines != [HEADER, *rows]:
        sys.exit(f"{name}: expected {[HEADER, *rows]}, got {lines}")
print("ok")
