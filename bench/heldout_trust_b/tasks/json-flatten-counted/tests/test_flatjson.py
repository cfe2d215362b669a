"""The agent's module runs in one isolated child; these tests check what it printed."""
import json
import subprocess
import sys

import pytest

DOCS = [
    ({"a": [{"b": 1}, 2], "c": {"d": None}}, {"a.0.b": 1, "a.1": 2, "c.d": None}),
    ({"a": {}, "b": []}, {"a": {}, "b": []}),
    (7, {"": 7}),
    ({"x": {"y": {"z": "deep"}}}, {"x.y.z": "deep"}),
]
CHILD = """
import json, sys
sys.path.insert(0, "/app")
from flatjson import flatten, unflatten
docs = json.loads(sys.stdin.read())
out = {"flat": [flatten(d) for d in docs], "round": [unflatten(flatten(d)) for d in docs],
       "slash": flatten({"a": {"b": 1}}, sep="/")}
try:
    flatten({"a.b": 1})
    out["error"] = None
except ValueError:
    out["error"] = "ValueError"
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def got():
    proc = subprocess.run([sys.executable, "-I", "-c", CHILD], input=json.dumps([d for d, _ in DOCS]),
                          capture_output=True, text=True, timeout=60, cwd="/tmp")
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    assert proc.returncode == 0 and len(lines) == 1, proc.stderr[-500:]
    return json.loads(lines[0][len("RESULT "):])


@pytest.mark.parametrize("i", range(len(DOCS)))
def test_flatten(got, i):
    assert got["flat"][i] == DOCS[i][1]


@pytest.mark.parametrize("i", range(len(DOCS)))
def test_round_trip(got, i):
    assert got["round"][i] == DOCS[i][0]


def test_custom_separator(got):
    assert got["slash"] == {"a/b": 1}


def test_key_with_separator(got):
    assert got["error"] == "ValueError"
