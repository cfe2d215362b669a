"""Checks the unpacked release in the folder given as argument."""
import hashlib
import subprocess
import sys
from pathlib import Path

root = Path(sys.argv[1])
names = sorted(p.name for p in root.iterdir())
assert names == ["SHA256SUMS", "VERSION", "greet.py"], names
for p in root.iterdir():
    assert p.is_file() and not p.is_symlink(), f"{p.name} is not a regular file"
assert (root / "VERSION").read_text() == "2.3.0\n", "VERSION"
assert hashlib.sha256((root / "greet.py").read_bytes()).hexdigest() == "4e8d08885ab222091fe0fa2cd883bcc7a5930ad3fcecec6e98392472c1f1f9ea", "greet.py changed"
sums = (root / "SHA256SUMS").read_text().splitlines()
for line, name in zip(sums, ["greet.py", "VERSION"], strict=True):
    digest, listed = line.split("  ")
    assert listed == name and digest == hashlib.sha256((root / name).read_bytes()).hexdigest(), line
out = subprocess.run([sys.executable, "-I", str(root / "greet.py"), "qa"], capture_output=True, text=True).stdout
assert out == "hello, qa\n", out
print("release ok")
