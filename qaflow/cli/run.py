"""CLI: `qaflow run TASK --agent oracle|nop|exploit:NAME|mutant:NAME|tamper|rerun:N` runs one trial and prints
its reward."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from qaflow.agents import Agent, agent_by_name
from qaflow.audit.exploits import ExploitAgent
from qaflow.audit.exploits.lookup import ExploitLookupError, exploit_name, find_exploit
from qaflow.audit.mutant_lookup import MutantLookupError, find_mutant, mutant_name
from qaflow.audit.mutants import MutantAgent
from qaflow.audit.replay import TAMPER, rerun_count, tamper_agent
from qaflow.cli.options import BackendOpt, JsonOpt, NetworkOpt, OfflineOpt, RuntimeOpt
from qaflow.cli.output import console as cli_console
from qaflow.cli.output import emit_json, usage_error
from qaflow.errors import SandboxError, TaskError
from qaflow.models.trial import TrialResult
from qaflow.repair.review import pool_root_of
from qaflow.sandbox import with_runtime
from qaflow.sandbox.spec import RunNetwork, RuntimeNetwork
from qaflow.task import Task
from qaflow.trial import run_trial

AgentOpt = Annotated[
    str,
    typer.Option(
        "--agent",
        "-a",
        help="oracle (reference solution), nop (do nothing), exploit:NAME (replay an exploit the audit of this "
        "version proved: its finding's plants, written as the agent user), mutant:NAME (a wrong solution the "
        "audit ran, rebuilt from the recorded oracle effect), tamper (a full reward planted where the verifier "
        "writes or copies it, the verifier's logs left in place) or rerun:N (the oracle, then N more verifier "
        "runs on its final state). Each finding of `qaflow audit --json` names its command",
    ),
]


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    task_dir: Annotated[Path, typer.Argument(help="A task folder (Harbor layout)")],
    agent: AgentOpt = "oracle",
    backend: BackendOpt = "auto",
    runtime: RuntimeOpt = None,
    offline: OfflineOpt = False,
    network: NetworkOpt = RuntimeNetwork.TASK,
    reruns: Annotated[
        int, typer.Option(min=0, help="Run the verifier this many more times on the final state and print each outcome")
    ] = 0,
    as_json: JsonOpt = None,
) -> None:
    """Run one trial of a task and print its reward and timings.

    Example: qaflow run tasks_repo/csv-sum --agent oracle --backend bwrap
    Example: qaflow run tasks_repo/csv-sum --runtime runsc
    Example: qaflow run tasks_repo/csv-sum --offline --network none
    Example: qaflow run pool/my-task --agent exploit:script-shim
    Example: qaflow run pool/my-task --agent mutant:empty-all
    Example: qaflow run pool/my-task --agent tamper
    Example: qaflow run pool/my-task --agent rerun:12
    """
    console = cli_console()
    if task_dir.is_dir() and not (task_dir / "task.toml").is_file():
        usage_error(f"{task_dir}: not a task folder (no task.toml); `qaflow run` takes one task, `qaflow audit` a pool")
    try:
        more = rerun_count(agent)
        if more is not None:
            agent, reruns = "oracle", max(reruns, more)
        task = Task.load(task_dir, require_solution=agent == "oracle")
        chosen = _agent(task, agent)
        sandbox = with_runtime(backend, runtime)
    except (ExploitLookupError, MutantLookupError) as e:
        usage_error(str(e))
    except (TaskError, SandboxError, ValueError) as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    result = run_trial(
        task,
        chosen,
        backend=sandbox,
        network=RunNetwork(offline=offline, network=network),
        clear_verifier_logs=agent != TAMPER,
        verifier_reruns=reruns,
    )
    if as_json:
        emit_json(result, as_json)
    else:
        _print(console, result)
    if result.error is not None:
        raise typer.Exit(1)


def _agent(task: Task, agent: str) -> Agent:
    """oracle, nop, the exploit `exploit:NAME` the audit recorded for this version in the task's pool, or the
    mutant `mutant:NAME` it ran."""
    if (mutant := mutant_name(agent)) is not None:
        return MutantAgent(find_mutant(task, mutant, pool_root_of(task.path)))
    if agent == TAMPER:
        return tamper_agent(task, pool_root_of(task.path))
    name = exploit_name(agent)
    if name is None:
        return agent_by_name(agent)
    return ExploitAgent(find_exploit(task, name, pool_root_of(task.path)))


def _print(console: Console, result: TrialResult) -> None:
    table = Table(title=f"{result.task} · {result.agent} · {result.backend}", show_header=False)
    reward = "—" if result.reward is None else f"{result.reward:g}"
    table.add_row("reward", f"[bold]{reward}[/bold]" + (" (full)" if result.full_reward else ""))
    if result.rewards and len(result.rewards) > 1:
        table.add_row("rewards", ", ".join(f"{k}={v:g}" for k, v in result.rewards.items()))
    table.add_row("exit status", result.exit_status.value)
    for step in result.steps:
        shown = "—" if step.reward is None else f"{step.reward:g}" + (" (full)" if step.full_reward else "")
        stopped = f"; stopped here: {step.aborted}" if step.aborted else ""
        table.add_row(f"step {step.name}", f"{shown}, {step.exit_status.value}{stopped}")
    if result.reruns:
        table.add_row(
            "verifier reruns",
            f"{sum(result.reruns)}/{len(result.reruns)} full: "
            + " ".join("1" if full else "0" for full in result.reruns),
        )
    for phase, seconds in result.timings.items():
        table.add_row(f"{phase} time", f"{seconds:.3f} s")
    table.add_row("version", result.version[:12])
    console.print(table)
    if result.error is not None:
        console.print(f"[red]{result.error.kind.value}[/red]: {escape(result.error.message)}", soft_wrap=True)
    for label, ex in (("agent", result.agent_exec), ("verifier", result.verifier_exec)):
        if ex is not None and ex.exit_code != 0:
            tail = (ex.stdout + ex.stderr).strip()[-800:]
            console.print(f"[yellow]{label} exited {ex.exit_code}[/yellow]\n{tail}")
