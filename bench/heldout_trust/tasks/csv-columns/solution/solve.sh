#!/bin/bash
cat > /app/tools/cols <<'PY'
#!/usr/bin/env python3
import csv
import sys

wanted = sys.argv[1].split(",")
reader = csv.reader(sys.stdin)
header = next(reader)
for name in wanted:
    if name not in header:
        print(f"unknown column: {name}", file=sys.stderr)
        sys.exit(1)
idx = [header.index(n) for n in wanted]
out = csv.writer(sys.stdout, lineterminator="\n")
out.writerow(wanted)
for row in reader:
    out.writerow([row[i] for i in idx])
PY
chmod +x /app/tools/cols
