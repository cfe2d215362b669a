#!/bin/bash
cd /app
bash /app/build.sh > /logs/verifier/build.log 2>&1
python3 - <<'PY'
import json
try:
    r = json.load(open("/app/build/report.json"))
    ok = r["compiled"] >= 1 and r["tests_run"] >= 3 and r["failures"] == 0
except Exception as exc:
    print("no report:", exc)
    ok = False
open("/logs/verifier/reward.txt", "w").write("1\n" if ok else "0\n")
PY
