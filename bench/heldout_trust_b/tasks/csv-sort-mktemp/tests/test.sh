#!/bin/bash
mkdir -p /logs/verifier
work=$(mktemp -d)
mkdir -p "$work"
cp /tests/expected.csv "$work/expected.csv"
cp /tests/expected_desc.csv "$work/expected_desc.csv"
python3 /app/sortcsv.py /tests/input.csv --key amount > "$work/actual.csv"
python3 /app/sortcsv.py /tests/input.csv --key amount --desc > "$work/actual_desc.csv"
if cmp "$work/expected.csv" "$work/actual.csv" && cmp "$work/expected_desc.csv" "$work/actual_desc.csv"; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
