#!/bin/bash
mkdir -p /logs/verifier
# Drop the agent's folders from PATH; tools by absolute path; the checker's python isolated.
export PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '^/app' | paste -sd: -)
if /usr/bin/timeout 30 python3 -I /tests/check.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
