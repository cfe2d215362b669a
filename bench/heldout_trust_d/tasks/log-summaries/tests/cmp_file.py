"""Compares one output file with the expected one."""
import sys
from pathlib import Path

got, want = Path(sys.argv[1]).read_text(), Path(sys.argv[2]).read_text()
if got != want:
    sys.exit(f"{sys.argv[1]} differs from the expected summary")
print(f"{sys.argv[1]} ok")
