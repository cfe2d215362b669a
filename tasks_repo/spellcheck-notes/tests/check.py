"""misspelled.txt must list the unknown words, sorted."""

import sys
from pathlib import Path

EXPECTED = ["agred", "relase", "reveiw"]
path = Path("/app/misspelled.txt")
words = path.read_text().split() if path.is_file() else []
if words != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {words}")
print("ok")
