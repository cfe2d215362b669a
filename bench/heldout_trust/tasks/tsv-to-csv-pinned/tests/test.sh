#!/bin/bash
export PATH=/usr/bin:/bin
work=$(mktemp -d)
fail=0
for tsv in /tests/cases/*.tsv; do
  want="${tsv%.tsv}.csv"
  /app/bin/tsv2csv < "$tsv" > "$work/got.csv" || fail=1
  if ! /usr/bin/diff -u "$want" "$work/got.csv"; then fail=1; fi
done
if [ "$fail" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
