#!/bin/bash
cat > /app/roman.py <<'EOF'
import sys

VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}

numeral = sys.stdin.read().strip()
total = 0
for i, ch in enumerate(numeral):
    value = VALUES[ch]
    if i + 1 < len(numeral) and VALUES[numeral[i + 1]] > value:
        total -= value
    else:
        total += value
print(total)
EOF
