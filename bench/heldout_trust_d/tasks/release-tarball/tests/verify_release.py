"""Checks the unpacked release in the current folder."""
import hashlib
import subprocess
import sys
from pathlib import Path

here = Path(".")
assert (here / "VERSION").read_text() == "2.3.0\n", "VERSION"
assert hashlib.sha256((here / "greet.py").read_bytes()).hexdigest() == "4e8d08885ab222091fe0fa2cd883bcc7a5930ad3fcecec6e98392472c1f1f9ea", "greet.py changed"
sums = (here / "SHA256SUMS").read_text().splitlines()
for line, name in zip(sums, ["greet.py", "VERSION"], strict=True):
    digest, listed = line.split("  ")
    assert listed == name and digest == hashlib.sha256((here / name).read_bytes()).hexdigest(), line
out = subprocess.run([sys.executable, "greet.py", "qa"], capture_output=True, text=True).stdout
assert out == "hello, qa\n", out
print("release ok")
