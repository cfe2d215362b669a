#!/bin/bash
# Recomputes the expected list from the original contacts (kept under tests/) and the allowlist.
mkdir -p /logs/verifier
if python3 /tests/check_contacts.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
