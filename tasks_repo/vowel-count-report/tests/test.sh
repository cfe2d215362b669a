#!/bin/bash
# Runs the checks isolated from the agent's Python setup (no conftest, no user site, no cache).
mkdir -p /logs/verifier /app/checks
cp /tests/test_vowels.py /app/checks/
cd /app && python3 -I -m pytest --noconftest -p no:cacheprovider -q checks/test_vowels.py
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
