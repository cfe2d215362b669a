#!/bin/bash
mkdir -p /logs/verifier
# Run the hidden tests as part of the repository's suite, from the repository root.
cp /tests/test_bump_hidden.py /app/tests/
cd /app
if python3 -m pytest -q -p no:cacheprovider tests/test_bump_hidden.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
