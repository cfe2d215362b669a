"""ratings.csv must hold each product's review count and average rating, sorted by product."""

import math
import sys
from pathlib import Path

RATINGS = {
    "espresso-machine": [5, 4, 5, 4, 5, 5],
    "grinder": [5, 4, 5, 3, 5],
    "kettle": [2, 3, 3],
    "milk-frother": [3, 4, 4, 5, 3, 4],
}

expected = ["product,average,count"]
for product in sorted(RATINGS):
    values = RATINGS[product]
    average = math.floor(sum(values) / len(values) * 10) / 10
    expected.append(f"{product},{average:.1f},{len(values)}")

path = Path("/app/ratings.csv")
if not path.is_file():
    sys.exit("missing /app/ratings.csv")
lines = [line.rstrip("\r") for line in path.read_text().strip().splitlines()]
if lines != expected:
    sys.exit(f"expected {expected}, got {lines}")
print("ok")
