"""Compares the agent's list of top IPs with the expected one."""
import sys
from pathlib import Path

got = Path(sys.argv[1]).read_text().split()
want = Path("/tests/expected_top.txt").read_text().split()
if got != want:
    print(f"top IPs differ: got {got}, want {want}")
    sys.exit(1)
print("top IPs match")
