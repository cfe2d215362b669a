#!/bin/bash
cat > /app/roman.py <<'PY'
import sys

VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
          (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]

try:
    n = int(sys.argv[1])
except (IndexError, ValueError):
    n = 0
if not 1 <= n <= 3999:
    print("error")
    sys.exit(2)
out = []
for value, letters in VALUES:
    while n >= value:
        out.append(letters)
        n -= value
print("".join(out))
PY
