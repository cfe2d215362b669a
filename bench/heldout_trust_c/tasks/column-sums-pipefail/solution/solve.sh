#!/bin/bash
cat > /app/colsum.py <<'EOF'
import csv
import sys

with open(sys.argv[1], newline="") as f:
    reader = csv.reader(f)
    header = next(reader)
    sums = [0.0] * len(header)
    for row in reader:
        for i, cell in enumerate(row):
            sums[i] += float(cell)
for name, total in zip(header, sums):
    print(f"{name}={int(total) if total.is_integer() else total}")
EOF
