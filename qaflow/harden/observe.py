"""What a task's environment holds and what its reference solution changes, seen in a sandbox.

Transforms need facts only a run gives: the initial state of the workdir (files a `RUN` step makes
included), the files the oracle creates, modifies and deletes, and their contents. One sandbox:
snapshot (`workstate.py`, the same code the generated checks run), the original oracle, snapshot.
"""

from __future__ import annotations

import json
import shlex

from pydantic import BaseModel, ConfigDict, Field

from qaflow.agents import OracleAgent
from qaflow.harden.errors import HardenError
from qaflow.harden.scripts import script_text
from qaflow.sandbox.base import Sandbox
from qaflow.task import Task
from qaflow.trial.task_sandbox import sandbox_plan, task_sandbox

SNAPSHOT_SCRIPT = "/tmp/qaflow_workstate.py"
CONTENT_CAP = 1 << 20
"""Changed files larger than this are observed by hash only."""
TIMEOUT_S = 120.0


class WorkdirSnapshots(BaseModel):
    """The workdir before and after the reference solution (hashes), and what it created or modified."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    workdir: str
    folder: str = Field(description="The process folder left out of the snapshots")
    initial: dict[str, str] = Field(description="Relative path -> sha256 before the oracle")
    final: dict[str, str] = Field(default_factory=dict, description="Relative path -> sha256 after the oracle")
    contents: dict[str, bytes] = Field(default_factory=dict, description="Created or modified files (capped)")
    oracle_exit: int | None = None
    oracle_output: str = ""

    @property
    def created(self) -> list[str]:
        return sorted(p for p in self.final if p not in self.initial)

    @property
    def modified(self) -> list[str]:
        return sorted(p for p in self.final if p in self.initial and self.initial[p] != self.final[p])

    @property
    def deleted(self) -> list[str]:
        return sorted(p for p in self.initial if p not in self.final)

    @property
    def changed(self) -> list[str]:
        return sorted([*self.created, *self.modified, *self.deleted])


def _snapshot(box: Sandbox, workdir: str, folder: str) -> dict[str, str]:
    result = box.exec(
        f"python3 -S {SNAPSHOT_SCRIPT} snapshot {shlex.quote(workdir)} {shlex.quote(folder)}", timeout=TIMEOUT_S
    )
    if not result.ok:
        raise HardenError(workdir, f"cannot list the workdir in the sandbox (exit {result.exit_code}): "
                          f"{(result.stderr or result.stdout)[-500:]}")  # fmt: skip
    return json.loads(result.stdout)


def observe(
    task: Task, *, backend: str, folder: str = "", run_oracle: bool = True, run_id: str = "harden"
) -> WorkdirSnapshots:
    """Snapshot the task's workdir, run the original oracle (unless not asked), snapshot again.

    Raises:
        HardenError: the snapshot cannot run, or the oracle fails (a transform needs a working solution).
        SandboxError: the sandbox cannot start (the environment does not build, for one).
        SetupError: the environment's healthcheck never passed.
    """
    spec, chosen = sandbox_plan(task, backend=backend, run_id=run_id)
    with task_sandbox(task, spec, chosen) as box:
        box.put(SNAPSHOT_SCRIPT, script_text("workstate.py").encode())
        workdir = box.workdir.rstrip("/") or "/"
        seen = WorkdirSnapshots(workdir=workdir, folder=folder, initial=_snapshot(box, workdir, folder))
        if not run_oracle:
            return seen
        result = OracleAgent().run(task, box)
        seen.oracle_exit = None if result is None else result.exit_code
        seen.oracle_output = "" if result is None else (result.stdout + result.stderr)[-2000:]
        if result is not None and not result.ok:
            why = "timed out" if result.timed_out else f"exited with {result.exit_code}"
            output = seen.oracle_output[-500:]
            raise HardenError(task.solution_dir / "solve.sh", f"the reference solution {why}: {output}")
        seen.final = _snapshot(box, workdir, folder)
        for rel in [*seen.created, *seen.modified]:
            data = box.get(f"{workdir}/{rel}")
            if len(data) <= CONTENT_CAP:
                seen.contents[rel] = data
        return seen
