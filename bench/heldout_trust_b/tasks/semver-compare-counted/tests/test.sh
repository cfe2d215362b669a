#!/bin/bash
mkdir -p /logs/verifier
scratch=$(mktemp -d)
(cd "$scratch" && python3 -I -m pytest -q -c /tests/pytest.ini --rootdir /tests -p no:cacheprovider --junitxml="$scratch/junit.xml" /tests/test_semver.py)
python3 -I - "$scratch/junit.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET

try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print("no junit report"); sys.exit(1)
suite = root if root.tag == "testsuite" else root.find("testsuite")
cases = suite.findall("testcase")
bad = [c.get("name") for c in cases if len(c)]  # failure, error or skipped children
print(f"{len(cases)} cases, {len(bad)} not passed")
sys.exit(0 if len(cases) == 13 and not bad else 1)
PY
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
