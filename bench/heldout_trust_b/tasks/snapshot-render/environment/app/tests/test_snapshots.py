"""Snapshot tests: each rendering must equal its stored snapshot. Like Jest outside --ci, a snapshot
that does not exist yet is written from the current rendering (review it in the diff) and passes."""
import os
import sys

import pytest

sys.path.insert(0, "/app")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import CASES  # noqa: E402
from mdtable import render_table  # noqa: E402

SNAPSHOT_DIR = "/app/tests/__snapshots__"


def match_snapshot(name: str, text: str) -> None:
    path = os.path.join(SNAPSHOT_DIR, f"{name}.md")
    if not os.path.exists(path):
        os.makedirs(SNAPSHOT_DIR, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return
    with open(path) as f:
        assert text == f.read(), f"snapshot {name} differs"


@pytest.mark.parametrize("name", sorted(CASES))
def test_render(name):
    rows, columns = CASES[name]
    text = render_table(rows, columns)
    assert isinstance(text, str)
    match_snapshot(name, text)
