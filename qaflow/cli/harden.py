"""CLI: `qaflow harden ...` (requirement graphs and hardening transforms), `qaflow accept` (the acceptance
gate) and `qaflow attempts import` (other solvers' results as gate evidence)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from qaflow.audit.runner import DEFAULT_REPEATS, AuditConfig, Auditor
from qaflow.cli.llm_options import llm_from_cli
from qaflow.cli.options import BackendOpt, JsonOpt
from qaflow.cli.output import console, emit_json, usage_error
from qaflow.errors import LLMError, QaflowError, TaskError
from qaflow.harden.compose import ComposeConfig, Link, compose
from qaflow.harden.errors import HardenError
from qaflow.harden.expand import ExpandConfig, expand
from qaflow.harden.gate import ALLOW_HOLES_FLAG, Band, GateConfig, GateDecision, decide
from qaflow.harden.process_chain import ProcessChainConfig, process_chain
from qaflow.harden.propose import propose_graph, save_proposal, with_proposal
from qaflow.harden.versions import (
    DEFAULT_OUT,
    GRAPH_FILE,
    HardenRecord,
    check_out_dir,
    record_graph,
    resolve_version,
)
from qaflow.importers.attempts import import_attempts
from qaflow.ledger import LedgerError
from qaflow.models.records import RunKind
from qaflow.pool import DEFAULT_LEDGER, Pool, PoolError
from qaflow.requirements.graph import RequirementGraph, labels
from qaflow.requirements.spec import GraphSpecError
from qaflow.task import Task

T = TypeVar("T")

app = typer.Typer(
    name="harden",
    help="Requirement graphs and hardening transforms (process chain, compose, LLM expansion).",
    no_args_is_help=True,
)
attempts_app = typer.Typer(name="attempts", help="Other solvers' attempt results, as acceptance-gate evidence.",
                           no_args_is_help=True)  # fmt: skip

PoolOption = Annotated[
    Path | None,
    typer.Option("--pool", help="Pool whose ledger records the versions (default: the nearest folder above the "
                 "task with a .qaflow/ledger.sqlite, else the task's parent folder)"),
]  # fmt: skip
OutOption = Annotated[Path | None, typer.Option("--out", help="Where new versions go (default POOL/.qaflow/hardened)")]


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="harden")
    root.add_typer(attempts_app, name="attempts")
    root.command("accept")(accept)


def _pool_root(task: Path, pool: Path | None) -> Path:
    if pool is not None:
        if not pool.is_dir():
            usage_error(f"--pool {pool}: no such folder")
        return pool
    start = task.resolve()
    for folder in [start.parent, *start.parent.parents]:
        if (folder / DEFAULT_LEDGER).is_file():
            return folder
    return start.parent


def _task_dir(path: Path) -> Path:
    if not (path / "task.toml").is_file():
        usage_error(f"{path}: not a task folder (no task.toml)")
    return path


def _run(pool: Pool, kind: RunKind, config: dict[str, Any], work: Callable[[str], T]) -> T:
    with pool.ledger.run(kind, config) as run:
        return work(run.run_id)


def _print_records(records: list[HardenRecord], failures: list[tuple[str, str]], seconds: float) -> None:
    out = console()
    table = Table(title=f"harden · {len(records)} new versions · {seconds:.0f} s", title_justify="left")
    for col in ("task", "transform", "version", "depth", "reqs", "cross checks", "folder"):
        table.add_column(col, no_wrap=col != "folder")
    for r in records:
        m = r.metrics
        table.add_row(escape(r.task), r.transform.value, r.version[:12], str(m.depth), str(m.n_requirements),
                      str(m.n_cross_artifact_checks), escape(r.path))  # fmt: skip
    out.print(table)
    for task, reason in failures:
        out.print(f"[red]{escape(task)}[/red]: {escape(reason)}")


def _emit(records: list[HardenRecord], failures: list[tuple[str, str]], as_json: str | None, started: float) -> None:
    if as_json:
        emit_json({"versions": [r.model_dump(mode="json") for r in records],
                   "failures": [{"task": t, "reason": r} for t, r in failures]}, as_json)  # fmt: skip
    else:
        _print_records(records, failures, time.perf_counter() - started)


# -- harden graph ------------------------------------------------------------------------------------


@app.command("graph")
def graph_cmd(
    task_dir: Annotated[Path, typer.Argument(metavar="TASK", help="Task folder")],
    png: Annotated[Path | None, typer.Option("--png", help="Also draw the graph as a PNG here")] = None,
    as_json: JsonOpt = None,
    save: Annotated[bool, typer.Option(help="Save node-link JSON as TASK/.qaflow/requirements.graph.json")] = True,
    model: Annotated[
        str | None, typer.Option(help="litellm model that proposes requirements, stored for review (or QAFLOW_MODEL)")
    ] = None,
    script: Annotated[Path | None, typer.Option(hidden=True, help="Scripted model replies (JSON), for tests")] = None,
    pool_dir: PoolOption = None,
) -> None:
    """Build a task's requirement graph and answer its queries.

    The graph joins what task.toml declares in [metadata.qaflow] (requirements, artifacts, checks) with a
    static reading of tests/ (which paths each check opens). It reports unverified requirements (no check
    reaches them), checks no requirement reaches, cycles, and the difficulty metrics (depth, requirements,
    cross-artifact checks), recorded on the version when a pool ledger knows it. With --model a model
    proposes requirements too; the proposal is saved as TASK/.qaflow/requirements.proposed.json for review
    and never written into task.toml.

    Example: qaflow harden graph tasks_repo/csv-sum --png csv-sum.png
    """
    task_dir = _task_dir(task_dir)
    try:
        task = Task.load(task_dir)
        graph = base = RequirementGraph.for_task(task)
        llm = llm_from_cli(model, cache_dir=task_dir / ".qaflow" / "llm-cache", script=script)
        proposal = None
        if llm is not None:
            spec = propose_graph(task, llm)
            proposal = save_proposal(task, spec, llm.model)
            graph = with_proposal(task, spec)
    except (TaskError, GraphSpecError, HardenError, LLMError) as e:
        usage_error(str(e))
    saved = graph.save(task_dir / GRAPH_FILE) if save else None
    picture = graph.draw_png(png) if png else None
    _record_metrics(task_dir, pool_dir, task, base)
    summary = graph.summary()
    files = {"json": str(saved) if saved else None, "png": str(picture) if picture else None,
             "proposal": str(proposal) if proposal else None}  # fmt: skip
    if as_json:
        emit_json({"task": task.name, "version": task.version, **summary, "files": files}, as_json)
        return
    out = console()
    m = graph.metrics()
    out.print(f"[bold]{escape(task.name)}[/bold] {task.short_version}: depth {m.depth}, {m.n_requirements} "
              f"requirements, {m.n_artifacts} artifacts, {m.n_checks} checks, {m.n_cross_artifact_checks} "
              "cross-artifact checks")  # fmt: skip
    unverified = summary["unverified_requirements"]
    out.print(f"unverified requirements: {len(unverified)}")
    for r in unverified:
        out.print(f"  [red]{escape(r['key'])}[/red] {escape(r.get('text', ''))}")
    out.print(f"checks no requirement reaches: {', '.join(labels(summary['orphan_checks'])) or 'none'}")
    out.print(f"cycles: {len(summary['cycles'])}")
    for kind, path in files.items():
        if path:
            out.print(f"{kind}: {escape(path)}")


def _record_metrics(task_dir: Path, pool_dir: Path | None, task: Task, graph: RequirementGraph) -> None:
    root = _pool_root(task_dir, pool_dir)
    if not (root / DEFAULT_LEDGER).is_file():
        return
    with Pool.open(root, create=False) as pool:
        if pool.ledger.get_version(task.version) is not None:
            _run(pool, RunKind.HARDEN, {"command": "graph"},
                 lambda run_id: record_graph(pool.ledger, task.version, graph, run_id))  # fmt: skip


# -- transforms --------------------------------------------------------------------------------------


@app.command("process-chain")
def process_chain_cmd(
    tasks: Annotated[list[Path], typer.Argument(metavar="TASK...", help="Task folders")],
    out_dir: OutOption = None,
    pool_dir: PoolOption = None,
    backend: BackendOpt = "auto",
    folder: Annotated[str, typer.Option(help="The record's folder under the workdir")] = "process",
    as_json: JsonOpt = None,
) -> None:
    """Process-chain tasks: plan, execution log and report must agree with the final state.

    Each new version also requires plan.md (written first), exec.log (the commands run and the files each
    changed) and report.json (hashes, sizes, counts) that agree with the real final state. The original verifier
    runs as a step after generated consistency checks; the reference solution is wrapped to write the three
    files. The environment and the oracle are observed once in a sandbox. Each result is a new version (status
    new, parent: the task) under OUT/<folder>@process-chain.

    Example: qaflow harden process-chain tasks_repo/csv-sum tasks_repo/word-frequency -b bwrap
    """
    try:
        config = ProcessChainConfig(folder=folder, backend=backend)
    except ValueError as e:
        usage_error(str(e))
    dirs = [_task_dir(t) for t in tasks]
    started = time.perf_counter()
    records: list[HardenRecord] = []
    failures: list[tuple[str, str]] = []
    with _open_pool(_pool_root(dirs[0], pool_dir)) as pool:
        out = _out(pool, out_dir)

        def work(run_id: str) -> None:
            for task_dir in dirs:
                try:
                    records.append(process_chain(pool, task_dir, out, run_id=run_id, config=config))
                except QaflowError as e:
                    failures.append((str(task_dir), str(e)))

        _run(pool, RunKind.HARDEN, {"transform": "process_chain", **config.model_dump()}, work)
    _emit(records, failures, as_json, started)


@app.command("compose")
def compose_cmd(
    task_a: Annotated[Path, typer.Argument(metavar="TASK_A", help="Part 1")],
    task_b: Annotated[Path, typer.Argument(metavar="TASK_B", help="Part 2, which consumes part 1's output")],
    link: Annotated[
        list[str] | None,
        typer.Option("--link", help="SOURCE=TARGET: a file of part 1 that part 2 reads (repeatable)"),
    ] = None,
    out_dir: OutOption = None,
    pool_dir: PoolOption = None,
    backend: BackendOpt = "auto",
    as_json: JsonOpt = None,
) -> None:
    """Compose two tasks: part 2 consumes part 1's output.

    Part 2 starts from a file part 1 produces, which the composed image does not hold (links are found
    by content, or named with --link). Instructions, verifiers and solutions are merged; the verifier
    passes only when both parts pass.

    Example: qaflow harden compose PART1_DIR PART2_DIR --link /app/out.txt=/app/input.txt -b bwrap
    """
    try:
        config = ComposeConfig(backend=backend, links=[Link.parse(x) for x in link or []])
    except ValueError as e:
        usage_error(str(e))
    a, b = _task_dir(task_a), _task_dir(task_b)
    started = time.perf_counter()
    records: list[HardenRecord] = []
    failures: list[tuple[str, str]] = []
    with _open_pool(_pool_root(a, pool_dir)) as pool:
        out = _out(pool, out_dir)

        def work(run_id: str) -> None:
            try:
                records.append(compose(pool, a, b, out, run_id=run_id, config=config))
            except QaflowError as e:
                failures.append((f"{a} + {b}", str(e)))

        _run(pool, RunKind.HARDEN, {"transform": "compose", **config.model_dump()}, work)
    _emit(records, failures, as_json, started)


@app.command("expand")
def expand_cmd(
    task_dir: Annotated[Path, typer.Argument(metavar="TASK", help="Task folder")],
    model: Annotated[str | None, typer.Option(help="litellm model proposing requirements (or QAFLOW_MODEL)")] = None,
    max_requirements: Annotated[int, typer.Option(min=1, max=10, help="Requirements asked for, at most")] = 3,
    out_dir: OutOption = None,
    pool_dir: PoolOption = None,
    script: Annotated[Path | None, typer.Option(hidden=True, help="Scripted model replies (JSON), for tests")] = None,
    as_json: JsonOpt = None,
) -> None:
    """Expand a task with extra requirements a model proposes.

    Each requirement comes with a check (a python3 script) and the reference solution's addition, all
    validated before anything is written. The new version's author is llm:<model>: the gate does not count that
    model's own attempts. Responses are cached under POOL/.qaflow/llm-cache.

    Example: qaflow harden expand tasks_repo/word-frequency --model openai/gpt-4o-mini
    """
    task_dir = _task_dir(task_dir)
    started = time.perf_counter()
    records: list[HardenRecord] = []
    failures: list[tuple[str, str]] = []
    with _open_pool(_pool_root(task_dir, pool_dir)) as pool:
        llm = llm_from_cli(model, cache_dir=pool.root / ".qaflow" / "llm-cache", script=script)
        if llm is None:
            usage_error("expand needs --model (or QAFLOW_MODEL)")
        out = _out(pool, out_dir)
        config = ExpandConfig(max_requirements=max_requirements)

        def work(run_id: str) -> None:
            try:
                records.append(expand(pool, task_dir, out, llm, run_id=run_id, config=config))
            except QaflowError as e:
                failures.append((str(task_dir), str(e)))

        _run(pool, RunKind.HARDEN, {"transform": "expand", "model": llm.model, **config.model_dump()}, work)
    _emit(records, failures, as_json, started)


def _out(pool: Pool, out_dir: Path | None) -> Path:
    try:
        return check_out_dir(pool, out_dir or pool.root / DEFAULT_OUT)
    except HardenError as e:
        usage_error(f"--out {e.path}: {e.reason}")


def _open_pool(root: Path, *, create: bool = True) -> Pool:
    try:
        return Pool.open(root, create=create)
    except (PoolError, LedgerError) as e:
        usage_error(str(e))


# -- accept ------------------------------------------------------------------------------------------


def accept(
    tasks: Annotated[list[str], typer.Argument(metavar="TASK...", help="Task folders, version ids or task names")],
    band: Annotated[str, typer.Option(help="Pass-rate band LOW,HIGH of other solvers' attempts")] = "0,1",
    inclusive: Annotated[bool, typer.Option(help="Include the band's bounds")] = False,
    min_attempts: Annotated[int, typer.Option(min=1, help="Fewest other-solver attempts that count")] = 1,
    audit: Annotated[bool, typer.Option("--audit", help="Audit each version first (recorded probes are reused)")] = (
        False
    ),
    backend: BackendOpt = "auto",
    repeats: Annotated[int, typer.Option(min=1, help="With --audit: runs each of nop and oracle")] = DEFAULT_REPEATS,
    pool_dir: PoolOption = None,
    allow_harness_holes: Annotated[
        bool,
        typer.Option(
            ALLOW_HOLES_FLAG, help="Accept versions a proven harness hole reaches (when the harness will be fixed)"
        ),
    ] = False,
    as_json: JsonOpt = None,
) -> None:
    """Accept hardened or repaired versions only on independent evidence.

    The evidence: (a) a clean audit with every probe, mutants included, (b) the reference solution passing, (c)
    attempts by solvers other than the change's author (model rollouts, or results imported with `qaflow
    attempts import`) with a pass rate inside the band (exclusive 0,1 by default). Versions with all three
    become accepted; the others candidate (a version the audit marked needs_repair keeps that status). Prints
    which evidence is present and which is missing. A version a proven harness hole reaches (the audit's
    `exposed_by`) is not accepted unless --allow-harness-holes. Exit code 0 unless misused.

    Example: qaflow accept tasks_repo/.qaflow/hardened/csv-sum@process-chain --audit -b bwrap
    """
    try:
        config = GateConfig(band=Band.parse(band, inclusive=inclusive), min_attempts=min_attempts,
                            allow_harness_holes=allow_harness_holes)  # fmt: skip
    except ValidationError as e:
        usage_error(f"--band {band}: " + "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors()))
    except ValueError as e:
        usage_error(f"--band: {e}")
    first = Path(tasks[0])
    by_folder = (first / "task.toml").is_file()
    root = _pool_root(first, pool_dir) if by_folder else (pool_dir or Path.cwd())
    decisions: list[GateDecision] = []
    with _open_pool(root, create=by_folder) as pool:
        try:
            versions = [resolve_version(pool, t) for t in tasks]
        except HardenError as e:
            usage_error(str(e))

        def work(run_id: str) -> None:
            if audit:
                auditor = Auditor(pool.ledger, run_id, AuditConfig(backend=backend, repeats=repeats), pool=pool)
                try:
                    for v in versions:
                        auditor.audit_one(pool.root / v.path)
                finally:
                    auditor.close()
            for v in versions:
                current = pool.ledger.get_version(v.version) or v
                decisions.append(decide(pool.ledger, current, run_id=run_id, config=config))

        _run(pool, RunKind.HARDEN, {"command": "accept", **config.model_dump(mode="json")}, work)
    if as_json:
        emit_json([d.model_dump(mode="json") for d in decisions], as_json)
        return
    out = console()
    for d in decisions:
        style = "green" if d.accepted else "yellow"
        out.print(f"[bold]{escape(d.task)}[/bold] {d.version[:12]}: [{style}]{d.status.value}[/{style}]"
                  + (f" (author {escape(d.author)})" if d.author else ""))  # fmt: skip
        for ev in d.evidence:
            mark = "[green]present[/green]" if ev.ok else "[red]missing[/red]"
            out.print(f"  {ev.kind.value:<9} {mark}  {escape(ev.summary)}")


# -- attempts import ---------------------------------------------------------------------------------


@attempts_app.command("import")
def attempts_import(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="CSV (with a header) or JSON lines of attempts")],
    pool_dir: Annotated[Path, typer.Option("--pool", help="Pool whose ledger records the attempts")],
    as_json: JsonOpt = None,
) -> None:
    """Import other solvers' attempt results as gate evidence.

    Each row: task (folder, version id, pool path or name), solver, and passed (true/false) or reward (passed
    when >= 1); attempt (an integer) is optional. Re-importing a file records nothing twice.

    `qaflow import attempts` and `qaflow attempts import` are the same command.

    Example: qaflow import attempts attempts.csv --pool tasks_repo
    """
    if not file.is_file():
        usage_error(f"{file}: no such file")
    with _open_pool(pool_dir, create=False) as pool:
        try:
            report = _run(pool, RunKind.IMPORT, {"command": "attempts import", "file": str(file)},
                          lambda run_id: import_attempts(pool, file, run_id=run_id))  # fmt: skip
        except HardenError as e:
            usage_error(str(e))
    if as_json:
        emit_json(report, as_json)
        return
    console().print(f"{report.rows} attempts read: {report.imported} recorded, {report.known} already known, "
                    f"over {len(report.by_version)} versions")  # fmt: skip
