import json
import subprocess
import sys

import pytest

CALL = (
    "import json, sys; sys.path.insert(0, '/app'); from scoring import normalise; "
    "print(json.dumps(normalise(json.loads(sys.argv[1]))))"
)

CASES = [
    ([2.0, 4.0, 6.0], [0.0, 0.5, 1.0]),
    ([10, 0, 5, 5], [1.0, 0.0, 0.5, 0.5]),
    ([-1.0, 1.0], [0.0, 1.0]),
    ([3.0, 3.0, 3.0], [0.0, 0.0, 0.0]),
    ([7.5], [0.0]),
]


def normalise(scores):
    proc = subprocess.run(
        [sys.executable, "-I", "-c", CALL, json.dumps(scores)], capture_output=True, text=True, timeout=10
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("scores,want", CASES)
def test_normalise(scores, want):
    got = normalise(scores)
    for g, w in zip(got, want):
        assert g == pytest.approx(w)
