#!/bin/bash
set -euo pipefail
cd /app/chapter
files=$(ls ??-*.md | sort -n)
{
  echo "# Employee Handbook"
  echo
  n=0
  for f in $files; do
    n=$((n + 1))
    echo "$n. $(head -n 1 "$f" | sed 's/^# //')"
  done
  echo
  first=1
  for f in $files; do
    [ "$first" = 1 ] || echo
    first=0
    cat "$f"
  done
} > /app/handbook.md
