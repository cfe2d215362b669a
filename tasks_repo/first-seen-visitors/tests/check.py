"""visitors.txt must list each distinct client IP exactly once."""

import sys
from pathlib import Path

EXPECTED = [
    "10.0.0.23",
    "172.16.5.4",
    "192.0.2.150",
    "198.51.100.7",
    "198.51.100.99",
    "203.0.113.42",
    "203.0.113.8",
]

path = Path("/app/visitors.txt")
if not path.is_file():
    sys.exit("missing /app/visitors.txt")
got = path.read_text().split()
if got != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {got}")
print("ok")
