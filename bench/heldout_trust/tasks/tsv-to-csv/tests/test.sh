#!/bin/bash
fail=0
for tsv in /tests/cases/*.tsv; do
  want="${tsv%.tsv}.csv"
  tsv2csv < "$tsv" > /tmp/got.csv || fail=1
  if ! diff -u "$want" /tmp/got.csv; then fail=1; fi
done
if [ "$fail" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
