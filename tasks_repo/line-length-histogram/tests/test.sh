#!/bin/bash
# Runs the pytest checks with rootdir and inifile under /tests and writes 1 (all pass) or 0.
mkdir -p /logs/verifier
cd /tests && python3 -m pytest -q -p no:cacheprovider -c /tests/pytest.ini --rootdir=/tests /tests/test_histogram.py
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
