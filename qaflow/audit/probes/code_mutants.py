"""Code mutants: one-change mutants of the Python modules the oracle wrote and the verifier imported, each run
like a mutant; a survivor counts only where it computes something else than the oracle on the tests' inputs
(`qaflow.audit.mutants.differential`)."""

from __future__ import annotations

from qaflow.audit.mutants import Mutant, MutantKind, oracle_state
from qaflow.audit.mutants.differential import diff_config, judge_code_mutants, plan_code_mutants
from qaflow.audit.observation import Observation, imported_modules
from qaflow.audit.probe_agent import ProbeAgent
from qaflow.audit.probes.context import Probe, TaskRun, TrialRequest
from qaflow.audit.work_items import differential_item
from qaflow.models.audit import AuditFinding
from qaflow.models.probe_key import ProbeKey
from qaflow.trial.effects import Effect


def code_mutant_probe(
    run: TaskRun, effect: Effect, observation: Observation, probes: dict[str, object], cap: float
) -> Probe[list[AuditFinding]]:
    """The `code_mutants` summary goes into `probes`; each mutant's verifier runs under `cap` seconds."""
    plans, why = plan_code_mutants(imported_modules(observation, effect), effect, run.task.tests_dir)
    view: dict[str, object] = {"generated": len(plans)}
    probes["code_mutants"] = view
    if not plans:
        view["skipped"] = why
        return []
    requests = [TrialRequest(ProbeKey.mutant(p.mutant.name), 0, ProbeAgent.of_mutant(p.mutant, cap)) for p in plans]
    runs = yield from run.trials(requests)
    survivors = [p for p, r in zip(plans, runs, strict=True) if r.full]
    view["survived"] = [p.mutant.name for p in survivors]
    if not survivors:
        return []
    base, modes, links = oracle_state(effect)
    state = Mutant(name="oracle", kind=MutantKind.EMPTY_ALL, description="the oracle's state", writes=base,
                   modes={p: m for p, m in modes.items() if base.get(p) is not None}, links=links)  # fmt: skip
    works = [run.work(differential_item, state, diff_config(p.path, p.oracle, p.source, p.calls)) for p in survivors]
    outcomes = yield works
    checked = []
    for plan, outcome in zip(survivors, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            outcome = {"error": f"{type(outcome).__name__}: {outcome}", "differs": []}
        checked.append((plan, outcome))
    view["equivalent"] = [p.mutant.name for p, o in checked if not o.get("differs") and not o.get("error")]
    view["errors"] = {p.mutant.name: o["error"] for p, o in checked if o.get("error")}
    return judge_code_mutants(checked, str(run.task.home))
