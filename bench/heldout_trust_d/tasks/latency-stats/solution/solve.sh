#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import json, statistics
v = [int(x) for x in open("/app/latency_ms.txt").read().split()]
json.dump({"count": len(v), "mean": round(statistics.mean(v), 2), "median": statistics.median(v), "max": max(v)},
          open("/app/stats.json", "w"))
PY
