#!/bin/bash
# Scores each field of report.json separately; full reward needs all three.
mkdir -p /logs/verifier
python3 /tests/check.py > /logs/verifier/reward.json || echo '{"total": 0, "by_status": 0, "top_path": 0}' > /logs/verifier/reward.json
