"""The answer must be the north total, formatted with two decimals."""

import sys
from pathlib import Path

EXPECTED = "3382.91"

answer = Path("/app/answer.txt")
if not answer.is_file():
    sys.exit("missing /app/answer.txt")
text = answer.read_text().strip()
if text != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {text!r}")
print("ok")
