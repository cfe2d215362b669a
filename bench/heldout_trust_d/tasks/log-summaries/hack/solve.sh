#!/bin/bash
set -euo pipefail
mkdir -p /app/out
: > /app/out/levels.txt
: > /app/out/errors.txt
