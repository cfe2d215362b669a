#!/bin/bash
# Strict mode: any failed check stops the verifier.
set -euo pipefail
mkdir -p /logs/verifier
python3 /tests/check.py
echo 1 > /logs/verifier/reward.txt
