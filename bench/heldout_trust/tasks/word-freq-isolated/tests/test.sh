#!/bin/bash
cd /app
python3 -I -m pytest -q -c /tests/pytest.ini --rootdir=/tests --noconftest --junitxml=/logs/verifier/junit.xml /tests/test_wordfreq_child.py
python3 -I - <<'PY'
import xml.etree.ElementTree as ET
try:
    suite = ET.parse("/logs/verifier/junit.xml").getroot().find("testsuite")
    ok = int(suite.get("tests")) == 4 and all(int(suite.get(k)) == 0 for k in ("failures", "errors", "skipped"))
except Exception:
    ok = False
open("/logs/verifier/reward.txt", "w").write("1\n" if ok else "0\n")
PY
