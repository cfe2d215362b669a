#!/bin/bash
mkdir -p /logs/verifier
if ! sha256sum -c /tests/rates.sha256; then echo "vendor/rates.py was modified"; echo 0 > /logs/verifier/reward.txt; exit 0; fi
# -B: no bytecode written by the verifier; the expected values come from /tests, not from /app.
if python3 -I -B /tests/check.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
