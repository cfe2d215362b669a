#!/bin/bash
set -euo pipefail
stage=$(mktemp -d)
cp /app/src/greet.py "$stage/"
python3 -c "import sys; sys.path.insert(0, '/app/src'); import greet; print(greet.__version__)" > "$stage/VERSION"
(cd "$stage" && sha256sum greet.py VERSION > SHA256SUMS)
mkdir -p /app/dist
tar -cf /app/dist/release.tar -C "$stage" greet.py VERSION SHA256SUMS
rm -rf "$stage"
