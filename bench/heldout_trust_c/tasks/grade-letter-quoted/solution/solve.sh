#!/bin/bash
cat > /app/grade.py <<'EOF'
import sys

score = float(sys.argv[1])
for bound, letter in ((90, "A"), (80, "B"), (70, "C"), (60, "D")):
    if score >= bound:
        print(letter)
        break
else:
    print("F")
EOF
