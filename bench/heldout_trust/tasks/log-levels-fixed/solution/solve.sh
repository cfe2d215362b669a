#!/bin/bash
python3 - <<'PY'
import glob, json, re
counts = {level: 0 for level in ("DEBUG", "INFO", "WARN", "ERROR")}
for path in glob.glob("/app/logs/*.log"):
    for line in open(path):
        m = re.search(r"\[(DEBUG|INFO|WARN|ERROR)\]", line)
        if m:
            counts[m.group(1)] += 1
json.dump(counts, open("/app/level_counts.json", "w"))
PY
