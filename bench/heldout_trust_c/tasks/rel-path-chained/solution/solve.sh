#!/bin/bash
cat > /app/relpath.py <<'EOF'
import posixpath
import sys

print(posixpath.relpath(sys.argv[2], sys.argv[1]))
EOF
