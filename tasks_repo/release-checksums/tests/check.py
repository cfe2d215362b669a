"""SHA256SUMS must match the published manifest of release 2.3.1, and the artifacts their digests."""

import hashlib
import sys
import urllib.request
from pathlib import Path

MANIFEST_URL = "https://releases.example-tools.dev/tool/2.3.1/SHA256SUMS"

with urllib.request.urlopen(MANIFEST_URL, timeout=20) as response:
    published = response.read().decode().splitlines()

path = Path("/app/release/SHA256SUMS")
if not path.is_file():
    sys.exit("missing /app/release/SHA256SUMS")
lines = path.read_text().strip().splitlines()
if lines != published:
    sys.exit(f"SHA256SUMS differs from the published manifest:\n{path.read_text()}")
for line in lines:
    digest, name = line.split("  ", 1)
    if hashlib.sha256((path.parent / name).read_bytes()).hexdigest() != digest:
        sys.exit(f"{name} does not match its digest")
print("ok")
