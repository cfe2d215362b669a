"""Snapshot tests in CI mode: the renderings (made by the agent's module in an isolated child) must equal
the reviewed snapshots kept with these tests; a missing snapshot fails."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cases import CASES  # noqa: E402

SNAPSHOT_DIR = os.path.join(HERE, "__snapshots__")
CHILD = """
import json, sys
sys.path.insert(0, "/app")
sys.path.insert(1, sys.argv[1])
from cases import CASES
from mdtable import render_table
print("RESULT " + json.dumps({n: render_table(r, c) for n, (r, c) in CASES.items()}))
"""


@pytest.fixture(scope="module")
def renderings():
    proc = subprocess.run([sys.executable, "-I", "-c", CHILD, HERE], capture_output=True, text=True,
                          timeout=60, cwd="/tmp")
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    assert proc.returncode == 0 and len(lines) == 1, proc.stderr[-500:]
    return json.loads(lines[0][len("RESULT "):])


def match_snapshot(name: str, text: str) -> None:
    path = os.path.join(SNAPSHOT_DIR, f"{name}.md")
    assert os.path.exists(path), f"snapshot {name} missing (CI mode)"
    with open(path) as f:
        assert text == f.read(), f"snapshot {name} differs"


@pytest.mark.parametrize("name", sorted(CASES))
def test_render(renderings, name):
    text = renderings.get(name)
    assert type(text) is str
    match_snapshot(name, text)
