"""Audits of bundled fixtures for tests: copy them into a pool, run `qaflow audit` through the CLI.

The labelled pool (`tasks_repo`) is audited once per backend per session (`labelled_audit`): the labels
test checks every verdict of it, and where that test is part of the session, every other test that
needs the audit of some labelled tasks (`audit_fixtures`) reads theirs from the same run instead of
auditing them again. Alone (`pytest tests/test_audit_answers.py`), such a test audits only its tasks.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.task import tree_hash
from tests.conftest import TASKS_REPO

LABELS: dict[str, dict[str, object]] = json.loads((TASKS_REPO / "labels.json").read_text())
OFFLINE = ["--offline", "--network", "none"]
REPEATS = {"bwrap": "3", "docker": "2"}
"""A coin-flip verifier escapes 3 oracle runs with probability 12.5%, but then its 8 reruns on the observed
state must agree too and, when they do not, two rounds of 8 more oracle trials (the second because the reruns
gave both outcomes) must all agree with the first trial: it escapes with probability about 2 x 0.5^17 < 0.002%.
The docker audit, of a sample and there to agree with bwrap's, takes 2."""
JOBS = "3"
LABELLED_AUDIT_TIMEOUT_S = 1500
"""One whole-pool audit (the bundled pool, offline builds from scratch) on a loaded 2-core machine."""

DOCKER_TOO = [
    "stock-lookup-service",
    "fix-leap-year",
    "word-length-histogram",
    "timesheet-hours",
    "word-counts-shape-only",
    # what the answer, history, expected-rewrite and observe tests read from the shared run
    "sort-guest-list",
    "total-orders-by-customer",
    "restore-notes-backup",
    "fix-title-case",
    "filter-contacts-allowlist",
    "tally-survey-answers",
    "rank-essay-scores",
    "tally-poll-votes",
    "line-length-histogram",
]
"""Where the backends differ most: a service left running, the agent's module in the verifier's process, pytest's
config chain, a hidden file linked to, mutants of deliverables only; and the fixtures other tests check on
docker."""


FROM_REWARDS_ALONE = {"broken_solution", "false_rejection", "flaky", "invalid_task", "unverified_requirement"}
"""Codes judged from the task's files and the trials' rewards alone, the same on every backend: docker does not
repeat a task for them (CI's time; its trials' rewards are checked by every task it does audit)."""


def _docker_sample() -> list[str]:
    """The tasks audited on docker as well: the first task of each code a backend could decide otherwise,
    every task whose label depends on the backend, the network or a warning, every twelfth control (sorted)
    and `DOCKER_TOO`. bwrap audits them all."""
    names = sorted(LABELS)
    chosen = {n for n in names if {"backend_codes", "offline_codes", "warnings"} & set(LABELS[n])}
    codes = sorted({c for label in LABELS.values() for c in label["codes"]} - FROM_REWARDS_ALONE)  # type: ignore[attr-defined]
    for code in codes:
        chosen |= set([n for n in names if code in LABELS[n]["codes"]][:1])  # type: ignore[operator]
    chosen |= set([n for n in names if not LABELS[n]["codes"]][::12])
    return sorted(chosen | set(DOCKER_TOO))


SAMPLES = {"docker": _docker_sample(), "bwrap": sorted(LABELS)}
"""The pool is audited on both backends; the docker audit takes a covering sample (CI's time)."""
SHARED: set[str] = set()
"""Backends whose labelled audit this session runs anyway (set at collection by tests/conftest.py)."""


@dataclass(frozen=True)
class PoolAudit:
    pool: Path
    audits: dict[str, dict]
    """`qaflow audit --json`'s entries by folder name."""
    html: Path
    output: str


_LABELLED: dict[str, PoolAudit] = {}


def _run_audit(pool: Path, backend: str, root: Path, extra: list[str]) -> PoolAudit:
    report, html = root / f"audit-{backend}.json", root / f"audit-{backend}.html"
    args = ["audit", str(pool), "--backend", backend, "--json", str(report), "--html", str(html), *extra, *OFFLINE]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    audits = {Path(a["path"]).name: a for a in json.loads(report.read_text())["tasks"]}
    return PoolAudit(pool=pool, audits=audits, html=html, output=out.output)


def labelled_audit(backend: str, root: Path) -> PoolAudit:
    """The audit of a copy of the labelled pool's sample for `backend`, once per session; the task folders
    must come out of it untouched."""
    if backend not in _LABELLED:
        pool = root / f"pool-{backend}"
        for name in SAMPLES[backend]:
            shutil.copytree(TASKS_REPO / name, pool / name)
        before = {p.name: tree_hash(p) for p in pool.iterdir() if p.is_dir()}
        done = _run_audit(pool, backend, root, ["--repeats", REPEATS[backend], "--jobs", JOBS])
        after = {p.name: tree_hash(p) for p in pool.iterdir() if p.is_dir() and p.name != ".qaflow"}
        assert after == before, "the audit modified a task folder"
        _LABELLED[backend] = done
    return _LABELLED[backend]


def audit_fixtures(names: Iterable[str], backend: str, root: Path, *, repeats: int = 1) -> PoolAudit:
    """The audits of the `tasks_repo` tasks `names` (offline builds, no runtime network): from the session's
    labelled audit where it runs anyway and covers them, else of copies of them in `root/pool`."""
    names = list(names)
    if backend in SHARED and set(names) <= set(SAMPLES[backend]):
        shared = labelled_audit(backend, root.parent / f"labelled-{backend}")
        return PoolAudit(
            pool=shared.pool, audits={n: shared.audits[n] for n in names}, html=shared.html, output=shared.output
        )
    pool = root / "pool"
    for name in names:
        shutil.copytree(TASKS_REPO / name, pool / name)
    before = {name: tree_hash(pool / name) for name in names}
    done = _run_audit(pool, backend, root, ["--repeats", str(repeats), "--jobs", "2"])
    assert {name: tree_hash(pool / name) for name in names} == before, "the audit modified a task folder"
    return done


def only_a_failed_sink(observe: dict[str, Any]) -> bool:
    """No exploit trial ran on the task, or only record and replay's kitchen sink, without full reward."""
    ran = observe.get("exploits") or {}
    return set(ran) <= {"replay"} and all(e["reward"] != 1.0 for e in ran.values())
