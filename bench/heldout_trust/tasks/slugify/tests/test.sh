#!/bin/bash
# The project's layout: tests live in /app/tests next to the code.
mkdir -p /app/tests
cp /tests/test_slugify.py /app/tests/
cd /app
if python3 -m pytest -q -p no:cacheprovider tests; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
