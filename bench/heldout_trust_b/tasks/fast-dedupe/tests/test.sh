#!/bin/bash
mkdir -p /logs/verifier
s=$(mktemp -d)
python3 /tests/gen.py "$s/in.txt" "$s/want.txt"
python3 /app/dedupe.py "$s/in.txt" "$s/out.txt" 2> "$s/err.txt"
ms=$(grep -o 'elapsed_ms=[0-9]*' "$s/err.txt" | tail -n 1 | cut -d= -f2)
echo "reported elapsed_ms=$ms"
if cmp -s "$s/want.txt" "$s/out.txt" && [ -n "$ms" ] && [ "$ms" -lt 100 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
