"""CLI: `qaflow check POOL` runs the oracle and nop trials of every task in a folder."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from qaflow.agents import NopAgent, OracleAgent
from qaflow.cli.options import AddressOpt, BackendOpt, ExecutorOpt, JsonOpt, NetworkOpt, OfflineOpt
from qaflow.cli.output import console as cli_console
from qaflow.cli.output import emit_json, json_to_stdout, usage_error
from qaflow.errors import TaskError
from qaflow.executors import ExecutorError, TaskRef, executor_from_options, resolve_task
from qaflow.executors.driver import Driver
from qaflow.models.trial import TrialResult
from qaflow.sandbox.choice import run_label
from qaflow.sandbox.spec import RunNetwork, RuntimeNetwork
from qaflow.task import Task, find_task_dirs
from qaflow.trial import run_trial


def register(app: typer.Typer) -> None:
    app.command("check")(check)


def check_item(
    task: Task | TaskRef, backend: str, offline: bool, network: str, run_id: str | None = None
) -> dict[str, object]:
    """Work item: the oracle and nop trials of one task, as its report row (runs locally or on a Ray worker)."""
    loaded = resolve_task(task)
    run_network = RunNetwork(offline=offline, network=RuntimeNetwork(network))
    results: dict[str, TrialResult] = {
        agent.name: run_trial(loaded, agent, backend=backend, network=run_network, run_id=run_id)
        for agent in (OracleAgent(), NopAgent())
    }
    row: dict[str, object] = {"task": loaded.name, "path": str(loaded.path), "version": loaded.version}
    for name, res in results.items():
        row[name] = {
            "reward": res.reward,
            "full_reward": res.full_reward,
            "exit_status": res.exit_status.value,
            "error": None if res.error is None else f"{res.error.kind.value}: {res.error.message}",
            "seconds": round(res.timings.get("total", 0.0), 3),
            "backend": res.backend,
        }
    oracle, nop = results["oracle"], results["nop"]
    row["sound"] = oracle.full_reward and nop.error is None and not nop.full_reward
    return row


def check(
    pool: Annotated[Path, typer.Argument(help="A folder of task folders")],
    backend: BackendOpt = "auto",
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Tasks run in parallel")] = 2,
    offline: OfflineOpt = False,
    network: NetworkOpt = RuntimeNetwork.TASK,
    as_json: JsonOpt = None,
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
) -> None:
    """Run the oracle and nop trials of every task: a sound task gets 1 from the oracle and less from nop.

    Tasks run on the executor the audit uses (`--executor ray` runs each task's trials as a Ray task).

    Example: qaflow check tasks_repo --backend bwrap --jobs 2
    """
    console = cli_console(stderr=json_to_stdout(as_json))
    chosen = run_label(backend)
    if not pool.is_dir():
        usage_error(f"{pool}: no such folder" if not pool.exists() else f"{pool}: not a folder")
    dirs = find_task_dirs(pool)
    if not dirs:  # an empty pool is a pool, as `qaflow pool scan` has it
        console.print(f"{pool}: no task folders (task.toml) found, nothing to check")
        if as_json:
            emit_json([], as_json)
        return
    try:
        workers = executor_from_options(executor, address, jobs)
    except ExecutorError as e:
        usage_error(str(e))
    rows: dict[Path, dict[str, object]] = {}
    with workers, Progress(console=console, transient=True) as progress:
        bar = progress.add_task(f"checking {len(dirs)} tasks on {chosen}", total=len(dirs))
        run_id = f"check-{uuid.uuid4().hex[:12]}"
        driver: Driver[Path] = Driver(workers, [run_id])
        for task_dir in dirs:
            try:
                task = Task.load(task_dir)
            except TaskError as e:
                rows[task_dir] = {"task": task_dir.name, "path": str(task_dir), "invalid": f"{e.path}: {e.reason}"}
                progress.advance(bar)
                continue
            driver.submit(task_dir, check_item, workers.share_task(task), backend, offline, network.value, run_id)

        def on_done(task_dir: Path, outcome: dict[str, object] | Exception) -> None:
            if isinstance(outcome, Exception):  # a lost worker or a crash is this task's row, the rest go on
                error = f"{type(outcome).__name__}: {outcome}"
                outcome = {"task": task_dir.name, "path": str(task_dir), "error": error}
            rows[task_dir] = outcome
            progress.advance(bar)

        driver.run(on_done)
    ordered = [rows[d] for d in dirs if d in rows]
    if as_json:
        emit_json(ordered, as_json)
        if json_to_stdout(as_json):
            return  # else the table for people too
    table = Table(title=f"{pool} · {chosen}")
    for col in ("task", "oracle", "nop", "verdict", "seconds"):
        table.add_column(col)
    for row in ordered:
        if "invalid" in row or "error" in row:
            why = f"invalid[/red] {row['invalid']}" if "invalid" in row else f"error[/red] {row['error']}"
            table.add_row(str(row["task"]), "—", "—", f"[red]{why}", "")
            continue
        cells = []
        for name in ("oracle", "nop"):
            res = row[name]
            assert isinstance(res, dict)
            # the table shows an error's first line (the build log tail is in --json)
            cells.append(str(res["error"]).splitlines()[0][:200] if res["error"] else f"{res['reward']:g}")
        seconds = sum(row[n]["seconds"] for n in ("oracle", "nop"))  # type: ignore[index]
        verdict = "[green]sound[/green]" if row["sound"] else "[red]suspect[/red]"
        table.add_row(str(row["task"]), *cells, verdict, f"{seconds:.2f}")
    console.print(table)
    sound = sum(1 for r in ordered if r.get("sound"))
    console.print(f"{len(ordered)} tasks: {sound} sound, {len(ordered) - sound} suspect or invalid")
