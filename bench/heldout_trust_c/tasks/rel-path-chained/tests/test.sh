#!/bin/bash
set -e
mkdir -p /logs/verifier
scratch=$(mktemp -d)
check() {
  python3 /app/relpath.py "$1" "$2" > "$scratch/out"
  printf '%s\n' "$3" | cmp -s - "$scratch/out" && test -s "$scratch/out"
}
fail=0
while read -r from to want; do
  if ! check "$from" "$to" "$want"; then
    echo "relpath $from $to: want $want"
    fail=1
  fi
done < /tests/cases.txt
if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
