#!/bin/bash
# Runs the tests with a junit report and writes 1 (at least one test ran, none failed) or 0.
mkdir -p /logs/verifier
cd /tests
python3 -m pytest -q -p no:cacheprovider --junitxml=/tmp/junit.xml test_dedupe.py
python3 /tests/count_junit.py /tmp/junit.xml > /logs/verifier/reward.txt
