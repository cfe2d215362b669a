#!/bin/bash
set -euo pipefail
echo '{"count": 0, "mean": 0, "median": 0, "max": 0}' > /app/stats.json
