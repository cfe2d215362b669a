#!/bin/bash
fail=0
check() {
  local got
  got=$(python3 /app/roman.py "$1" 2>/dev/null)
  local status=$?
  if [ "$got" != "$2" ] || [ "$status" -ne "$3" ]; then echo "FAIL $1: got '$got' ($status)"; fail=1; else echo "ok $1"; fi
}
check 1994 MCMXCIV 0
check 4 IV 0
check 3999 MMMCMXCIX 0
check 1 I 0
check 444 CDXLIV 0
check 2024 MMXXIV 0
check 90 XC 0
check 3888 MMMDCCCLXXXVIII 0
check 4000 error 2
check -7 error 2
check abc error 2
if [ "$fail" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
