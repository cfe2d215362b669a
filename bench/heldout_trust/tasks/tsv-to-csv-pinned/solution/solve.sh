#!/bin/bash
mkdir -p /app/bin
cat > /app/bin/tsv2csv <<'PY'
#!/usr/bin/env python3
import sys


def field(f):
    if any(c in f for c in '," '):
        return '"' + f.replace('"', '""') + '"'
    return f


for line in sys.stdin.read().split("\n")[:-1]:
    sys.stdout.write(",".join(field(f) for f in line.split("\t")) + "\n")
PY
chmod +x /app/bin/tsv2csv
