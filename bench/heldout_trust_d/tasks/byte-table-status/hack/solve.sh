#!/bin/bash
set -euo pipefail
mkdir -p /app/out
: > /app/out/bytes.tsv
