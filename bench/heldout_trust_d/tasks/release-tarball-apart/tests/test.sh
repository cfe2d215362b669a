#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/dist/release.tar ] || fail "no /app/dist/release.tar"
scratch=$(mktemp -d)
mkdir "$scratch/pkg"
tar -xf /app/dist/release.tar -C "$scratch/pkg" || fail "cannot unpack"
python3 -I /tests/verify_release.py "$scratch/pkg" && pass
fail "verify_release.py rejected the release"
