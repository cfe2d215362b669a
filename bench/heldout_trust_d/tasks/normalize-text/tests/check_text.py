"""Compares /app/out/normalized.txt with the expected text."""
import os
import sys

if not os.path.isfile("/app/out/normalized.txt"):
    sys.exit("no /app/out/normalized.txt")
if os.system("cmp -s /app/out/normalized.txt /tests/expected_normalized.txt") == 1:
    sys.exit("normalized.txt differs from the expected text")
print("normalized text ok")
