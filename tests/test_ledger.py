"""The ledger: schema and migrations, versions and status, keyed results, findings, frames,
threads, and recovery after a SIGKILL in the middle of writing."""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import polars as pl
import pytest

from qaflow.ledger import Ledger, LedgerError, StatusWriter
from qaflow.ledger import db as ledger_module
from qaflow.ledger.schema import MIGRATIONS
from qaflow.models.audit import AuditRecord, Verdict
from qaflow.models.records import (
    Finding,
    FindingCode,
    Result,
    ResultKey,
    RunKind,
    Severity,
    TaskVersion,
    VersionStatus,
    utcnow,
)
from qaflow.models.trial import ExitStatus


def vid(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()


def version(label: str, *, name: str = "t", parent: str | None = None, status: VersionStatus = VersionStatus.NEW):
    return TaskVersion(
        version=vid(label),
        name=name,
        source="local",
        parent_version=vid(parent) if parent else None,
        path=name,
        status=status,
        created_at=utcnow(),
    )


@pytest.fixture
def ledger(tmp_path: Path):
    with Ledger(tmp_path / "ledger.sqlite") as led:
        yield led


def result(run_id: str, label: str = "a", probe: str = "nop", attempt: int = 0, reward: float | None = 0.0) -> Result:
    return Result(
        task_version=vid(label),
        probe=probe,
        attempt=attempt,
        run_id=run_id,
        backend="bwrap",
        status=ExitStatus.OK,
        reward=reward,
        payload={"stdout": "x"},
        duration_s=0.5,
    )


# -- file settings and schema ------------------------------------------------------------------


def test_pragmas_and_schema(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "ledger.sqlite"
    with Ledger(path, busy_timeout_s=7) as led:
        conn = led._reader()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 7000
        assert led.schema_version == ledger_module.LATEST_VERSION
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        assert {"meta", "task_versions", "runs", "results", "findings", "tasks", "heads", "status_log"} <= tables


def test_reopen_keeps_data_and_does_not_remigrate(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as led:
        led.add_version(version("a"))
    with Ledger(path) as led:
        assert led.get_version(vid("a")) is not None
        assert led.schema_version == ledger_module.LATEST_VERSION


def test_migrations_apply_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as led:
        led.add_version(version("a"))
    latest = ledger_module.LATEST_VERSION
    later = dict(ledger_module.MIGRATIONS)
    later[latest + 1] = ("CREATE TABLE extra (id INTEGER PRIMARY KEY, task_version TEXT NOT NULL)",)
    later[latest + 2] = ("ALTER TABLE extra ADD COLUMN effort TEXT NOT NULL DEFAULT 'off'",)
    monkeypatch.setattr(ledger_module, "MIGRATIONS", later)
    monkeypatch.setattr(ledger_module, "LATEST_VERSION", latest + 2)
    with Ledger(path) as led:
        assert led.schema_version == latest + 2
        columns = [r["name"] for r in led._reader().execute("PRAGMA table_info(extra)")]
        assert columns == ["id", "task_version", "effort"]
        assert led.get_version(vid("a")) is not None


STAMP = "2026-01-01T00:00:00.000000+00:00"


def _ledger_at_schema(path: Path, schema: int) -> sqlite3.Connection:
    """A ledger file as a release whose last migration was `schema` wrote it."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for number in range(1, schema + 1):
        for statement in MIGRATIONS[number]:
            conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(schema),))
    return conn


def test_audits_kept_only_as_status_reasons_by_older_ledgers_become_audit_rows(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    conn = _ledger_at_schema(path, 2)
    for label in "abc":
        conn.execute(
            "INSERT INTO task_versions VALUES (?, 't', 'local', NULL, 't', 'new', NULL, ?)",
            (vid(label), STAMP),
        )
    logged = [
        ("a", "audit: false_pass, weak_verifier", "r1"),
        ("a", "audit: clean", "r2"),
        ("b", "audit: reward_tamper", None),
        ("b", "repair: round 1", "r3"),
        ("c", "pipeline: status in OUT/pool", None),
        ("c", "Audit: clean (typed by hand)", "r4"),
    ]
    for n, (label, reason, run) in enumerate(logged):
        conn.execute(
            "INSERT INTO status_log(version, old_status, new_status, reason, run_id, created_at)"
            " VALUES (?, 'new', 'accepted', ?, ?, ?)",
            (vid(label), reason, run, f"2026-01-01T00:00:0{n}.000000+00:00"),
        )
    conn.commit()
    conn.close()
    with Ledger(path) as led:
        assert led.schema_version == ledger_module.LATEST_VERSION
        got = [(a.task_version, a.run_id, a.verdict, a.codes, a.harness) for a in led.audits()]
        assert got == [
            (vid("a"), "r1", Verdict.NEEDS_REPAIR, ["false_pass", "weak_verifier"], None),
            (vid("a"), "r2", Verdict.ACCEPTED, [], None),
            (vid("b"), None, Verdict.NEEDS_REPAIR, ["reward_tamper"], None),
        ]
        latest = led.latest_audits()
        assert {v: (a.summary, a.run_id) for v, a in latest.items()} == {vid("a"): ("clean", "r2"), vid("b"): (
            "reward_tamper", None)}  # fmt: skip


def test_results_carry_their_probe_as_typed_columns_older_ledgers_included(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    conn = _ledger_at_schema(path, 2)
    conn.execute(
        "INSERT INTO task_versions VALUES (?, 't', 'local', NULL, 't', 'new', NULL, ?)",
        (vid("a"), STAMP),
    )
    conn.execute("INSERT INTO runs VALUES ('r1', 'audit', '2026-01-01T00:00:00.000000+00:00', NULL, '{}', 'h')")
    old = ["nop", "mutant:empty:app/out.txt", "2/exploit:always-equal", "enabled:mutant:m1", "somebody-elses"]
    for probe in old:
        conn.execute(
            "INSERT INTO results VALUES (?, ?, 0, 'r1', 'bwrap', 'ok', 0.0, '{}', 0.1, ?)",
            (vid("a"), probe, STAMP),
        )
    conn.commit()
    conn.close()
    typed = "SELECT probe, probe_kind, probe_name, probe_step FROM results ORDER BY rowid"
    with Ledger(path) as led:
        led.put_result(result("r1", probe="3/mutant:wrong-value:out.json"))
        rows = [tuple(r) for r in led._reader().execute(typed)]
        assert rows == [
            ("nop", "nop", None, None),
            ("mutant:empty:app/out.txt", "mutant", "empty:app/out.txt", None),
            ("2/exploit:always-equal", "exploit", "always-equal", "2"),
            ("enabled:mutant:m1", "enabled:mutant", "m1", None),
            ("somebody-elses", None, None, None),
            ("3/mutant:wrong-value:out.json", "mutant", "wrong-value:out.json", "3"),
        ]
        assert [r.probe for r in led.results()] == [row[0] for row in rows], "results read back as written"
        assert led.frame("results").filter(pl.col("probe_kind") == "mutant").height == 2


def test_every_audit_is_a_row_even_one_that_leaves_the_status_as_it_was(ledger: Ledger) -> None:
    ledger.add_version(version("a"))
    runs = [ledger.start_run(RunKind.AUDIT).run_id for _ in range(3)]
    verdicts = [(Verdict.ACCEPTED, []), (Verdict.ACCEPTED, []), (Verdict.NEEDS_REPAIR, ["leak", "flaky"])]
    for run, (verdict, codes) in zip(runs, verdicts, strict=True):
        audit = AuditRecord(task_version=vid("a"), run_id=run, verdict=verdict, codes=codes, harness=["h"])
        ledger.record_audit(audit)
    assert [(a.run_id, a.summary, a.harness) for a in ledger.audits(task_version=vid("a"))] == [
        (runs[0], "clean", ["h"]), (runs[1], "clean", ["h"]), (runs[2], "flaky, leak", ["h"])
    ]  # fmt: skip
    assert [c.reason for c in ledger.status_log(vid("a"))] == ["recorded", "audit: clean", "audit: flaky, leak"]
    assert ledger.get_version(vid("a")).status is VersionStatus.NEEDS_REPAIR
    assert ledger.frame("audits").height == 3


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    Ledger(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError) as info:
        Ledger(path)
    assert info.value.path == path
    assert "schema version 999 is newer" in info.value.reason


def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(LedgerError) as info:
        Ledger(path)
    assert info.value.path == path


# -- versions, status, lineage -----------------------------------------------------------------


def test_versions_status_and_lineage(ledger: Ledger) -> None:
    ledger.add_version(version("a"))
    ledger.add_version(version("b", parent="a"))
    ledger.add_version(version("c", parent="b"))
    ledger.add_version(version("other", name="u"))
    assert [v.version for v in ledger.lineage(vid("b"))] == [vid("a"), vid("b"), vid("c")]
    assert [v.version for v in ledger.versions(name="t")] == [vid("a"), vid("b"), vid("c")]
    assert ledger.latest_version("t").version == vid("c")  # type: ignore[union-attr]
    assert ledger.find_versions(vid("other")[:8])[0].name == "u"

    updated = ledger.set_status(vid("b"), VersionStatus.NEEDS_REPAIR, by=StatusWriter.AUDIT, reason="audit: false_pass")
    assert updated.status is VersionStatus.NEEDS_REPAIR
    assert ledger.get_version(vid("b")).status is VersionStatus.NEEDS_REPAIR  # type: ignore[union-attr]
    ledger.set_status(vid("b"), VersionStatus.NEEDS_REPAIR, by=StatusWriter.AUDIT, reason="again")  # same status: no-op
    log = ledger.status_log(vid("b"))
    assert [(c.old_status, c.new_status, c.reason) for c in log] == [
        (None, VersionStatus.NEW, "recorded"),
        (VersionStatus.NEW, VersionStatus.NEEDS_REPAIR, "audit: false_pass"),
    ]
    assert [v.version for v in ledger.versions(status=VersionStatus.NEEDS_REPAIR)] == [vid("b")]


def test_invalid_keeps_error_until_status_changes(ledger: Ledger) -> None:
    ledger.add_version(version("a"))
    bad = ledger.set_status(
        vid("a"), VersionStatus.INVALID, by=StatusWriter.SCAN, reason="scan", error="task.toml: malformed TOML"
    )
    assert bad.error == "task.toml: malformed TOML"
    fine = ledger.set_status(vid("a"), VersionStatus.NEW, by=StatusWriter.SCAN, reason="loads now")
    assert fine.error is None
    assert ledger.get_version(vid("a")).error is None  # type: ignore[union-attr]


def test_version_rules(ledger: Ledger) -> None:
    ledger.add_version(version("a"))
    with pytest.raises(LedgerError, match="already recorded"):
        ledger.add_version(version("a"))
    with pytest.raises(LedgerError, match=r"parent version \w+ is not recorded"):
        ledger.add_version(version("b", parent="missing"))
    with pytest.raises(LedgerError, match="unknown task version"):
        ledger.set_status(vid("zzz"), VersionStatus.RETIRED, by=StatusWriter.PIPELINE, reason="x")


def test_status_moves_outside_the_table_are_refused_and_leave_nothing(ledger: Ledger) -> None:
    ledger.add_version(version("a"))
    for writer, status in [
        (StatusWriter.SCAN, VersionStatus.ACCEPTED),  # loading a folder never accepts it
        (StatusWriter.REPAIR, VersionStatus.ACCEPTED),  # a repair is accepted by a fresh audit, not by itself
        (StatusWriter.AUDIT, VersionStatus.REPAIRED),
        (StatusWriter.GATE, VersionStatus.NEEDS_REPAIR),
    ]:
        with pytest.raises(LedgerError, match=f"{writer.value} may not move .* from new to {status.value}"):
            ledger.set_status(vid("a"), status, by=writer, reason="x")
    assert ledger.get_version(vid("a")).status is VersionStatus.NEW  # type: ignore[union-attr]
    assert len(ledger.status_log(vid("a"))) == 1
    ledger.set_status(vid("a"), VersionStatus.NEEDS_REPAIR, by=StatusWriter.AUDIT, reason="audit: flaky")
    ledger.set_status(vid("a"), VersionStatus.UNRESOLVED, by=StatusWriter.REPAIR, reason="repair: gave up")
    ledger.add_version(version("r", status=VersionStatus.RETIRED))
    with pytest.raises(LedgerError, match=r"audit may not move .* from retired"):
        ledger.set_status(vid("r"), VersionStatus.ACCEPTED, by=StatusWriter.AUDIT, reason="x")


def test_an_audit_verdict_accepts_a_loaded_version_and_only_the_gate_accepts_a_hardened_one(ledger: Ledger) -> None:
    ledger.add_version(version("a"))
    hardened = version("h", parent="a").model_copy(update={"source": "harden:process_chain"})
    repaired = version("r", parent="a").model_copy(update={"source": "repair:rules"})
    ledger.add_version(hardened)
    ledger.add_version(repaired)
    assert (hardened.origin, repaired.origin, version("x").origin) == ("harden", "repair", None)
    assert ledger.record_verdict(vid("a"), clean=True, reason="audit: clean").status is VersionStatus.ACCEPTED
    assert ledger.record_verdict(vid("h"), clean=True, reason="audit: clean").status is VersionStatus.CANDIDATE
    assert ledger.record_verdict(vid("r"), clean=True, reason="audit: clean").status is VersionStatus.ACCEPTED
    assert ledger.record_verdict(vid("h"), clean=False, reason="audit: leak").status is VersionStatus.NEEDS_REPAIR
    gate = ledger.set_status(vid("h"), VersionStatus.ACCEPTED, by=StatusWriter.GATE, reason="gate: accepted")
    assert gate.status is VersionStatus.ACCEPTED


def test_a_run_block_ends_its_run_however_it_ends(ledger: Ledger) -> None:
    with ledger.run(RunKind.AUDIT, {"repeats": 3}) as run:
        assert ledger.get_run(run.run_id).ended_at is None  # type: ignore[union-attr]
    assert ledger.get_run(run.run_id).ended_at is not None  # type: ignore[union-attr]
    with pytest.raises(RuntimeError), ledger.run(RunKind.REPAIR) as failed:
        raise RuntimeError("boom")
    assert ledger.get_run(failed.run_id).ended_at is not None  # type: ignore[union-attr]
    assert ledger.get_run(run.run_id).config == {"repeats": 3}  # type: ignore[union-attr]


def test_open_run_closes_crashed_runs_of_its_kind_first(ledger: Ledger) -> None:
    from qaflow.runs import open_run

    crashed = ledger.start_run(RunKind.AUDIT)  # a killed process never ends its run
    other = ledger.start_run(RunKind.ROLLOUT)
    told: list[tuple[str, int]] = []
    with open_run(ledger, RunKind.AUDIT, on_reaped=lambda rid, n: told.append((rid, n))) as run:
        assert ledger.get_run(crashed.run_id).ended_at is not None  # type: ignore[union-attr]
    assert [rid for rid, _ in told] == [crashed.run_id]
    assert ledger.get_run(other.run_id).ended_at is None  # type: ignore[union-attr]
    assert ledger.get_run(run.run_id).ended_at is not None  # type: ignore[union-attr]


def test_failed_transaction_rolls_back(ledger: Ledger) -> None:
    with pytest.raises(RuntimeError), ledger.transaction():
        ledger.add_version(version("a"))
        raise RuntimeError("boom")
    assert ledger.get_version(vid("a")) is None
    assert ledger.status_log() == []


# -- runs, results, findings -----------------------------------------------------------------


def test_runs(ledger: Ledger) -> None:
    run = ledger.start_run(RunKind.AUDIT, {"probes": ["nop", "oracle"]})
    assert run.run_id.startswith("audit-")
    assert run.ended_at is None
    ended = ledger.end_run(run.run_id)
    assert ended.ended_at is not None and ended.config == {"probes": ["nop", "oracle"]}
    assert [r.run_id for r in ledger.runs(RunKind.AUDIT)] == [run.run_id]
    assert ledger.runs(RunKind.ROLLOUT) == []


def test_results_are_keyed_and_skippable(ledger: Ledger) -> None:
    ledger.add_version(version("a"))
    run = ledger.start_run(RunKind.AUDIT)
    first = result(run.run_id, reward=0.0)
    assert ledger.put_result(first)
    assert ledger.has_result(first.key)
    assert not ledger.put_result(result(run.run_id, reward=1.0))  # same key: skipped
    assert ledger.get_result(first.key).reward == 0.0  # type: ignore[union-attr]
    assert ledger.put_result(result(run.run_id, reward=1.0), force=True)
    stored = ledger.get_result(first.key)
    assert stored is not None and stored.reward == 1.0 and stored.payload == {"stdout": "x"}

    keys = [ResultKey(task_version=vid("a"), probe=p, attempt=n) for p in ("nop", "oracle") for n in range(2)]
    assert ledger.pending([*keys, keys[1]]) == keys[1:]
    assert ledger.pending([]) == []
    assert [r.key for r in ledger.results(task_version=vid("a"))] == [first.key]


def test_result_needs_known_version_and_run(ledger: Ledger) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        ledger.put_result(result("no-such-run"))


def test_findings(ledger: Ledger) -> None:
    ledger.add_version(version("a"))
    run = ledger.start_run(RunKind.AUDIT)
    stored = ledger.add_finding(
        Finding(
            task_version=vid("a"),
            run_id=run.run_id,
            code=FindingCode.FALSE_PASS,
            severity=Severity.ERROR,
            message="nop gets full reward",
            evidence={"reward": 1.0},
        )
    )
    assert stored.id == 1
    (found,) = ledger.findings(task_version=vid("a"))
    assert found.code is FindingCode.FALSE_PASS and found.evidence == {"reward": 1.0}
    assert ledger.findings(run_id="other") == []


# -- frames ---------------------------------------------------------------------------------


def test_frames(ledger: Ledger) -> None:
    empty = ledger.frame("results")
    assert empty.height == 0
    assert empty.schema["reward"] == pl.Float64 and empty.schema["attempt"] == pl.Int64
    assert empty.schema["created_at"] == pl.Datetime("us", "UTC")

    ledger.add_version(version("a"))
    ledger.add_version(version("b", parent="a"))
    ledger.add_version(version("x", name="u"))
    ledger.set_head("t", vid("b"))
    ledger.set_head("u", vid("x"))
    run = ledger.start_run(RunKind.AUDIT)
    ledger.put_result(result(run.run_id, label="b", reward=1.0))

    versions = ledger.frame("task_versions")
    assert versions.height == 3
    assert versions.filter(pl.col("version") == vid("b"))["parent_version"].to_list() == [vid("a")]
    tasks = ledger.frame("tasks")
    assert tasks.select("name", "version", "status").rows() == [("t", vid("b"), "new"), ("u", vid("x"), "new")]
    assert tasks.schema["seen_at"] == pl.Datetime("us", "UTC")
    assert ledger.frame("results")["reward"].to_list() == [1.0]
    assert ledger.frame("runs")["kind"].to_list() == ["audit"]
    assert ledger.frame("status_log").height == 3
    assert [t.name for t in ledger.tasks()] == ["t", "u"]
    with pytest.raises(LedgerError, match="unknown table"):
        ledger.frame("sqlite_master")


def test_closed_ledger_refuses(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "l.sqlite")
    led.close()
    led.close()
    with pytest.raises(LedgerError, match="closed"):
        led.get_version("x")


# -- concurrency and crashes ----------------------------------------------------------------


def test_threads_write_and_read_concurrently(ledger: Ledger) -> None:
    ledger.add_version(version("a"))
    run = ledger.start_run(RunKind.ROLLOUT)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(40):
                ledger.put_result(result(run.run_id, probe=f"w{worker}", attempt=i))
                assert ledger.has_result(ResultKey(task_version=vid("a"), probe=f"w{worker}", attempt=i))
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert ledger.frame("results").height == 8 * 40


WRITER = textwrap.dedent(
    """
    import sys
    from qaflow.ledger import Ledger
    from qaflow.models.records import Result, ExitStatus, RunKind, TaskVersion, VersionStatus, utcnow

    led = Ledger(sys.argv[1])
    led.add_version(TaskVersion(version="v" * 64, name="t", source="local", path="t",
                                status=VersionStatus.NEW, created_at=utcnow()))
    run = led.start_run(RunKind.ROLLOUT)
    i = 0
    while True:
        with led.transaction():  # two rows per transaction: both or neither survive
            for probe in ("a", "b"):
                led.put_result(Result(task_version="v" * 64, probe=probe, attempt=i, run_id=run.run_id,
                                      backend="bwrap", status=ExitStatus.OK, reward=1.0,
                                      payload={"pad": "x" * 2000}, duration_s=0.0))
        print(i, flush=True)
        i += 1
    """
)


def test_sigkill_mid_write_leaves_every_committed_row(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    committed = -1
    deadline = time.monotonic() + 60
    while committed < 300 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        committed = int(line)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert committed >= 300, "the writer did not get going"
    assert Path(f"{path}-wal").exists()  # killed with a live WAL: opening must recover it

    with Ledger(path) as led:
        assert led._reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = led.frame("results")
        attempts = rows.group_by("attempt").len()
        assert attempts["len"].to_list() == [2] * attempts.height  # no half-written transaction
        assert set(range(committed + 1)) <= set(rows["attempt"].to_list())
        after = result(led.runs()[0].run_id, probe="after-crash").model_copy(update={"task_version": "v" * 64})
        assert led.put_result(after)  # and it still writes


def test_rollout_tallies_count_passes_as_the_pass_table_does_and_errors_apart(tmp_path: Path) -> None:
    from qaflow.models.frame import records_to_frame
    from qaflow.rollouts.stats import pass_table
    from tests.trajectories import make_record

    records = [
        make_record(task="t", task_version="v1", effort="low", attempt=0, reward=1.0),
        make_record(task="t", task_version="v1", effort="low", attempt=1, reward=1.0, exit_status="agent_timeout"),
        make_record(task="t", task_version="v1", effort="low", attempt=2, reward=0.0),
        make_record(task="t", task_version="v1", effort="low", attempt=3, reward=0.0, stop_reason="llm_error"),
        make_record(task="t", task_version="v1", effort="low", attempt=4, reward=None, exit_status="error"),
    ]
    ledger = Ledger(tmp_path / "ledger.sqlite")
    try:
        for record in records:
            ledger.put_rollout(record)
        (tally,) = ledger.rollout_tallies(["v1", "v1", "unknown"])
    finally:
        ledger.close()
    assert (tally.graded, tally.passed, tally.errors) == (3, 1, 2)  # a timed-out full reward is no pass
    (row,) = pass_table(records_to_frame(records)).iter_rows(named=True)
    assert (row["attempts"], row["passes"], row["errors"]) == (tally.graded, tally.passed, tally.errors)


@pytest.mark.parametrize("lost", ["empty", "missing"])
def test_a_lost_ledger_beside_its_write_ahead_log_is_refused_not_recreated(tmp_path: Path, lost: str) -> None:
    path = tmp_path / "ledger.sqlite"
    keep = sqlite3.connect(path)  # an open connection keeps the write-ahead log beside the file
    Ledger(path).close()
    keep.execute("PRAGMA journal_mode = WAL")
    keep.execute("INSERT INTO meta(key, value) VALUES ('history', 'x')")
    keep.commit()
    wal = tmp_path / "ledger.sqlite-wal"
    assert wal.stat().st_size > 0
    if lost == "empty":
        path.write_bytes(b"")
    else:
        path.unlink()
    with pytest.raises(LedgerError) as info:
        Ledger(path)
    assert info.value.path == path
    assert f"is {lost} but its write-ahead log ledger.sqlite-wal holds" in info.value.reason
    assert wal.stat().st_size > 0 and (lost == "empty") == path.exists(), "the refusal changed the files"
    keep.close()


def test_a_full_disk_names_the_ledger(ledger: Ledger) -> None:
    ledger.add_version(version("a"))
    with ledger.run(RunKind.AUDIT) as run:
        pass
    pages = ledger._writer.execute("PRAGMA page_count").fetchone()[0]
    ledger._writer.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own SQLITE_FULL, as on a full disk
    with pytest.raises(LedgerError) as info:
        for n in range(200):
            ledger.add_finding(
                Finding(task_version=vid("a"), run_id=run.run_id, code=FindingCode.LINT, severity=Severity.WARNING,
                        message="x" * 4000 + str(n))
            )  # fmt: skip
    assert info.value.path == ledger.path
    assert "database or disk is full" in str(info.value) and str(ledger.path) in str(info.value)


def test_findings_and_verdict_are_one_transaction(ledger: Ledger) -> None:
    ledger.add_version(version("a", status=VersionStatus.INVALID))
    with ledger.run(RunKind.AUDIT) as run:
        finding = Finding(task_version=vid("a"), run_id=run.run_id, code=FindingCode.FLAKY, severity=Severity.ERROR,
                          message="m")  # fmt: skip
        with pytest.raises(LedgerError):
            audit = AuditRecord(task_version=vid("a"), run_id=run.run_id, verdict=Verdict.NEEDS_REPAIR, codes=["flaky"])
            ledger.record_audit(audit, [finding])
    assert ledger.findings() == [], "findings stayed without their verdict"
    assert ledger.audits() == [], "the audit stayed without its verdict"
