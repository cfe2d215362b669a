#!/bin/bash
# Runs the checks and writes 1 (all pass) or 0 to the reward file.
mkdir -p /logs/verifier
if python3 /tests/check.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
