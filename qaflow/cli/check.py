"""CLI: `qaflow check POOL` runs the oracle and nop trials of every task in a folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from qaflow.agents import NopAgent, OracleAgent
from qaflow.cli.options import AddressOpt, BackendOpt, ExecutorOpt, NetworkOpt, OfflineOpt
from qaflow.cli.output import console as cli_console
from qaflow.cli.output import usage_error
from qaflow.errors import TaskError
from qaflow.executors import ExecutorError, Handle, TaskRef, executor_from_options, resolve_task
from qaflow.models.trial import TrialResult
from qaflow.sandbox import resolve_backend
from qaflow.sandbox.spec import RunNetwork, RuntimeNetwork
from qaflow.task import Task, find_task_dirs
from qaflow.trial import run_trial


def register(app: typer.Typer) -> None:
    app.command("check")(check)


def check_item(task: Task | TaskRef, backend: str, offline: bool, network: str) -> dict[str, object]:
    """Work item: the oracle and nop trials of one task, as its report row (runs locally or on a Ray worker)."""
    loaded = resolve_task(task)
    run_network = RunNetwork(offline=offline, network=RuntimeNetwork(network))
    results: dict[str, TrialResult] = {
        agent.name: run_trial(loaded, agent, backend=backend, network=run_network)
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
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per task")] = False,
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
) -> None:
    """Run the oracle and nop trials of every task: a sound task gets 1 from the oracle and less from nop.

    Tasks run on the executor the audit uses (`--executor ray` runs each task's trials as a Ray task).

    Example: qaflow check tasks_repo --backend bwrap --jobs 2
    """
    console = cli_console(stderr=as_json)
    chosen = resolve_backend(backend)
    dirs = find_task_dirs(pool)
    if not dirs:
        usage_error(f"{pool}: no task folders (task.toml) found")
    try:
        workers = executor_from_options(executor, address, jobs)
    except ExecutorError as e:
        usage_error(str(e))
    rows: dict[Path, dict[str, object]] = {}
    with workers, Progress(console=console, transient=True) as progress:
        bar = progress.add_task(f"checking {len(dirs)} tasks on {chosen}", total=len(dirs))
        handles: list[Handle] = []
        folder_of: dict[int, Path] = {}
        for task_dir in dirs:
            try:
                task = Task.load(task_dir)
            except TaskError as e:
                rows[task_dir] = {"task": task_dir.name, "path": str(task_dir), "invalid": f"{e.path}: {e.reason}"}
                progress.advance(bar)
                continue
            handles.append(workers.submit(check_item, workers.share_task(task), chosen, offline, network.value))
            folder_of[id(handles[-1])] = task_dir
        try:
            for done in workers.as_completed(handles):
                task_dir = folder_of[id(done)]
                try:
                    rows[task_dir] = done.result()
                except Exception as e:  # a lost worker or a crash is this task's row, the rest go on
                    rows[task_dir] = {"task": task_dir.name, "path": str(task_dir), "error": f"{type(e).__name__}: {e}"}
                progress.advance(bar)
        except KeyboardInterrupt:
            workers.cancel(handles)
            raise
    ordered = [rows[d] for d in dirs if d in rows]
    if as_json:
        print(json.dumps(ordered, indent=2))
        return
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
            cells.append(res["error"] or f"{res['reward']:g}")
        seconds = sum(row[n]["seconds"] for n in ("oracle", "nop"))  # type: ignore[index]
        verdict = "[green]sound[/green]" if row["sound"] else "[red]suspect[/red]"
        table.add_row(str(row["task"]), *cells, verdict, f"{seconds:.2f}")
    console.print(table)
    sound = sum(1 for r in ordered if r.get("sound"))
    console.print(f"{len(ordered)} tasks: {sound} sound, {len(ordered) - sound} suspect or invalid")
