#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
run_check() {
    local out status
    out=$(python3 -I /tests/verify_top.py /app/top_ips.txt 2>&1)
    status=$?
    echo "$out"
    return $status
}
[ -f /app/top_ips.txt ] || fail "no /app/top_ips.txt"
run_check || fail "verify_top.py rejected the list"
pass
