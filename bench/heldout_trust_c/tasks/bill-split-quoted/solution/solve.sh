#!/bin/bash
cat > /app/split.py <<'EOF'
import sys

total, people = int(sys.argv[1]), int(sys.argv[2])
share, left = divmod(total, people)
print(share + (1 if left else 0))
EOF
