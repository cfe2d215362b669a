"""Audits of bundled fixtures for tests: copy them into a pool, run `qaflow audit` through the CLI."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path

from typer.testing import CliRunner

from qaflow.cli import app
from tests.conftest import TASKS_REPO


def audit_fixtures(names: Iterable[str], backend: str, root: Path, *, repeats: int = 1) -> dict[str, dict]:
    """The JSON audits, by folder name, of copies of the `tasks_repo` tasks `names` in `root/pool`
    (offline builds, no runtime network), as `qaflow audit --json` writes them."""
    pool = root / "pool"
    for name in names:
        shutil.copytree(TASKS_REPO / name, pool / name)
    report = root / "audit.json"
    args = ["audit", str(pool), "--backend", backend, "--repeats", str(repeats), "--json", str(report)]
    out = CliRunner().invoke(app, [*args, "--offline", "--network", "none"])
    assert out.exit_code == 0, out.output
    return {Path(a["path"]).name: a for a in json.loads(report.read_text())}
