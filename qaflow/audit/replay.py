"""The command that replays a finding: `qaflow run TASK --agent ...` with the probe the audit ran.

Every finding a trial produced names its trial in its evidence: an exploit's name, a passing mutant, the
tamper probe, the nop or oracle run that failed, the flaky probe's repeats. `replay_agent` reads the
`--agent` value back from there; findings of the files alone (lint, leaks seen statically, an invalid
task) and those of one step of a multi-step task have none.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from qaflow.audit.tamper import TamperAgent, trusted_paths
from qaflow.ledger import LedgerError
from qaflow.models.audit import AuditFinding
from qaflow.models.probe_key import ProbeKey, ProbeKind, name_of, probe_name
from qaflow.models.records import FindingCode
from qaflow.pool import Pool, PoolError
from qaflow.task import Task

TAMPER = probe_name(ProbeKind.TAMPER)


def rerun_count(agent: str) -> int | None:
    """N of a `rerun:N` agent; None for any other agent name.

    Raises:
        ValueError: N is not a positive whole number.
    """
    text = name_of(agent, ProbeKind.RERUN)
    if text is None and agent != f"{ProbeKind.RERUN.value}:":
        return None
    if text is None or not text.isdigit() or int(text) < 1:
        raise ValueError(f"--agent {agent}: N in rerun:N must be a positive whole number")
    return int(text)


def _first_run(evidence: dict[str, Any]) -> dict[str, Any] | None:
    first = evidence.get("first")
    if isinstance(first, dict):
        return first
    runs = evidence.get("runs")
    if isinstance(runs, list) and runs and isinstance(runs[0], dict):
        return runs[0]
    return None


def replay_agent(finding: AuditFinding) -> str | None:
    """The `--agent` of `qaflow run` that replays the trial behind `finding`; None when no single trial does."""
    evidence = finding.evidence
    if "step" in evidence:
        return None
    exploits = evidence.get("exploits")
    if isinstance(exploits, list) and exploits and isinstance(exploits[0], dict) and exploits[0].get("exploit"):
        return str(ProbeKey.exploit(str(exploits[0]["exploit"])))
    passing = evidence.get("passing_mutants")
    if isinstance(passing, list) and passing:
        return str(ProbeKey.mutant(str(passing[0])))
    if "tamper" in evidence:
        return TAMPER
    if finding.code is FindingCode.FLAKY:
        rewards = evidence.get("rewards")
        n = max(len(rewards) - 1, 1) if isinstance(rewards, list) else 8
        return probe_name(ProbeKind.RERUN, str(n)) if evidence.get("probe") == "oracle" else f"nop --reruns {n}"
    first = _first_run(evidence)
    if first is not None and first.get("probe") in ("nop", "oracle"):
        return str(first["probe"])
    if finding.code is FindingCode.BUILD_FAILED or "log_tail" in evidence:
        return "nop"  # the build comes first
    return None


def replay_command(
    finding: AuditFinding, task_path: str, *, backend: str = "auto", offline: bool = False, network: str = "task"
) -> str | None:
    """`qaflow run TASK --agent ...` for `finding`, on the audit's backend and network; None as `replay_agent`."""
    agent = replay_agent(finding)
    if agent is None:
        return None
    return run_command(agent, task_path, backend=backend, offline=offline, network=network)


def run_command(
    agent: str, task_path: str, *, backend: str = "auto", offline: bool = False, network: str = "task"
) -> str:
    """`qaflow run TASK --agent AGENT` on that backend and network."""
    parts = ["qaflow", "run", shlex.quote(task_path), "--agent", *agent.split(" ")]
    if backend != "auto":
        parts += ["--backend", backend]
    if offline:
        parts.append("--offline")
    if network != "task":
        parts += ["--network", network]
    return " ".join(parts)


def tamper_files(task: Task, pool_root: Path | None) -> list[str]:
    """The reward files the tamper probe plants, as the audit chose them: those the recorded oracle runs of
    the task's current version wrote (`reward.txt` when none is recorded or there is no pool)."""
    sources: set[str] = set()
    if pool_root is not None:
        try:
            with Pool.open(pool_root, create=False) as pool:
                results = pool.ledger.results(task_version=task.version)
        except (PoolError, LedgerError):
            results = []
        for result in results:
            if result.key.probe == "oracle":
                source = result.payload.get("reward_source")
                if isinstance(source, str) and source:
                    sources.add(source)
    return sorted(sources) or ["reward.txt"]


def tamper_agent(task: Task, pool_root: Path | None) -> TamperAgent:
    """The audit's tamper probe for `task`: plants a full reward where the verifier writes or copies it from.
    Run it with the verifier's logs left in place (`run_trial(..., clear_verifier_logs=False)`)."""
    return TamperAgent(tamper_files(task, pool_root), trusted_paths(task))
