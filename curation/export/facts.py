"""What a pool's ledger knows about each task version an export writes: status, audit verdict and run, source,
licence; and the gate that keeps rows of unaccepted tasks and of attempts that were not correctly graded out.

The audit verdict is the last audit the ledger records of the version (its `audits` table): "clean", or the
error codes it found, e.g. "false_pass, weak_verifier", with that audit's run id. The licence is the task's
`task.toml` `[metadata] licence` (or `license`), unless the caller knows better (a pipeline source's
configured licence).
"""

from __future__ import annotations

import tomllib
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from datasets import Value
from pydantic import BaseModel

from curation.export.common import ExportError, RemovalReason, open_pool
from curation.export.guard import Rejected
from curation.licences import hub_licence
from qaflow.agents.harness import StopReason
from qaflow.harden.gate import clean_reason, harness_exposure
from qaflow.models.records import VersionStatus
from qaflow.models.rollout import ExitStatus, is_scripted
from qaflow.pool import Pool
from qaflow.rollouts.hacks import rewarded_hack

FACT_FEATURES = {
    "licence": Value("string"),
    "task_status": Value("string"),
    "audit_verdict": Value("string"),
    "audit_run": Value("string"),
}
FACT_COLUMNS = {
    "licence": "Licence of the task (task.toml `[metadata] licence`, or the source's).",
    "task_status": "Status of the task version in the pool's ledger when exported (accepted, ...).",
    "audit_verdict": "The last audit's verdict on the version: `clean`, or the error codes it found.",
    "audit_run": "Run id of that audit in the pool's ledger.",
}


class TaskFacts(BaseModel):
    """What the ledger says about one task version."""

    task: str
    source: str
    status: VersionStatus
    licence: str | None = None
    audit_verdict: str | None = None
    audit_run: str | None = None
    exposed_by: list[str] = []
    """Proven harness holes that reach the version (`qaflow.harden.gate.harness_exposure`)."""

    def columns(self) -> dict[str, Any]:
        return {
            "licence": self.licence,
            "task_status": self.status.value,
            "audit_verdict": self.audit_verdict,
            "audit_run": self.audit_run,
        }


def with_default_licence(rows: list[dict[str, Any]], licence: str | None) -> None:
    """Give `licence` (the dataset's, `export --license`) to the rows that have none of their own; every row's
    licence as the Hub spells it."""
    for row in rows:
        row["licence"] = hub_licence(row.get("licence") or licence)


def with_sources(rows: list[dict[str, Any]], sources: Mapping[str, str] | None, key: str = "task_version") -> None:
    """Give each row whose task version (`row[key]`) `sources` names that source: a pipeline knows the source
    (e.g. `tasks_repo`) where the pool, from task.toml, says `local`."""
    for row in rows:
        source = (sources or {}).get(row[key])
        if source:
            row["source"] = source


UNKNOWN_FACTS = {"licence": None, "task_status": None, "audit_verdict": None, "audit_run": None}


def _toml_licence(pool: Pool, path: str) -> str | None:
    try:
        data = tomllib.loads((pool.root / path / "task.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return None
    value = metadata.get("licence", metadata.get("license"))
    return str(value) if value is not None else None


def audit_verdicts(pool: Pool) -> dict[str, tuple[str, str | None]]:
    """The latest audit verdict per task version: (codes or "clean", run id)."""
    return {version: (a.summary, a.run_id) for version, a in pool.ledger.latest_audits().items()}


def pool_facts(pool: Pool, licences: Mapping[str, str | None] | None = None) -> dict[str, TaskFacts]:
    """Facts per task version (every version the ledger knows); `licences` (version -> licence) wins over task.toml."""
    verdicts = audit_verdicts(pool)
    exposure = harness_exposure(pool.ledger)
    facts = {}
    licence_by_path: dict[str, str | None] = {}
    for version in pool.ledger.versions():
        if version.path not in licence_by_path:
            licence_by_path[version.path] = _toml_licence(pool, version.path)
        verdict, run = verdicts.get(version.version, (None, None))
        licence = hub_licence((licences or {}).get(version.version) or licence_by_path[version.path])
        facts[version.version] = TaskFacts(
            task=version.name,
            source=version.source,
            status=version.status,
            licence=licence,
            audit_verdict=verdict,
            audit_run=run,
            exposed_by=exposure.get(version.version, []),
        )
    return facts


class GateOptions(BaseModel):
    """Which rows the gate lets through besides those of accepted tasks and correctly graded attempts."""

    include_unaccepted: bool = False
    include_ungraded: bool = False
    include_scripted: bool = False
    include_hacks: bool = False
    include_failed: bool = False
    """SFT only: also attempts the verifier did not pass (RL exports count them in pass rates anyway)."""
    allow_harness_holes: bool = False
    """Also rows of accepted versions that a proven harness hole reaches."""


def export_facts(
    pool: Pool | Path | str | None, gate: GateOptions, licences: Mapping[str, str | None] | None = None
) -> dict[str, TaskFacts] | None:
    """The pool's facts per task version; None without a pool, which only `include_unaccepted` allows.

    Raises:
        ExportError: no pool and the gate would need one, or the pool cannot be opened.
    """
    if pool is None:
        if not gate.include_unaccepted:
            raise ExportError(
                "rollouts",
                "cannot tell whether their tasks are accepted without the pool they ran on: give the pool "
                "(--pool) or export rows of unaudited tasks too (--include-unaccepted)",
            )
        return None
    opened = open_pool(pool)
    try:
        return pool_facts(opened, licences)
    finally:
        if opened is not pool:
            opened.close()


def check_task(version: str, facts: Mapping[str, TaskFacts] | None, options: GateOptions) -> dict[str, Any]:
    """The fact columns of a row of `version`; raises Rejected when its task is unknown to the pool or not accepted."""
    if facts is None:
        return dict(UNKNOWN_FACTS)
    known = facts.get(version)
    if known is None:
        if options.include_unaccepted:
            return dict(UNKNOWN_FACTS)
        raise Rejected(RemovalReason.UNKNOWN_TASK_VERSION, f"version {version[:12]} is not in the pool's ledger")
    why = clean_reason(known.status, known.exposed_by, allow_harness_holes=options.allow_harness_holes)
    if why is not None and not options.include_unaccepted:
        raise Rejected(RemovalReason.TASK_NOT_ACCEPTED, why)
    return known.columns()


def check_graded(row: Mapping[str, Any], options: GateOptions) -> None:
    """Raises Rejected for an attempt that was not correctly graded: it ended in an error (sandbox, model,
    infrastructure) or the verifier gave no reward."""
    if options.include_ungraded:
        return
    if row.get("exit_status") == ExitStatus.ERROR.value:
        detail = str(row.get("error") or "no message")[:200]
        raise Rejected(RemovalReason.NOT_GRADED, f"the attempt ended in an error ({detail})")
    if row.get("stop_reason") == StopReason.LLM_ERROR:  # the environment was scored untouched
        detail = str(row.get("error") or "no message")[:200]
        raise Rejected(RemovalReason.NOT_GRADED, f"the model call failed ({detail})")
    if row.get("reward") is None:
        raise Rejected(RemovalReason.NOT_GRADED, f"the verifier gave no reward ({row.get('exit_status')})")


def check_passed(row: Mapping[str, Any], options: GateOptions) -> None:
    """Raises Rejected for an attempt the verifier did not pass: SFT learns only from passing sessions."""
    if options.include_failed:
        return
    if not row.get("full_reward") or row.get("exit_status") != ExitStatus.OK.value:
        raise Rejected(
            RemovalReason.NOT_PASSED,
            f"reward {row.get('reward')}, exit status {row.get('exit_status')}: not a session the verifier passed",
        )


def check_hack(row: Mapping[str, Any], options: GateOptions) -> None:
    """Raises Rejected for a rewarded attempt that changed a trust edge of its verifier (`qaflow.rollouts.hacks`)."""
    if options.include_hacks:
        return
    reason = rewarded_hack(row.get("reward"), row.get("meta_json"), row.get("messages"))
    if reason is not None:
        raise Rejected(RemovalReason.REWARD_HACK, reason)


def check_policy(row: Mapping[str, Any], options: GateOptions) -> None:
    """Raises Rejected for a rollout of a scripted policy (`qaflow.models.rollout.is_scripted`)."""
    if not options.include_scripted and is_scripted(row.get("model"), row.get("meta_json")):
        raise Rejected(RemovalReason.SCRIPTED, f"{row.get('model')} is a scripted policy, not a model")


def audit_summary(rows: list[dict[str, Any]], key: str = "task_version") -> dict[str, dict[str, int]]:
    """Task versions of the exported rows by status and by audit verdict, for the card."""
    seen: dict[str, dict[str, Any]] = {}
    for row in rows:
        seen.setdefault(str(row[key]), row)
    return {
        "task status": dict(Counter(str(r.get("task_status")) for r in seen.values()).most_common()),
        "audit verdict": dict(Counter(str(r.get("audit_verdict")) for r in seen.values()).most_common()),
    }
