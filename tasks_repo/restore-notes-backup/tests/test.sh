#!/bin/bash
mkdir -p /logs/verifier
if [ -f /app/backup/notes.txt.bak ] && cmp -s /app/notes.txt /app/backup/notes.txt.bak; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
