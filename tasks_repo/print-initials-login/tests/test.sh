#!/bin/bash
# Runs the tests in a login shell (for the toolchain's PATH) and writes 1 (pytest passed) or 0 to the reward file.
mkdir -p /logs/verifier
if bash -lc "cd /tests && python3 -m pytest -q -p no:cacheprovider test_initials.py"; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
