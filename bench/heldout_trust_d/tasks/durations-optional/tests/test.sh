#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/durations.py ] || fail "no /app/durations.py"
cd /tests && PYTHONPATH=/app python3 -m pytest -q -p no:cacheprovider test_files.py test_durations.py && pass
fail "pytest failed"
