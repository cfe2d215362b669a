#!/bin/bash
set -euo pipefail
cut -d' ' -f1 /app/access.log | awk '!seen[$0]++' > /app/visitors.txt
