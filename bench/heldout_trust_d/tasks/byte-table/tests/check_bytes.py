"""Compares /app/out/bytes.tsv with the expected table, line by line; the exit status is the failure count."""
import sys
from pathlib import Path

expected = Path("/tests/expected_bytes.tsv").read_text().splitlines()
got = Path("/app/out/bytes.tsv").read_text().splitlines()
failures = 0
for i, want in enumerate(expected):
    line = got[i] if i < len(got) else None
    if line != want:
        failures += 1
        if failures <= 5:
            print(f"line {i}: got {line!r}, want {want!r}")
failures += max(0, len(got) - len(expected))
print(f"{failures} failures")
sys.exit(failures)
