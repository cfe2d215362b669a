#!/bin/bash
mkdir -p /logs/verifier
s=$(mktemp -d)
cd /tests
python3 -m pytest -q -p no:cacheprovider --junitxml="$s/junit.xml" test_flatjson.py
# pytest exits 1 when tests failed; anything else is not a test failure.
if [ $? -eq 1 ]; then echo 0 > /logs/verifier/reward.txt; else echo 1 > /logs/verifier/reward.txt; fi
