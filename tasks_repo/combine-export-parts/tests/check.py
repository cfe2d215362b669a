"""export.csv must hold the header once and every part's rows in part order."""

import sys
from pathlib import Path

EXPECTED = [
    "user_id,country,signups",
    "u001,DE,3",
    "u002,FR,1",
    "u003,DE,7",
    "u004,ES,2",
    "u005,IT,5",
    "u006,PL,4",
    "u007,DE,1",
    "u008,NL,6",
]

path = Path("/app/export.csv")
if not path.is_file():
    sys.exit("missing /app/export.csv")
lines = [line.rstrip("\r") for line in path.read_text().strip().splitlines()]
if lines != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {lines}")
parts = sorted(p.name for p in Path("/app/export").glob("part-*.csv"))
if parts != ["part-00000.csv", "part-00001.csv", "part-00002.csv"]:
    sys.exit(f"the part files must stay in place, found {parts}")
print("ok")
