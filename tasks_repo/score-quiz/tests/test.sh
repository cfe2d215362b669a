#!/bin/bash
# check.py writes reward.json itself: one score per student row.
mkdir -p /logs/verifier
python3 /tests/check.py
