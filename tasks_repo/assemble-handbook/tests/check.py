"""handbook.md must be the title, the contents list and the chapters in numeric order."""

import sys
from pathlib import Path

EXPECTED = """# Employee Handbook

1. Welcome
2. Working Hours
3. Time Off
4. Expenses

# Welcome

Welcome to Acme. This handbook explains how we work.

# Working Hours

Core hours are 10:00 to 16:00.
Everything else is flexible.

# Time Off

Book leave at least two weeks ahead.

# Expenses

Submit receipts within 30 days.
"""

path = Path("/app/handbook.md")
if not path.is_file():
    sys.exit("missing /app/handbook.md")
got = path.read_text()
if got.rstrip("\n") != EXPECTED.rstrip("\n"):
    sys.exit(f"handbook.md differs from the expected text:\n{got}")
chapter = Path("/app/chapters/03-time-off.md").read_text()
if chapter != "# Time Off\n\nBook leave at least two weeks ahead.\n":
    sys.exit("a chapter file was changed")
print("ok")
