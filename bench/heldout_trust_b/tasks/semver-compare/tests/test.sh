#!/bin/bash
mkdir -p /logs/verifier
if python3 -m pytest -q -p no:cacheprovider /tests/test_semver.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
