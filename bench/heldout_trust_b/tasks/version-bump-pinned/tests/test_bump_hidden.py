"""bump() runs in one isolated child interpreter (cwd /tmp, /app on its path); the tests check its answers."""
import json
import subprocess
import sys

import pytest

GOOD = [
    ("1.2.3", "major", "2.0.0"), ("1.2.3", "minor", "1.3.0"), ("1.2.3", "patch", "1.2.4"),
    ("1.2.3rc1", "patch", "1.2.3"), ("2.1.0rc2", "major", "3.0.0"), ("0.9.9b3", "minor", "0.10.0"),
    ("1.0.0a1", "pre", "1.0.0a2"), ("1.0.0b9", "pre", "1.0.0b10"), ("1.0.0", "pre", "1.0.1rc1"),
]
BAD = [("1.2", "patch"), ("1.2.3", "build"), ("v1.2.3", "major"), ("1.2.3c1", "pre")]
CHILD = """
import json, sys
sys.path.insert(0, "/app")
from bumpver import bump
out = []
for version, part in json.loads(sys.stdin.read()):
    try:
        out.append(["ok", bump(version, part)])
    except ValueError:
        out.append(["ValueError", None])
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def answers():
    calls = [[v, p] for v, p, _ in GOOD] + [list(c) for c in BAD]
    proc = subprocess.run([sys.executable, "-I", "-c", CHILD], input=json.dumps(calls), capture_output=True,
                          text=True, timeout=60, cwd="/tmp")
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    assert proc.returncode == 0 and len(lines) == 1, proc.stderr[-500:]
    got = json.loads(lines[0][len("RESULT "):])
    assert len(got) == len(calls)
    return {tuple(c): tuple(g) for c, g in zip(calls, got)}


@pytest.mark.parametrize("version,part,want", GOOD)
def test_bump(answers, version, part, want):
    assert answers[(version, part)] == ("ok", want)


@pytest.mark.parametrize("version,part", BAD)
def test_rejects(answers, version, part):
    assert answers[(version, part)] == ("ValueError", None)
