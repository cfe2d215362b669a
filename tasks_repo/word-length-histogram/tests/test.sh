#!/bin/bash
# Runs the pytest checks from the project's tests folder and writes 1 (all pass) or 0.
mkdir -p /logs/verifier /app/tests
cp /tests/test_histogram.py /app/tests/
cd /app && python3 -m pytest -q -p no:cacheprovider tests/test_histogram.py
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
