"""Enabled tests: code mutants of C-family files the oracle wrote, where the tests disable some of their own
tests; the survivors, and the oracle, run again on a copy of the task with those tests enabled
(`qaflow.audit.mutants.skipped_tests`). A survivor the enabled tests reject is a wrong answer the verifier takes."""

from __future__ import annotations

import tempfile
from pathlib import Path

from qaflow.audit.mutants.skipped_tests import judge_enabled, plan_enabled_mutants, write_enabled
from qaflow.audit.probe_agent import ProbeAgent
from qaflow.audit.probes.context import Probe, TaskRun, TrialRequest
from qaflow.errors import QaflowError
from qaflow.models.audit import AuditFinding
from qaflow.models.probe_key import ProbeKey, ProbeKind
from qaflow.task import Task, copy_task_folder
from qaflow.trial.effects import Effect


def enabled_tests_probe(
    run: TaskRun, effect: Effect, probes: dict[str, object], cap: float
) -> Probe[list[AuditFinding]]:
    """The `enabled_tests` summary goes into `probes` where the tests disable any; trials run under `cap` seconds."""
    task = run.task
    enabled, mutants, why = plan_enabled_mutants(effect, task.tests_dir)
    view: dict[str, object] = {"disabled": [{"file": e.path, "how": e.how, "count": e.count} for e in enabled]}
    if not enabled:
        return []
    probes["enabled_tests"] = view
    if not mutants:
        view["skipped"] = why
        return []
    runs = yield from run.trials(
        [TrialRequest(ProbeKey.mutant(m.name), 0, ProbeAgent.of_mutant(m, cap)) for m, _ in mutants]
    )
    survivors = [(m, diff) for (m, diff), r in zip(mutants, runs, strict=True) if r.full]
    view["mutants"], view["survived"] = len(mutants), [m.name for m, _ in survivors]
    if not survivors:
        return []
    with tempfile.TemporaryDirectory(prefix="qaflow-enabled-") as tmp:
        try:
            folder = copy_task_folder(task.path, Path(tmp) / task.path.name)
            write_enabled(folder / "tests", enabled)
            twin = run.share(Task.load(folder))
        except (OSError, QaflowError) as e:
            view["skipped"] = f"the copy with the tests enabled could not be made: {e}"
            return []
        capped_oracle = ProbeAgent.oracle().model_copy(update={"verifier_timeout_sec": cap})
        requests = [TrialRequest(ProbeKey(ProbeKind.ENABLED_ORACLE), 0, capped_oracle)]
        requests += [
            TrialRequest(ProbeKey(ProbeKind.ENABLED_MUTANT, m.name), 0, ProbeAgent.of_mutant(m, cap))
            for m, _ in survivors
        ]
        oracle_run, *mutant_runs = yield from run.trials(requests, shared=twin)
    view["oracle_reward"] = oracle_run.reward
    if not oracle_run.full:
        view["skipped"] = "the reference solution fails the disabled tests: they are no specification"
        return []
    wrong = [
        pair
        for pair, r in zip(survivors, mutant_runs, strict=True)
        if not r.full and r.error is None and not r.verifier_timed_out
    ]
    view["rejected_by_enabled"] = [m.name for m, _ in wrong]
    return judge_enabled(str(task.home), enabled, wrong)
