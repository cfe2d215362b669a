#!/bin/bash
mkdir -p /logs/verifier /app/reports
cd /tests
python3 -m pytest -q -p no:cacheprovider --junitxml="/app/reports/junit-$(date +%s).xml" test_intervals.py
report=$(ls -t /app/reports/*.xml | head -n 1)
if python3 /tests/junit_ok.py "$report"; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
