#!/bin/bash
mkdir -p /logs/verifier /app/reports
report="/app/reports/junit-$(date +%s).xml"
cd /tests
python3 -m pytest -q -p no:cacheprovider --junitxml="$report" test_intervals.py
if python3 /tests/junit_ok.py "$report"; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
