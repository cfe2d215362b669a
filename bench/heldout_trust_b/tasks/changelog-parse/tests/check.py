"""Runs the parser and compares its JSON with the expected releases."""
import json
import subprocess
import sys

proc = subprocess.run([sys.executable, "/app/changelog.py", "/tests/CHANGELOG.md"], capture_output=True, text=True,
                      timeout=60)
if proc.returncode != 0:
    print(proc.stderr)
    sys.exit(1)
got = json.loads(proc.stdout)
want = json.load(open("/tests/expected.json"))
print("ok" if got == want else f"got {got!r}")
sys.exit(0 if got == want else 1)
