#!/bin/bash
set -euo pipefail
mkdir -p /app/out
awk '{print $2}' /app/app.log | sort | uniq -c | awk '{print $2, $1}' > /app/out/levels.txt
awk '$2 == "ERROR"' /app/app.log > /app/out/errors.txt
