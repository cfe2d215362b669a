#!/bin/bash
mkdir -p /logs/verifier
cp /tests/test_validate_hidden.py /app/tests/
cd /tmp
if python3 -m pytest -q -p no:cacheprovider /app/tests/test_validate_hidden.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
