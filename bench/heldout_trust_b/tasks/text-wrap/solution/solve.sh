#!/bin/bash
cat > /app/wrap.py <<'PY'
import sys

width = int(sys.argv[1])
paras, cur = [], []
for line in sys.stdin.read().splitlines():
    if line.strip():
        cur.extend(line.split())
    elif cur:
        paras.append(cur)
        cur = []
if cur:
    paras.append(cur)
out = []
for words in paras:
    lines, line = [], ""
    for w in words:
        if not line:
            line = w
        elif len(line) + 1 + len(w) <= width:
            line += " " + w
        else:
            lines.append(line)
            line = w
    lines.append(line)
    out.append("\n".join(lines))
sys.stdout.write("\n\n".join(out) + "\n")
PY
