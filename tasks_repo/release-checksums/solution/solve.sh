#!/bin/bash
set -euo pipefail
cd /app/release
files=$(ls | grep -vx SHA256SUMS | LC_ALL=C sort)
sha256sum $files > SHA256SUMS
sha256sum -c SHA256SUMS
