"""CLI: `qaflow repair POOL` repairs the tasks whose audit found defects, in bounded rounds."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from qaflow.audit.runner import DEFAULT_REPEATS, AuditConfig
from qaflow.cli.llm_options import llm_from_cli
from qaflow.cli.options import AddressOpt, BackendOpt, ExecutorOpt, JsonOpt
from qaflow.cli.output import console, emit_json, json_to_stdout, usage_error
from qaflow.cli.runs import close_crashed_runs
from qaflow.errors import SandboxUnavailableError
from qaflow.executors import ExecutorError, executor_from_options
from qaflow.ledger import LedgerError
from qaflow.models.records import FindingCode, RunKind
from qaflow.models.repair import RepairRecord, TaskOutcome
from qaflow.pool import Pool, PoolError
from qaflow.repair.agent import LLMRepairer, LLMRepairerConfig
from qaflow.repair.base import Repairer, RepairError, Reviewer
from qaflow.repair.reviewer import LLMReviewer
from qaflow.repair.rounds import repair_pool
from qaflow.repair.rules import RuleRepairer

_STYLE = {TaskOutcome.ACCEPTED: "green", TaskOutcome.UNRESOLVED: "red", TaskOutcome.SKIPPED: "dim"}


def register(app: typer.Typer) -> None:
    app.command("repair")(repair)


def _codes(text: str | None) -> set[FindingCode] | None:
    if not text:
        return None
    known = {c.value for c in FindingCode}
    wanted = {c.strip() for c in text.split(",") if c.strip()}
    unknown = sorted(wanted - known)
    if unknown:
        usage_error(f"--codes: unknown finding code(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return {FindingCode(c) for c in wanted}


def print_summary(out: Console, records: list[RepairRecord], *, seconds: float) -> None:
    table = Table(title=f"repair · {len(records)} tasks · {seconds:.0f} s", title_justify="left")
    for col in ("task", "rounds", "outcome", "codes before -> after", "detail"):
        table.add_column(col, no_wrap=col in ("task", "rounds", "outcome"))
    for r in sorted(records, key=lambda r: (r.outcome.value, r.task)):
        style = _STYLE[r.outcome]
        outcome = r.outcome.value + (f" ({r.reason.value})" if r.reason else "")
        codes = f"{', '.join(r.codes_before) or '—'} -> {', '.join(r.codes_after) or '—'}"
        detail = r.final_path if r.outcome is TaskOutcome.ACCEPTED else r.detail
        table.add_row(escape(r.task), str(r.rounds), f"[{style}]{outcome}[/{style}]", codes, escape(detail or ""))
    out.print(table)
    counts = {o: sum(r.outcome is o for r in records) for o in TaskOutcome}
    out.print("[bold]" + ", ".join(f"{n} {o.value}" for o, n in counts.items()) + "[/bold]")


def _agents(
    model: str | None, audit_model: str | None, backend: str, cache_dir: Path
) -> tuple[Repairer, Reviewer | None]:
    """The LLM repair agent and the independent audit agent when a model is named (responses are
    cached under the pool so reruns are reproducible); the rule repairer and no reviewer otherwise."""
    llm = llm_from_cli(model, cache_dir=cache_dir)
    if llm is None:
        if audit_model:
            usage_error("--audit-model needs --model (or QAFLOW_MODEL): the rule repairer has no audit agent")
        return RuleRepairer(), None
    audit_llm = llm_from_cli(audit_model, cache_dir=cache_dir) if audit_model else llm
    assert audit_llm is not None
    return LLMRepairer(llm, LLMRepairerConfig(backend=backend)), LLMReviewer(audit_llm)


def repair(
    pool_dir: Annotated[Path, typer.Argument(metavar="POOL", help="Pool folder (task folders at any depth)")],
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Where repaired versions go (default POOL/.qaflow/repaired)")
    ] = None,
    max_rounds: Annotated[int, typer.Option(min=1, help="Repair rounds per task before it is unresolved")] = 3,
    codes: Annotated[
        str | None, typer.Option(help="Only attempt these finding codes, comma-separated (e.g. reward_tamper)")
    ] = None,
    backend: BackendOpt = "auto",
    repeats: Annotated[int, typer.Option(min=1, help="Runs each of nop and oracle in every audit")] = DEFAULT_REPEATS,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", min=1, help="Tasks repaired at once, and trials at once (local executor)")
    ] = 2,
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
    max_mutants: Annotated[int, typer.Option(min=0, help="Wrong solutions derived from the oracle, per audit")] = 12,
    json_to: JsonOpt = None,
    model: Annotated[
        str | None, typer.Option(help="litellm model of the repair agent (else env QAFLOW_MODEL; none: rule repairs)")
    ] = None,
    audit_model: Annotated[
        str | None, typer.Option(help="litellm model of the independent audit agent (default: --model)")
    ] = None,
) -> None:
    """Repair tasks with findings: copy, repair, fresh audit, until accepted or --max-rounds.

    With --model (or QAFLOW_MODEL) the LLM repair agent edits a copy of each task with read, write,
    edit and probe tools, and an independent audit agent (--audit-model, default the same model)
    must accept the change on top of a clean fresh audit. Without a model the rule repairer runs:
    it fixes mechanical verifier defects (no reward on failure, a swallowed exit status, `[ $? ]`,
    pytest exit code 5, a reward not tied to the checks' exit status, missing timeouts) and what the
    exploit battery proved (a grader run from the image, pytest loading agent files, an answer
    shipped in the image: each moved into tests/); whatever
    it cannot fix is recorded as unresolved (`qaflow pool list --status unresolved`). Original
    folders are never modified; every round is a new task version with its parent, diff and
    findings in the ledger, and a rerun goes on where the last one stopped. Exit code 0 unless misused.
    With --executor ray the audits' trials run as Ray tasks on the cluster at --address; the repair
    agents and the ledger stay in this process.

    Example: qaflow repair tasks_repo --max-rounds 2 --json repairs.json
    """
    wanted = _codes(codes)
    err = console(stderr=True)
    if not pool_dir.is_dir():
        usage_error(f"{pool_dir}: no such folder")
    config = AuditConfig(backend=backend, repeats=repeats, jobs=jobs, max_mutants=max_mutants)
    try:
        workers = executor_from_options(executor, address, jobs)
    except ExecutorError as e:
        usage_error(str(e))
    started = time.perf_counter()
    try:
        with workers, Pool.open(pool_dir) as pool:
            out = (out_dir or pool.root / ".qaflow" / "repaired").resolve()
            repairer, reviewer = _agents(model, audit_model, backend, pool.root / ".qaflow" / "llm-cache")
            close_crashed_runs(pool.ledger, RunKind.REPAIR, err)
            with Progress(
                SpinnerColumn(), TextColumn("[bold]repair[/bold] {task.description}"), TimeElapsedColumn(),
                console=err, transient=True,
            ) as progress:  # fmt: skip
                bar = progress.add_task("", total=None)
                records = repair_pool(
                    pool,
                    repairer=repairer,
                    reviewer=reviewer,
                    audit_config=config,
                    out_dir=out,
                    max_rounds=max_rounds,
                    codes=wanted,
                    progress=lambda msg: progress.update(bar, description=escape(msg)),
                    executor=workers,
                )
    except (PoolError, LedgerError, RepairError, SandboxUnavailableError) as e:
        usage_error(str(e))
    print_summary(console(stderr=json_to_stdout(json_to)), records, seconds=time.perf_counter() - started)
    if json_to:
        emit_json([r.model_dump(mode="json") for r in records], json_to)
    if not records:
        err.print("no task needs repair")
