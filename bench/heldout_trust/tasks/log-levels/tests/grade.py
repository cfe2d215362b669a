import glob
import json
import re
import sys

counts = {level: 0 for level in ("DEBUG", "INFO", "WARN", "ERROR")}
for path in glob.glob("/app/logs/*.log"):
    for line in open(path):
        m = re.search(r"\[(DEBUG|INFO|WARN|ERROR)\]", line)
        if m:
            counts[m.group(1)] += 1
with open("/app/level_counts.json") as fh:
    got = json.load(fh)
print("expected", counts, "got", got)
sys.exit(0 if got == counts else 1)
