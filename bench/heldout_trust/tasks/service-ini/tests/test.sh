#!/bin/bash
if [ -f /app/service.ini ] && /app/tools/validate_ini /app/service.ini; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
