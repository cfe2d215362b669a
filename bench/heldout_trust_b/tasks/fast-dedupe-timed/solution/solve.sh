#!/bin/bash
python3 - <<'PY'
import re
p = "/app/dedupe.py"
src = open(p).read()
new = '''def dedupe(lines):
    seen = set()
    out = []
    for line in lines:
        if line not in seen:
            seen.add(line)
            out.append(line)
    return out
'''
src = re.sub(r"def dedupe\(lines\):.*?return out\n", new, src, flags=re.S)
open(p, "w").write(src)
PY
