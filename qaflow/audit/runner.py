"""The audit runner: every probe of every task, keyed in the ledger so reruns skip finished work.

Per task: load (invalid_task) -> lint -> build (one image for all probes) -> nop and oracle
repeated N times plus the tamper probe, concurrently -> mutants from the oracle's recorded effect
-> judge. Every trial is a ledger result keyed (task version, probe, attempt); a rerun after a
crash reuses what was recorded, `force` redoes it. One broken task never stops the others.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, Field

from qaflow.agents import NopAgent, OracleAgent
from qaflow.agents.base import Agent
from qaflow.audit.effects import Effect, RecordingAgent
from qaflow.audit.judge import judge
from qaflow.audit.lint import LintConfig, lint_task
from qaflow.audit.model import AuditFinding, TaskAudit, Verdict, verdict_for
from qaflow.audit.mutants import MutantAgent, make_mutants
from qaflow.audit.probe_run import ProbeRun, tail
from qaflow.audit.tamper import TamperAgent, trusted_paths
from qaflow.errors import BuildError, QaflowError, TaskError, UnsupportedError
from qaflow.ledger import Ledger
from qaflow.records import Finding, FindingCode, Result, ResultKey, ResultStatus, Severity, VersionStatus
from qaflow.sandbox import backend_class, resolve_backend
from qaflow.sandbox.spec import spec_for_task
from qaflow.task import Task
from qaflow.trial import run_trial


def repeats_for(miss_probability: float = 0.05, flip: float = 0.5) -> int:
    """Runs needed so a verifier passing with probability `flip` shows both outcomes with
    probability >= 1 - miss_probability: P(all agree) = flip^n + (1-flip)^n."""
    n = 1
    while flip**n + (1 - flip) ** n > miss_probability:
        n += 1
    return n


DEFAULT_REPEATS = repeats_for()  # 6: a 50% coin-flip verifier is caught with probability 96.9%


class AuditConfig(BaseModel):
    backend: str = Field("auto", description="auto, docker or bwrap")
    repeats: int = Field(DEFAULT_REPEATS, ge=1, description="Runs of each of nop and oracle (flakiness)")
    jobs: int = Field(2, ge=1, description="Trials run concurrently")
    max_mutants: int = Field(12, ge=0, description="Wrong solutions derived from the oracle, per task")
    force: bool = Field(False, description="Redo probes already recorded in the ledger")
    lint: LintConfig = Field(default_factory=LintConfig)


ProgressFn = Callable[[str], None]


class Auditor:
    """Audits task folders, recording into `ledger` under `run_id`."""

    def __init__(self, ledger: Ledger, run_id: str, config: AuditConfig, progress: ProgressFn | None = None):
        self.ledger = ledger
        self.run_id = run_id
        self.config = config
        self.backend = resolve_backend(config.backend)
        self.progress = progress or (lambda _msg: None)
        self._trials = ThreadPoolExecutor(config.jobs, thread_name_prefix="qaflow-trial")

    def close(self) -> None:
        self._trials.shutdown(wait=True, cancel_futures=True)

    def audit(self, folders: list[Path]) -> list[TaskAudit]:
        with ThreadPoolExecutor(self.config.jobs, thread_name_prefix="qaflow-task") as tasks:
            return list(tasks.map(self.audit_one, folders))

    def audit_one(self, folder: Path) -> TaskAudit:
        started = time.perf_counter()
        try:
            task = Task.load(folder)
        except TaskError as e:
            finding = AuditFinding(
                code=FindingCode.INVALID_TASK,
                message=f"{_rel(e.path, folder)}: {e.reason}",
                evidence={"file": _rel(e.path, folder), "reason": e.reason},
            )
            self.progress(f"{folder.name}: invalid")
            return TaskAudit(
                task=folder.name,
                path=str(folder),
                version=None,
                verdict=Verdict.INVALID,
                findings=[finding],
                timings={"total": time.perf_counter() - started},
            )
        try:
            audit = self._audit_task(task, folder)
        except Exception as e:
            # A sandbox that cannot run at all is infra_error; anything else is a bug of the audit
            # itself, kept with its traceback so it can be fixed, and never passed off as a verdict.
            code = FindingCode.INFRA_ERROR if isinstance(e, QaflowError) else FindingCode.AUDIT_ERROR
            audit = TaskAudit(
                task=task.name,
                path=str(folder),
                version=task.version,
                verdict=Verdict.NEEDS_REPAIR,
                findings=[
                    AuditFinding(
                        code=code,
                        message=f"the audit could not run: {type(e).__name__}: {e}",
                        evidence={"error": type(e).__name__, "traceback": "".join(traceback.format_exception(e))},
                    )
                ],
            )
        audit.timings["total"] = time.perf_counter() - started
        self._record(task, audit)
        self.progress(f"{task.name}: {audit.verdict.value}")
        return audit

    # -- probes ---------------------------------------------------------------------------

    def _audit_task(self, task: Task, folder: Path) -> TaskAudit:
        findings = lint_task(task, self.config.lint)
        probes: dict[str, object] = {}
        audit = TaskAudit(task=task.name, path=str(folder), version=task.version, verdict=Verdict.ACCEPTED)
        t0 = time.perf_counter()
        build = self._build(task)
        audit.timings["build"] = time.perf_counter() - t0
        probes["build"] = build
        if build.get("status") != "ok":
            code = FindingCode.INFRA_ERROR if build.get("unsupported") else FindingCode.BUILD_FAILED
            findings.append(
                AuditFinding(
                    code=code,
                    message=f"environment/Dockerfile does not build on {self.backend}: {build.get('error', '')[:300]}",
                    evidence={"log_tail": build.get("log_tail", ""), "backend": self.backend},
                )
            )
            audit.findings, audit.probes = findings, probes
            audit.verdict = verdict_for(findings)
            return audit

        n = self.config.repeats
        recorder = RecordingAgent(OracleAgent())
        items: list[tuple[str, int, Agent, bool]] = [("nop", i, NopAgent(), True) for i in range(n)]
        items += [("oracle", 0, recorder, True)] + [("oracle", i, OracleAgent(), True) for i in range(1, n)]
        t0 = time.perf_counter()
        runs = list(self._trials.map(lambda it: self._trial(task, *it), items))
        by_probe: dict[str, list[ProbeRun]] = {}
        for run in runs:
            by_probe.setdefault(run.probe, []).append(run)
        oracle = by_probe.get("oracle", [])

        # phase 2 needs the oracle: the reward file it writes (tamper) and its recorded effect (mutants)
        sources = sorted({r.reward_source for r in oracle if r.reward_source}) or ["reward.txt"]
        phase2: list[tuple[str, int, Agent, bool]] = [("tamper", 0, TamperAgent(sources, trusted_paths(task)), False)]
        mutants = []
        effect = _effect_of(oracle[0]) if oracle else None
        if effect is not None and all(r.full for r in oracle) and self.config.max_mutants:
            mutants = make_mutants(effect, limit=self.config.max_mutants, focus=_focus_text(task))
            phase2 += [(f"mutant:{m.name}", 0, MutantAgent(m), True) for m in mutants]
            probes["mutants"] = {"generated": len(mutants), "changes": len(effect.changes)}
        tamper, *mutant_runs = self._trials.map(lambda it: self._trial(task, *it), phase2)
        for m, run in zip(mutants, mutant_runs, strict=True):
            run.extra["description"] = m.description
        audit.timings["trials"] = time.perf_counter() - t0
        by_probe["tamper"] = [tamper]
        findings += judge(by_probe.get("nop", []), oracle, tamper, mutant_runs)
        for name, group in by_probe.items():
            probes[name] = {"rewards": [r.reward for r in group], "exit": [r.exit_status for r in group]}
        probes["mutant_rewards"] = {r.probe.removeprefix("mutant:"): r.reward for r in mutant_runs}
        audit.findings, audit.probes = findings, probes
        audit.verdict = verdict_for(findings)
        return audit

    def _build(self, task: Task) -> dict[str, str]:
        """Build once for all probes (always asked of the backend: a cached image makes it a no-op,
        and an image pruned since the last run is rebuilt)."""
        t0 = time.perf_counter()
        payload: dict[str, str] = {"status": "ok"}
        try:
            backend_class(self.backend)().build(spec_for_task(task, run_id=self.run_id))
        except BuildError as e:
            payload = {"status": "failed", "error": str(e).splitlines()[0], "log_tail": tail(e.log_tail, 3000)}
        except UnsupportedError as e:
            payload = {"status": "failed", "unsupported": "1", "error": str(e)}
        status = ResultStatus.OK if payload["status"] == "ok" else ResultStatus.ERROR
        key = ResultKey(task_version=task.version, probe="build", attempt=0)
        known = self.ledger.get_result(key)
        if self.config.force or known is None or known.payload != payload or known.backend != self.backend:
            self._put(
                Result(
                    task_version=task.version,
                    probe="build",
                    attempt=0,
                    run_id=self.run_id,
                    backend=self.backend,
                    status=status,
                    payload=payload,
                    duration_s=time.perf_counter() - t0,
                )
            )
        return payload

    def _trial(self, task: Task, probe: str, attempt: int, agent: Agent, clear: bool) -> ProbeRun:
        key = ResultKey(task_version=task.version, probe=probe, attempt=attempt)
        if not self.config.force:
            cached = self.ledger.get_result(key)
            if cached is not None and cached.backend == self.backend:
                return ProbeRun.model_validate(cached.payload)
        result = run_trial(task, agent, backend=self.backend, run_id=self.run_id, clear_verifier_logs=clear)
        run = ProbeRun.of(probe, attempt, result)
        effect = getattr(agent, "effect", None)
        if isinstance(effect, Effect):
            run.extra["effect"] = effect.model_dump(mode="json")
        self._put(
            Result(
                task_version=task.version,
                probe=probe,
                attempt=attempt,
                run_id=self.run_id,
                backend=self.backend,
                status=run.status,
                reward=run.reward,
                payload=run.model_dump(mode="json"),
                duration_s=run.duration_s,
            )
        )
        return run

    def _put(self, result: Result) -> None:
        self.ledger.put_result(result, force=True)

    def _record(self, task: Task, audit: TaskAudit) -> None:
        if self.ledger.get_version(task.version) is None:
            return
        for f in audit.findings:
            self.ledger.add_finding(
                Finding(
                    task_version=task.version,
                    run_id=self.run_id,
                    code=f.code,
                    severity=f.severity,
                    message=f.message,
                    evidence=f.evidence,
                )
            )
        status = VersionStatus.ACCEPTED if audit.verdict is Verdict.ACCEPTED else VersionStatus.NEEDS_REPAIR
        codes = sorted({f.code.value for f in audit.findings if f.severity is Severity.ERROR})
        self.ledger.set_status(
            task.version, status, reason="audit: " + (", ".join(codes) or "clean"), run_id=self.run_id
        )


def _focus_text(task: Task) -> str:
    """The instruction and the verifier's text: the files they mention are mutated first."""
    parts = [task.instruction]
    for path in sorted(task.tests_dir.rglob("*")):
        if path.is_file() and path.stat().st_size < 200_000:
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def _effect_of(run: ProbeRun) -> Effect | None:
    raw = run.extra.get("effect")
    return None if raw is None else Effect.model_validate(raw)


def _rel(path: Path, folder: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(folder.resolve()))
    except ValueError:
        return str(path)


def binomial_note(repeats: int) -> str:
    miss = 2 * 0.5**repeats
    return f"{repeats} runs each of nop and oracle catch a 50% coin-flip verifier with probability {1 - miss:.1%}"
