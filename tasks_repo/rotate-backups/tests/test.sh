#!/bin/bash
# Runs the checks and writes the reward file.
mkdir -p /logs/verifier
python3 /tests/check.py
if [ $? ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
