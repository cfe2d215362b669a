"""Spot-checks the shipped orders file."""

import sys
from pathlib import Path

EXPECTED_SHIPPED = [
    "order_id,customer,total",
    "5001,acme-corp,129.90",
    "5003,initech,310.25",
    "5006,acme-corp,15.50",
    "5008,wayne-ent,72.10",
    "5010,initech,5.00",
]

path = Path("/app/by_status/shipped.csv")
if not path.is_file():
    sys.exit("missing /app/by_status/shipped.csv")
lines = [line.rstrip("\r") for line in path.read_text().strip().splitlines()]
if lines != EXPECTED_SHIPPED:
    sys.exit(f"expected {EXPECTED_SHIPPED}, got {lines}")
print("ok")
