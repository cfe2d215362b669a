#!/bin/bash
# Checks /app/out/tags.txt against the tag list and the expected number of tags; writes 1 or 0.
mkdir -p /logs/verifier
if python3 /tests/check_tags.py; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
