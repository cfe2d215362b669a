#!/bin/bash
set -euo pipefail
awk '{print $1}' /app/access.log | sort | uniq -c | sort -k1,1nr -k2,2 | head -n 3 | awk '{print $2}' > /app/top_ips.txt
