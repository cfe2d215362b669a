#!/bin/bash
set -euo pipefail
# Miller infers numeric types from the CSV.
mlr --icsv --ojson sort -f sku /app/catalog.csv > /app/catalog.json
