"""CLI: `qaflow check POOL` runs the oracle and nop trials of every task in a folder."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from qaflow.agents import NopAgent, OracleAgent
from qaflow.cli.options import BackendOpt, NetworkOpt, OfflineOpt
from qaflow.cli.output import console as cli_console
from qaflow.cli.output import usage_error
from qaflow.errors import TaskError
from qaflow.models.trial import TrialResult
from qaflow.sandbox import resolve_backend
from qaflow.sandbox.spec import RunNetwork, RuntimeNetwork
from qaflow.task import Task, find_task_dirs
from qaflow.trial import run_trial


def register(app: typer.Typer) -> None:
    app.command("check")(check)


def _row(task_dir: Path, backend: str, network: RunNetwork) -> dict[str, object]:
    try:
        task = Task.load(task_dir)
    except TaskError as e:
        return {"task": task_dir.name, "path": str(task_dir), "invalid": f"{e.path}: {e.reason}"}
    results: dict[str, TrialResult] = {
        agent.name: run_trial(task, agent, backend=backend, network=network) for agent in (OracleAgent(), NopAgent())
    }
    row: dict[str, object] = {"task": task.name, "path": str(task_dir), "version": task.version}
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
) -> None:
    """Run the oracle and nop trials of every task: a sound task gets 1 from the oracle and less from nop.

    Example: qaflow check tasks_repo --backend bwrap --jobs 2
    """
    console = cli_console(stderr=as_json)
    chosen = resolve_backend(backend)
    run_network = RunNetwork(offline=offline, network=network)
    dirs = find_task_dirs(pool)
    if not dirs:
        usage_error(f"{pool}: no task folders (task.toml) found")
    rows: list[dict[str, object]] = []
    with Progress(console=console, transient=True) as progress, ThreadPoolExecutor(jobs) as ex:
        bar = progress.add_task(f"checking {len(dirs)} tasks on {chosen}", total=len(dirs))
        for row in ex.map(lambda d: _row(d, chosen, run_network), dirs):
            rows.append(row)
            progress.advance(bar)
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{pool} · {chosen}")
    for col in ("task", "oracle", "nop", "verdict", "seconds"):
        table.add_column(col)
    for row in rows:
        if "invalid" in row:
            table.add_row(str(row["task"]), "—", "—", f"[red]invalid[/red] {row['invalid']}", "")
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
    sound = sum(1 for r in rows if r.get("sound"))
    console.print(f"{len(rows)} tasks: {sound} sound, {len(rows) - sound} suspect or invalid")
