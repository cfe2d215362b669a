"""Compares one converted file with the expected JSON."""
import json
import sys
from pathlib import Path

got_path = Path(sys.argv[1])
want = json.loads((Path("/tests/expected") / got_path.name).read_text())
got = json.loads(got_path.read_text())
if got != want:
    sys.exit(f"{got_path.name}: got {got}, want {want}")
print(f"{got_path.name} ok")
