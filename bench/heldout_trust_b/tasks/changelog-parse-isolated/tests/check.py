"""Runs the parser (with the image's PYTHONPATH, from a scratch folder) and compares its JSON, with strict
types, in this isolated interpreter."""
import json
import subprocess
import sys
import tempfile


def same(x, y):
    if type(x) is not type(y):
        return False
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return len(x) == len(y) and all(same(p, q) for p, q in zip(x, y))
    return x == y


with tempfile.TemporaryDirectory() as scratch:
    proc = subprocess.run([sys.executable, "/app/changelog.py", "/tests/CHANGELOG.md"], capture_output=True,
                          text=True, timeout=60, cwd=scratch)
try:
    got = json.loads(proc.stdout)
except ValueError:
    print("no JSON output", proc.stderr[-300:])
    sys.exit(1)
want = json.load(open("/tests/expected.json"))
ok = proc.returncode == 0 and same(got, want)
print("ok" if ok else f"got {got!r}")
sys.exit(0 if ok else 1)
