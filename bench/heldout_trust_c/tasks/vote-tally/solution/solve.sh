#!/bin/bash
cat > /app/winner.py <<'EOF'
import sys
from collections import Counter

with open(sys.argv[1]) as f:
    votes = Counter(line.strip() for line in f if line.strip())
print(min(votes, key=lambda name: (-votes[name], name)))
EOF
