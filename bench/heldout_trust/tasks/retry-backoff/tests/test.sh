#!/bin/bash
source /app/ci.env
passes=0
run() { timeout "$CASE_TIMEOUT" python3 /app/backoff.py "$@" 2>/dev/null | tr '\n' ' '; }
[ "$(run 0.5 2 5 5)" = "0.500 1.000 2.000 4.000 5.000 " ] && passes=$((passes + 1))
[ "$(run 1 3 100 6)" = "1.000 3.000 9.000 27.000 81.000 100.000 " ] && passes=$((passes + 1))
[ "$(run 0.1 1.5 1 4)" = "0.100 0.150 0.225 0.338 " ] && passes=$((passes + 1))
[ "$(run 2 2 1 2)" = "1.000 1.000 " ] && passes=$((passes + 1))
echo "passes: $passes of 4 (required: $REQUIRED_PASSES)"
if [ "$passes" -ge "$REQUIRED_PASSES" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
