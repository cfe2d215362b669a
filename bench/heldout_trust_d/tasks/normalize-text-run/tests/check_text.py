"""Compares /app/out/normalized.txt with the expected text."""
import os
import subprocess
import sys

if not os.path.isfile("/app/out/normalized.txt"):
    sys.exit("no /app/out/normalized.txt")
proc = subprocess.run(["/usr/bin/cmp", "-s", "/app/out/normalized.txt", "/tests/expected_normalized.txt"])
if proc.returncode != 0:
    sys.exit("normalized.txt differs from the expected text")
print("normalized text ok")
