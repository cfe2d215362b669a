#!/bin/bash
set -euo pipefail
echo 'Expenses by month' > /app/report.txt
