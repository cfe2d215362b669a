#!/bin/bash
# Runs the pytest checks and writes 1 (all pass) or 0 to the reward file.
mkdir -p /logs/verifier
python3 -m pytest -q -p no:cacheprovider /tests/test_summary.py
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
