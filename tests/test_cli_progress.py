"""Progress a log can read: with output not a terminal, one flushed line per finished item and a heartbeat
line whenever nothing finished for the heartbeat interval; on a terminal the bar prints no lines."""

from __future__ import annotations

import io
import re
import time

import pytest
from rich.console import Console

from qaflow.cli.progress import HEARTBEAT_ENV, RunProgress, heartbeat_s


def test_a_log_gets_a_line_per_item_and_a_heartbeat_while_nothing_finishes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HEARTBEAT_ENV, "0.2")
    log = io.StringIO()
    with RunProgress(Console(file=log, force_terminal=False), "audit", 2) as progress:
        progress.done("a: accepted, 1.0 s")
        time.sleep(0.75)
        progress.done("b: needs_repair (weak_verifier), 2.0 s")
    lines = log.getvalue().splitlines()
    assert (
        lines[0] == "audit 1/2 a: accepted, 1.0 s" and lines[-1] == "audit 2/2 b: needs_repair (weak_verifier), 2.0 s"
    )
    beats = lines[1:-1]
    assert 2 <= len(beats) <= 4, lines
    assert all(re.fullmatch(r"audit 1/2 running, 0m0\ds elapsed", b) for b in beats), beats


def test_an_unknown_total_is_left_out_and_a_bad_interval_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HEARTBEAT_ENV, "soon")
    assert heartbeat_s() == 30.0
    log = io.StringIO()
    with RunProgress(Console(file=log, force_terminal=False), "rollout") as progress:
        progress.done("t low #0 pass, 3.1 s")
        progress.set_total(4)
        progress.done("t low #1 pass, 2.9 s")
    assert log.getvalue().splitlines() == ["rollout 1 t low #0 pass, 3.1 s", "rollout 2/4 t low #1 pass, 2.9 s"]


def test_a_terminal_gets_the_bar_and_no_lines() -> None:
    screen = io.StringIO()
    with RunProgress(Console(file=screen, force_terminal=True, width=100), "audit", 1) as progress:
        progress.done("a: accepted, 1.0 s")
    assert "audit 1/1 a: accepted" not in screen.getvalue()
