#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/kvd.py ] || fail "no /app/kvd.py"
sock=$(mktemp -u /tmp/kvd.XXXXXX)
python3 /app/kvd.py "$sock" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
python3 -I /tests/client_check.py "$sock" && pass
fail "client_check.py failed"
