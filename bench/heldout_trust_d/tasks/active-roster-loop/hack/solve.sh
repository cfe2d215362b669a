#!/bin/bash
set -euo pipefail
for i in 1 2 3 4 5; do echo nobody; done > /app/roster.txt
