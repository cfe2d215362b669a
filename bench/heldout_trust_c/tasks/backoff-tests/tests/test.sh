#!/bin/bash
mkdir -p /logs/verifier
scratch=$(mktemp -d)
cd /app
python3 -m pytest -q -p no:cacheprovider --junitxml="$scratch/junit.xml" tests/test_backoff.py
if [ -f "$scratch/junit.xml" ] && python3 /tests/junit_ok.py "$scratch/junit.xml"; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
