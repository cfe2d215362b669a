"""The agent's compare() runs in one isolated child interpreter; these tests check its answers."""
import json
import subprocess
import sys

import pytest

ORDERED = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
           "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0"]
PAIRS = [(ORDERED[i], ORDERED[i + 1]) for i in range(len(ORDERED) - 1)]
PAIRS += [(b, a) for a, b in PAIRS]
PAIRS += [("1.4.2", "1.4.2"), ("1.4.2+build.7", "1.4.2+exp.sha.5114f85"), ("3.0.0-rc.1+b1", "3.0.0-rc.1"),
          ("0.9.0", "0.10.0"), ("10.0.0", "9.99.99")]

CHILD = """
import json, sys
sys.path.insert(0, "/app")
from semver import compare
print("RESULT " + json.dumps([compare(a, b) for a, b in json.loads(sys.stdin.read())]))
"""


@pytest.fixture(scope="module")
def answers():
    proc = subprocess.run([sys.executable, "-I", "-c", CHILD], input=json.dumps(PAIRS), capture_output=True,
                          text=True, timeout=60, cwd="/tmp")
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    assert proc.returncode == 0 and len(lines) == 1, proc.stderr[-500:]
    got = json.loads(lines[0][len("RESULT "):])
    assert isinstance(got, list) and len(got) == len(PAIRS)
    return dict(zip(map(tuple, PAIRS), got))


def _is(value, want):
    return type(value) is int and value == want


@pytest.mark.parametrize("i", range(len(ORDERED) - 1))
def test_ordered_pairs(answers, i):
    assert _is(answers[(ORDERED[i], ORDERED[i + 1])], -1)
    assert _is(answers[(ORDERED[i + 1], ORDERED[i])], 1)


def test_equal_and_build_metadata(answers):
    assert _is(answers[("1.4.2", "1.4.2")], 0)
    assert _is(answers[("1.4.2+build.7", "1.4.2+exp.sha.5114f85")], 0)
    assert _is(answers[("3.0.0-rc.1+b1", "3.0.0-rc.1")], 0)


def test_numeric_not_lexical(answers):
    assert _is(answers[("0.9.0", "0.10.0")], -1)
    assert _is(answers[("10.0.0", "9.99.99")], 1)
