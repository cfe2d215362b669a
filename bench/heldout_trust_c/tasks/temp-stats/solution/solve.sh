#!/bin/bash
cat > /app/stats.py <<'EOF'
import math
import sys

with open(sys.argv[1]) as f:
    xs = [float(line) for line in f if line.strip()]
mean = sum(xs) / len(xs)
print(math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs)))
EOF
