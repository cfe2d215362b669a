"""Importing other solvers' attempt results (`qaflow attempts import FILE`) as gate evidence.

The file is CSV (with a header) or JSON lines, one attempt per row: `task` (a task folder, version id
or prefix, pool path or task name: its latest version), `solver` (who attempted it, e.g. a model
name), and `passed` (true/false, 1/0, yes/no) or `reward` (passed when at least 1); `attempt` (an
integer) is optional. Each row becomes a ledger result on the version, probe `attempt:<solver>`,
attempt = the row's `attempt` or its position among the file's rows of the same version and solver,
so importing the same file twice records nothing new.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from qaflow.harden.errors import HardenError
from qaflow.harden.versions import resolve_version
from qaflow.models.probe_key import ProbeKind, probe_name
from qaflow.models.records import Result
from qaflow.models.trial import ExitStatus
from qaflow.pool import Pool

TRUE = frozenset({"true", "1", "yes", "y", "pass", "passed"})
FALSE = frozenset({"false", "0", "no", "n", "fail", "failed"})


class AttemptRow(BaseModel):
    task: str = Field(min_length=1)
    solver: str = Field(min_length=1)
    passed: bool | None = None
    reward: float | None = None
    attempt: int | None = Field(None, ge=0)

    @field_validator("passed", mode="before")
    @classmethod
    def _flag(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip().lower()
            if text == "":
                return None
            if text in TRUE | FALSE:
                return text in TRUE
            raise ValueError(f"passed must be true or false, not {value!r}")
        return value

    @field_validator("reward", "attempt", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _outcome(self) -> AttemptRow:
        if self.reward is not None and not math.isfinite(self.reward):
            raise ValueError("reward must be a finite number")
        if self.passed is None and self.reward is None:
            raise ValueError("each attempt needs passed or reward")
        if self.passed is None:
            self.passed = self.reward is not None and self.reward >= 1.0
        return self


class ImportReport(BaseModel):
    file: str
    rows: int
    imported: int = Field(description="Attempts recorded now")
    known: int = Field(description="Attempts already recorded (a re-import)")
    by_version: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Version -> {'attempts', 'passed'} of this file's rows"
    )


def read_attempts(path: Path) -> list[tuple[int, AttemptRow]]:
    """(line number, row) of every attempt in the file.

    Raises:
        HardenError: the file cannot be read, or a row is malformed (its line is named).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise HardenError(path, f"cannot read the attempts file: {e}") from e
    raw: list[tuple[int, Any]] = []
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    raw.append((n, json.loads(line)))
                except json.JSONDecodeError as e:
                    raise HardenError(path, f"line {n} is not JSON: {e}") from e
    else:
        reader = csv.DictReader(text.splitlines())
        if not reader.fieldnames or not {"task", "solver"} <= set(reader.fieldnames):
            raise HardenError(path, "a CSV of attempts needs a header with task, solver and passed or reward")
        raw = [(n, row) for n, row in enumerate(reader, 2)]
    rows = []
    for n, item in raw:
        if not isinstance(item, dict):
            raise HardenError(path, f"line {n}: expected an object with task, solver and passed or reward")
        try:
            rows.append((n, AttemptRow.model_validate({k: v for k, v in item.items() if k is not None})))
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "row"
            raise HardenError(path, f"line {n}: {where}: {first['msg']}") from e
    return rows


def import_attempts(pool: Pool, path: Path, *, run_id: str) -> ImportReport:
    """Record every attempt of the file (all rows are checked before anything is written).

    Raises:
        HardenError: a malformed file or row, or a row whose task is not in the pool.
    """
    rows = read_attempts(path)
    resolved = []
    seen: dict[tuple[str, str], int] = {}
    for n, row in rows:
        try:
            version = resolve_version(pool, row.task)
        except HardenError as e:
            raise HardenError(path, f"line {n}: {e.reason}") from e
        key = (version.version, row.solver)
        index = row.attempt if row.attempt is not None else seen.get(key, 0)
        seen[key] = max(seen.get(key, 0), index + 1)
        resolved.append((n, row, version.version, index))
    report = ImportReport(file=str(path), rows=len(rows), imported=0, known=0)
    for n, row, version_id, index in resolved:
        payload = {"solver": row.solver, "passed": row.passed, "reward": row.reward, "file": str(path), "line": n}
        probe = probe_name(ProbeKind.ATTEMPT, row.solver)
        new = pool.ledger.put_result(
            Result(task_version=version_id, probe=probe, attempt=index, run_id=run_id,
                   backend="imported", status=ExitStatus.OK,
                   reward=row.reward if row.reward is not None else float(bool(row.passed)), payload=payload),
        )  # fmt: skip
        report.imported += int(new)
        report.known += int(not new)
        counts = report.by_version.setdefault(version_id, {"attempts": 0, "passed": 0})
        counts["attempts"] += 1
        counts["passed"] += int(bool(row.passed))
    return report
