"""`qaflow run TASK --agent mutant:NAME`: a mutant the audit of the task's current version ran, rebuilt from
the ledger.

Mutants are deterministic functions of what the audit recorded: the first oracle run's effect (its files,
`oracle` attempt 0) and the observation (`observe`), plus the task's own files. Rebuilding them here
gives the very writes the audit's trial applied, without storing every mutant's copy of the outputs.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from qaflow.audit.mutants import Mutant, deliverables, make_mutants
from qaflow.audit.mutants.differential import plan_code_mutants
from qaflow.audit.mutants.edge import edge_mutants, verifier_sources
from qaflow.audit.mutants.output import output_mutants
from qaflow.audit.mutants.overfit import overfit_mutants
from qaflow.audit.observation import Observation, imported_modules
from qaflow.audit.probe_run import ProbeRun
from qaflow.errors import PathError
from qaflow.ledger.db import LedgerError
from qaflow.models.probe_key import ProbeKey, ProbeKind, name_of, probe_name
from qaflow.models.records import ResultKey
from qaflow.pool import Pool, PoolError
from qaflow.task import Task
from qaflow.trial.effects import Effect

ALL_MUTANTS = 1000
"""A limit no audit reaches: mutant lists are prefixes of one deterministic order."""


class MutantLookupError(PathError):
    """The mutant cannot be rebuilt (no pool, no audit of this version, no such mutant)."""


def mutant_name(agent: str) -> str | None:
    """NAME of a `mutant:NAME` agent; None for any other agent name."""
    return name_of(agent, ProbeKind.MUTANT)


def focus_text(task: Task) -> str:
    """The instruction and the verifier's text: the files they mention are mutated first."""
    parts = [task.instruction]
    for path in sorted(task.tests_dir.rglob("*")):
        if path.is_file() and path.stat().st_size < 200_000:
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def rebuild_mutants(task: Task, effect: Effect, observation: Observation | None) -> dict[str, Mutant]:
    """Every data, code, overfit and output mutant an audit of `task` could run, by name (a superset of any
    audit's)."""
    focus = focus_text(task)
    deliverable = deliverables(observation, focus)
    found = {
        m.name: m
        for m in make_mutants(
            effect, limit=ALL_MUTANTS, focus=focus, deliverable=deliverable, instruction=task.instruction
        )
    }
    edges = edge_mutants(effect, observation, task.instruction, verifier_sources(task.tests_dir), deliverable)
    found.update({m.name: m for m in edges})
    if observation is not None:
        plans, _ = plan_code_mutants(imported_modules(observation, effect), effect, task.tests_dir)
        found.update({p.mutant.name: p.mutant for p in plans})
        found.update({m.name: m for m in overfit_mutants(effect, observation, task.instruction)})
        found.update({m.name: m for m in output_mutants(effect, observation)})
    return found


def find_mutant(task: Task, name: str, pool_root: Path | None) -> Mutant:
    """The mutant NAME of the audit of the task's current version, rebuilt from the ledger of `pool_root`.

    Raises:
        MutantLookupError: no pool, no recorded oracle effect for this version, or no such mutant (the
            message names some that exist).
    """
    if pool_root is None:
        raise MutantLookupError(
            task.path, f"not in an audited pool: run `qaflow audit {shlex.quote(str(task.path))}` first"
        )
    try:
        with Pool.open(pool_root, create=False) as pool:
            oracle, observe = (
                pool.ledger.get_result(ResultKey(task_version=task.version, probe=probe_name(kind), attempt=0))
                for kind in (ProbeKind.ORACLE, ProbeKind.OBSERVE)
            )
    except (PoolError, LedgerError) as e:
        raise MutantLookupError(task.path, f"cannot read the pool's ledger ({e})") from e
    effect = ProbeRun.model_validate(oracle.payload).effect if oracle is not None else None
    if effect is None:
        raise MutantLookupError(
            task.path,
            f"no recorded oracle effect for this version ({task.short_version}) in {pool_root}: run "
            f"`qaflow audit {shlex.quote(str(pool_root))}` first",
        )
    observation = ProbeRun.model_validate(observe.payload).observation if observe is not None else None
    mutants = rebuild_mutants(task, effect, observation)
    if name not in mutants:
        shown = ", ".join(str(ProbeKey.mutant(n)) for n in list(mutants)[:8]) or "none"
        raise MutantLookupError(task.path, f"no mutant {name!r} for this version; some that exist: {shown}")
    return mutants[name]
