import json
import subprocess
import sys

import pytest

CALL = "import json, sys; sys.path.insert(0, '/app/src'); from slugkit import slugify; print(json.dumps(slugify(sys.argv[1])))"


def slugify(text):
    proc = subprocess.run([sys.executable, "-I", "-c", CALL, text], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(
    "text,want",
    [
        ("Hello World", "hello-world"),
        ("  Trim  me  ", "trim-me"),
        ("Rock & Roll!", "rock-roll"),
        ("already-a-slug", "already-a-slug"),
        ("Crème brûlée", "creme-brulee"),
        ("a--b__c", "a-b-c"),
        ("", ""),
    ],
)
def test_slugify(text, want):
    assert slugify(text) == want
