#!/bin/bash
export PATH=/usr/bin:/bin
result=$(/usr/bin/awk -f /tests/validate.awk /app/service.ini 2>&1)
echo "$result"
if [ "$result" = "VALID" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
