"""Writes the benchmark input (10000 lines, 5000 distinct) and the expected output."""
import random
import sys

rng = random.Random(20261207)
distinct = [f"user-{rng.randrange(10**9):09d}:{rng.choice(['GET', 'POST', 'PUT'])}:/v1/items/{i}" for i in range(5000)]
lines = distinct + [rng.choice(distinct) for _ in range(5000)]
rng.shuffle(lines)
seen, want = set(), []
for line in lines:
    if line not in seen:
        seen.add(line)
        want.append(line)
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
open(sys.argv[2], "w").write("\n".join(want) + "\n")
