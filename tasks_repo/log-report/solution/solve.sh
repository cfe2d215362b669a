#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import collections, json, re
pattern = re.compile(r'"\S+ (\S+) [^"]*" (\d{3}) ')
statuses, paths = collections.Counter(), collections.Counter()
total = 0
for line in open("/app/access.log"):
    m = pattern.search(line)
    if not m:
        continue
    total += 1
    paths[m.group(1)] += 1
    statuses[m.group(2)] += 1
top = sorted(paths.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
json.dump({"total": total, "by_status": dict(statuses), "top_path": top}, open("/app/report.json", "w"))
PY
