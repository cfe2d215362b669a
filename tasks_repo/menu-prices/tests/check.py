"""menu_new.csv must hold the increased prices."""

import sys
from pathlib import Path

EXPECTED = ["item,price", "espresso,2.64", "cappuccino,3.52", "crème brûlée,6.05", "croissant,2.37"]
path = Path("/app/menu_new.csv")
lines = path.read_text(encoding="utf-8").strip().splitlines() if path.is_file() else []
if lines != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {lines}")
print("ok")
