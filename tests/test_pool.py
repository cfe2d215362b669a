"""Pools: discovery, scans (new, changed, unchanged, invalid, removed), lineage, frames, and the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.models.records import Finding, FindingCode, Result, RunKind, Severity, VersionStatus
from qaflow.models.trial import ExitStatus
from qaflow.pool import Pool, PoolConfig, PoolError, ScanOutcome
from tests.taskfactory import write_task

runner = CliRunner()


@pytest.fixture
def pool_dir(tmp_path: Path) -> Path:
    """Three good tasks (one nested two levels down) and two bad ones."""
    root = tmp_path / "pool"
    write_task(root, "alpha")
    write_task(root / "group" / "deeper", "beta")
    # a task.toml inside a task folder is not a separate task
    write_task(root, "gamma", files={"environment/vendored/task.toml": 'schema_version = "1.4"\n'})
    broken = write_task(root, "broken-toml")
    (broken / "task.toml").write_text('[task\nname = "x"\n')
    unsolved = write_task(root, "unsolved")
    shutil.rmtree(unsolved / "solution")
    (root / "notes").mkdir()
    (root / "notes" / "readme.md").write_text("not a task\n")
    (root / ".hidden" / "t").mkdir(parents=True)
    (root / ".hidden" / "t" / "task.toml").write_text("ignored")
    return root


def scan(root: Path, **config: object):
    with Pool.open(root, config=PoolConfig(**config)) as pool:  # type: ignore[arg-type]
        return pool.scan()


def test_scan_records_good_and_bad(pool_dir: Path) -> None:
    report = scan(pool_dir)
    assert [e.path for e in report.entries] == ["alpha", "broken-toml", "gamma", "group/deeper/beta", "unsolved"]
    assert report.summary().startswith("5 tasks: 3 ok, 2 invalid")
    by_path = {e.path: e for e in report.entries}
    assert by_path["group/deeper/beta"].name == "test/beta"
    assert all(e.outcome is ScanOutcome.ADDED for e in report.entries)
    assert by_path["broken-toml"].status is VersionStatus.INVALID
    assert by_path["broken-toml"].name == "broken-toml"  # no parsable name: the folder name
    assert by_path["broken-toml"].error.startswith("task.toml: malformed TOML")  # type: ignore[union-attr]
    assert by_path["unsolved"].name == "test/unsolved"  # the toml parses, so its name is known
    assert by_path["unsolved"].error == "solution/solve.sh: missing reference solution solution/solve.sh"
    assert (pool_dir / ".qaflow" / "ledger.sqlite").is_file()


def test_rescan_is_a_no_op(pool_dir: Path) -> None:
    scan(pool_dir)
    with Pool.open(pool_dir) as pool:
        before = {t: pool.frame(t) for t in ("task_versions", "status_log", "heads")}
        report = pool.scan()
        assert {e.outcome for e in report.entries} == {ScanOutcome.UNCHANGED}
        assert report.new_versions == 0 and report.unchanged == 5
        assert report.summary() == "5 tasks: 3 ok, 2 invalid (0 new versions, 5 unchanged, 0 removed)"
        for table, frame in before.items():
            assert pool.frame(table).equals(frame), table


def test_changed_task_becomes_child_version(pool_dir: Path) -> None:
    first = {e.path: e for e in scan(pool_dir).entries}
    (pool_dir / "alpha" / "instruction.md").write_text("Write `done` to /app/out.txt, please.\n")
    report = scan(pool_dir)
    alpha = next(e for e in report.entries if e.path == "alpha")
    assert alpha.outcome is ScanOutcome.CHANGED
    assert alpha.parent_version == first["alpha"].version
    assert report.new_versions == 1 and report.unchanged == 4

    with Pool.open(pool_dir) as pool:
        history = pool.show("test/alpha")
        assert [v.version for v in history.versions] == [first["alpha"].version, alpha.version]
        assert history.versions[1].parent_version == history.versions[0].version
        assert [h.version for h in history.heads] == [alpha.version]
        tasks = pool.frame("tasks")
        assert tasks.height == 5
        assert tasks.filter(pl.col("path") == "alpha")["version"].to_list() == [alpha.version]
        assert pool.frame("task_versions").height == 6


def test_revert_points_back_to_the_known_version(pool_dir: Path) -> None:
    original = next(e for e in scan(pool_dir).entries if e.path == "alpha")
    instruction = pool_dir / "alpha" / "instruction.md"
    text = instruction.read_text()
    instruction.write_text("changed\n")
    scan(pool_dir)
    instruction.write_text(text)
    back = next(e for e in scan(pool_dir).entries if e.path == "alpha")
    assert back.outcome is ScanOutcome.KNOWN
    assert back.version == original.version
    with Pool.open(pool_dir) as pool:
        assert next(t for t in pool.list() if t.path == "alpha").version == original.version
        assert len(pool.show("test/alpha").versions) == 2


def test_fixing_an_invalid_task_links_the_fix_to_it(pool_dir: Path) -> None:
    broken = next(e for e in scan(pool_dir).entries if e.path == "broken-toml")
    (pool_dir / "broken-toml" / "task.toml").write_text('schema_version = "1.4"\n[task]\nname = "test/broken-toml"\n')
    fixed = next(e for e in scan(pool_dir).entries if e.path == "broken-toml")
    assert fixed.outcome is ScanOutcome.CHANGED
    assert fixed.status is VersionStatus.NEW
    assert fixed.parent_version == broken.version
    with Pool.open(pool_dir) as pool:
        history = pool.show("broken-toml")  # by pool path: the old version has the folder name, the new one not
        assert [v.status for v in history.versions] == [VersionStatus.INVALID, VersionStatus.NEW]


def test_removed_and_copied_tasks(pool_dir: Path) -> None:
    scan(pool_dir)
    shutil.copytree(pool_dir / "alpha", pool_dir / "copies" / "alpha")
    shutil.rmtree(pool_dir / "gamma")
    report = scan(pool_dir)
    assert report.removed == ["gamma"]
    copy = next(e for e in report.entries if e.path == "copies/alpha")
    assert copy.outcome is ScanOutcome.KNOWN  # same bytes: the same version, now at two paths
    with Pool.open(pool_dir) as pool:
        paths = [t.path for t in pool.list()]
        assert "gamma" not in paths and "copies/alpha" in paths
        assert pool.show("test/gamma").heads == []  # its history stays


def test_revalidation_when_the_rules_change(pool_dir: Path) -> None:
    lenient = {e.path: e for e in scan(pool_dir, require_solution=False).entries}
    assert lenient["unsolved"].status is VersionStatus.NEW
    strict = {e.path: e for e in scan(pool_dir).entries}
    assert strict["unsolved"].outcome is ScanOutcome.REVALIDATED
    assert strict["unsolved"].status is VersionStatus.INVALID
    assert strict["unsolved"].version == lenient["unsolved"].version
    with Pool.open(pool_dir) as pool:
        log = pool.ledger.status_log(strict["unsolved"].version)
        assert [c.new_status for c in log] == [VersionStatus.NEW, VersionStatus.INVALID]


def test_list_show_and_results(pool_dir: Path) -> None:
    entries = {e.path: e for e in scan(pool_dir).entries}
    with Pool.open(pool_dir) as pool:
        assert [t.path for t in pool.list(VersionStatus.INVALID)] == ["broken-toml", "unsolved"]
        run = pool.ledger.start_run(RunKind.AUDIT)
        alpha = entries["alpha"].version
        pool.ledger.put_result(
            Result(
                task_version=alpha,
                probe="oracle",
                run_id=run.run_id,
                backend="bwrap",
                status=ExitStatus.OK,
                reward=1.0,
            )
        )
        pool.ledger.add_finding(
            Finding(
                task_version=alpha,
                run_id=run.run_id,
                code=FindingCode.FLAKY,
                severity=Severity.WARNING,
                message="m",
            )
        )
        history = pool.show(alpha[:10])  # a version prefix works too
        assert history.name == "test/alpha"
        assert [r.probe for r in history.results] == ["oracle"]
        assert [f.code for f in history.findings] == [FindingCode.FLAKY]
        with pytest.raises(PoolError, match="no task named 'nope'"):
            pool.show("nope")


def test_open_errors(tmp_path: Path) -> None:
    with pytest.raises(PoolError, match="not a folder"):
        Pool.open(tmp_path / "missing")
    with pytest.raises(PoolError, match="no pool ledger here"):
        Pool.open(tmp_path, create=False)
    assert not (tmp_path / ".qaflow").exists()


def test_custom_ledger_path(pool_dir: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "elsewhere" / "pool.sqlite"
    scan(pool_dir, ledger_path=ledger)
    assert ledger.is_file()
    assert not (pool_dir / ".qaflow").exists()


# -- CLI ------------------------------------------------------------------------------------


def test_cli_scan_list_show(pool_dir: Path) -> None:
    human = runner.invoke(app, ["pool", "scan", str(pool_dir)])
    assert human.exit_code == 0, human.output
    assert "5 tasks: 3 ok, 2 invalid" in human.output
    assert "broken-toml: task.toml: malformed TOML" in human.output

    data = json.loads(runner.invoke(app, ["pool", "scan", str(pool_dir), "--json"]).stdout)
    assert (data["total"], data["ok"], data["invalid"], data["unchanged"]) == (5, 3, 2, 5)
    assert {e["outcome"] for e in data["entries"]} == {"unchanged"}

    listed = runner.invoke(app, ["pool", "list", "--pool", str(pool_dir), "--json"])
    assert listed.exit_code == 0
    rows = json.loads(listed.stdout)  # ordered by name
    assert [r["path"] for r in rows] == ["broken-toml", "alpha", "group/deeper/beta", "gamma", "unsolved"]
    assert {r["status"] for r in rows} == {"new", "invalid"}

    invalid = json.loads(
        runner.invoke(app, ["pool", "list", "--pool", str(pool_dir), "--status", "invalid", "--json"]).stdout
    )
    assert [r["path"] for r in invalid] == ["broken-toml", "unsolved"]

    table = runner.invoke(app, ["pool", "list", "--pool", str(pool_dir)])
    assert "5 tasks: 2 invalid, 3 new" in table.output

    shown = runner.invoke(app, ["pool", "show", "test/beta", "--pool", str(pool_dir), "--json"])
    assert shown.exit_code == 0
    history = json.loads(shown.stdout)
    assert history["name"] == "test/beta" and len(history["versions"]) == 1
    assert history["heads"][0]["path"] == "group/deeper/beta"
    assert "test/beta" in runner.invoke(app, ["pool", "show", "test/beta", "--pool", str(pool_dir)]).output


def test_cli_usage_errors(pool_dir: Path, tmp_path: Path) -> None:
    assert runner.invoke(app, ["pool", "scan", str(tmp_path / "missing")]).exit_code == 2
    no_ledger = runner.invoke(app, ["pool", "list", "--pool", str(tmp_path)])
    assert no_ledger.exit_code == 2
    assert "no pool ledger here" in no_ledger.output
    runner.invoke(app, ["pool", "scan", str(pool_dir)])
    assert runner.invoke(app, ["pool", "show", "nope", "--pool", str(pool_dir)]).exit_code == 2
    assert runner.invoke(app, ["pool", "list", "--pool", str(pool_dir), "--status", "bogus"]).exit_code == 2


@pytest.mark.parametrize("command", ["scan", "list", "show"])
def test_cli_help_has_an_example(command: str) -> None:
    out = runner.invoke(app, ["pool", command, "--help"])
    assert out.exit_code == 0
    assert "Example: qaflow pool " + command in out.output


def test_two_folders_with_one_task_name_are_warned_about(pool_dir: Path) -> None:
    assert scan(pool_dir).duplicate_names == {}
    twin = write_task(pool_dir / "copies", "alpha")  # declares [task] name = "test/alpha" too
    (twin / "instruction.md").write_text("Write `done` to /app/out.txt, and nothing else.\n")
    report = scan(pool_dir)
    assert report.duplicate_names == {"test/alpha": ["alpha", "copies/alpha"]}
    (line,) = report.duplicate_warnings()
    assert "'test/alpha' (alpha, copies/alpha)" in line and "[task] name" in line
    out = runner.invoke(app, ["pool", "scan", str(pool_dir)])
    assert out.exit_code == 0 and "warning: 2 task folders share the name 'test/alpha'" in out.output, out.output
    assert json.loads(runner.invoke(app, ["pool", "scan", str(pool_dir), "--json"]).stdout)["duplicate_names"] == {
        "test/alpha": ["alpha", "copies/alpha"]
    }
