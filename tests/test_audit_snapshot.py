"""Results belong to the bytes that ran: an audit runs a task from a copy of its files taken when its version is
hashed, so a folder edited while the audit runs can neither change what the trials run nor pin their results to
a version whose files did not run; the edit is the next run's new version."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from qaflow.audit.config import AuditConfig
from qaflow.audit.service import audit_folders
from qaflow.errors import TaskError
from qaflow.executors import LocalExecutor, Resources
from qaflow.models.audit import Verdict
from qaflow.models.records import FindingCode
from qaflow.pool import Pool
from qaflow.task import Task, snapshot_task, tree_hash
from tests.conftest import require_backend
from tests.taskfactory import write_task

ALWAYS_PASSES = "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"
"""A verifier an edit could put in place mid-audit: the untouched environment would pass it (false_pass)."""

CONFIG = AuditConfig(backend="bwrap", repeats=1, jobs=2, max_mutants=2)


class EditsOnFirstItem(LocalExecutor):
    """Runs `edit` once, just before the audit's first work item (the build) starts: after the task's version
    was hashed, before any trial read its files."""

    def __init__(self, edit: Callable[[], None]):
        super().__init__(2)
        self._edit: Callable[[], None] | None = edit

    def submit(self, fn: Callable[..., Any], /, *args: Any, resources: Resources | None = None, **kwargs: Any) -> Any:
        if self._edit is not None:
            self._edit, edit = None, self._edit
            edit()
        return super().submit(fn, *args, resources=resources, **kwargs)


def _audit(pool: Pool, folder: Path, executor: LocalExecutor | None = None) -> Any:
    batch = audit_folders(pool, [folder], CONFIG, executor=executor)
    return batch.audits[0]


def test_a_folder_edited_mid_audit_neither_changes_the_trials_nor_their_version(tmp_path: Path) -> None:
    require_backend("bwrap")
    root = tmp_path / "pool"
    folder = write_task(root, "sound")
    original = tree_hash(folder)
    sound_test = (folder / "tests" / "test.sh").read_text()

    def break_the_verifier() -> None:
        (folder / "tests" / "test.sh").write_text(ALWAYS_PASSES)

    with Pool.open(root) as pool:
        executor = EditsOnFirstItem(break_the_verifier)
        try:
            audit = _audit(pool, folder, executor)
        finally:
            executor.close()
        assert (folder / "tests" / "test.sh").read_text() == ALWAYS_PASSES, "the edit did not happen mid-audit"
        assert audit.version == original
        assert audit.verdict is Verdict.ACCEPTED, [f.message for f in audit.findings]
        recorded = pool.ledger.results(task_version=original)
        assert recorded and all(r.task_version == original for r in recorded)
        assert {r.task_version for r in pool.ledger.results()} == {original}

        edited = _audit(pool, folder)  # the plain rerun sees the edit as the new version it is
        assert edited.version == tree_hash(folder) != original
        assert FindingCode.FALSE_PASS in {f.code for f in edited.findings}
        assert pool.ledger.get_version(edited.version).parent_version == original  # type: ignore[union-attr]

        (folder / "tests" / "test.sh").write_text(sound_test)  # restored: the known version and its own results
        before = len(pool.ledger.results())
        restored = _audit(pool, folder)
        assert restored.version == original and restored.verdict is Verdict.ACCEPTED
        assert len(pool.ledger.results()) == before, "the restored version's results were not reused"


def test_a_folder_edited_between_the_scan_and_the_snapshot_is_recorded_as_the_version_that_ran(
    tmp_path: Path,
) -> None:
    require_backend("bwrap")
    root = tmp_path / "pool"
    folder = write_task(root, "sound")
    with Pool.open(root) as pool:
        scanned = pool.scan().entries[0].version
        (folder / "tests" / "test.sh").write_text(ALWAYS_PASSES)
        seen: list[str] = []
        batch = audit_folders(pool, [folder], CONFIG, progress=seen.append, scan=False)
        audit = batch.audits[0]
        assert audit.version == tree_hash(folder) != scanned
        assert FindingCode.FALSE_PASS in {f.code for f in audit.findings}
        record = pool.ledger.get_version(audit.version)
        assert record is not None and record.parent_version == scanned
        assert [h.version for h in pool.ledger.heads()] == [audit.version]
        assert pool.ledger.results(task_version=scanned) == []
        assert any("changed since the scan" in line for line in seen), seen


def test_a_snapshot_is_a_copy_with_the_same_version_and_its_errors_name_the_original_files(tmp_path: Path) -> None:
    folder = write_task(tmp_path / "pool", "t", files={"tests/data/cases.txt": "1 2\n"})
    (folder / "tests" / "link.txt").symlink_to("data/cases.txt")
    task = snapshot_task(folder, tmp_path / "snap")
    assert task.path == (tmp_path / "snap" / "t").resolve() and task.home == folder.resolve()
    assert task.version == Task.load(folder).version and task.name == "test/t"
    (folder / "tests" / "data" / "cases.txt").write_text("changed\n")
    assert (task.path / "tests" / "link.txt").read_text() == "1 2\n"

    (folder / "task.toml").write_text("not toml [")
    with pytest.raises(TaskError) as err:
        snapshot_task(folder, tmp_path / "snap2")
    assert err.value.path == folder.resolve() / "task.toml"
    shutil.rmtree(tmp_path / "snap2", ignore_errors=True)
