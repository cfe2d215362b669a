"""Reports (`--json`, `--html`) are written whole or not at all (issue 41, item 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qaflow.atomic_file import write_text_atomic
from qaflow.audit.report import build_report, write_html


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "audit.json"
    path.write_text('{"old": true}')
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(path, '{"new": "\udcff"}')  # fails part-way, as a kill mid-write would
    assert path.read_text() == '{"old": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.json"]
    write_text_atomic(path, '{"new": true}')
    assert path.read_text() == '{"new": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.json"]


def test_the_html_report_goes_through_a_rename(tmp_path: Path) -> None:
    path = tmp_path / "audit.html"
    path.write_text("old")
    old_inode = path.stat().st_ino
    write_html(path, build_report([], backend="bwrap", run_ids=["r"]))
    assert path.stat().st_ino != old_inode, "the report was rewritten in place, not replaced whole"
    assert "<html" in path.read_text().lower()
