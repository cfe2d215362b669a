"""The process-chain transform: the task also requires a plan, an execution log and a report that agree with
each other and with the real final state (docs/harden.md has the file spec the instruction gets).

The new version keeps the original verifier and solution and wraps them:
- tests/: the original `test.sh` becomes `original_test.sh`, run as a step of a composite `test.sh`
  after `qaflow_process_check.py` (its configuration `qaflow_process.json` holds the workdir, the
  process folder and the manifest of the initial state, observed in a sandbox at harden time);
  reward 1 only when both pass;
- solution/: the original `solve.sh` becomes `original_solve.sh`; the new `solve.sh` writes the plan
  (which names the files the original changes, observed at harden time), runs the original under a
  logging shim, and writes the report from the real final state;
- instruction.md: the spec of the three files appended;
- task.toml: the process chain's requirement graph appended to `[metadata.qaflow]`, and a `harden`
  entry that marks the transform (a process-chained task is not chained again: apply it last).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from qaflow.errors import TaskError
from qaflow.harden.errors import HardenError
from qaflow.harden.observe import WorkdirSnapshots, observe
from qaflow.harden.scripts import script_text
from qaflow.harden.verifier import Step, StepKind, free_name, write_composite
from qaflow.harden.versions import HardenRecord, Transform, building, ensure_recorded, record
from qaflow.pool import Pool
from qaflow.requirements.spec import SECTION, ArtifactSpec, CheckSpec, GraphSpec, GraphSpecError, RequirementSpec
from qaflow.task import Task, VerifierEnvironmentMode

PLAN, LOG, REPORT = "plan.md", "exec.log", "report.json"
CHECK_SCRIPT = "qaflow_process_check.py"
SOLVE_SCRIPT = "qaflow_process_solve.py"
STATE_MODULE = "qaflow_workstate.py"
CONFIG_FILE = "qaflow_process.json"
CHECKS = {
    "plan": ("plan.md is non-empty text", ["plan"]),
    "plan_first": ("plan.md precedes the work and names every change", ["plan", "state"]),
    "log": ("exec.log is well-formed and starts after the plan", ["log", "plan"]),
    "log_replay": ("exec.log, replayed, accounts for exactly the changed state", ["log", "state"]),
    "report_state": ("report.json's files, deletions and counts match the final state", ["report", "state"]),
    "report_binds": ("report.json's plan and log hashes match plan.md and exec.log", ["report", "plan", "log"]),
}
AUTHOR = f"harden:{Transform.PROCESS_CHAIN.value}"
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_.:/@+-]")

INSTRUCTION = """

## Process record

Besides the work above, keep a record of how you did it in `{proc}/`. The task passes only when its
own checks pass and this record agrees with itself and with the final state of `{workdir}`. The
folder must hold exactly three files:

1. `{proc}/plan.md`: your plan, written before you create, modify or delete anything else under
   `{workdir}`, and not changed afterwards. It names every file you will create, modify or delete,
   by its path relative to `{workdir}` (for instance `out/result.txt`), or names a folder holding
   it, with a trailing slash (for instance `out/`).
2. `{proc}/exec.log`: one JSON object per line, in the order you ran them, for every command that
   changed files under `{workdir}`:
   `{{"cmd": "<the command>", "ts": <unix time in seconds when it started>,
   "files_written": [...], "files_deleted": [...]}}` with paths relative to `{workdir}`
   (`files_deleted` may be left out when empty). Times never decrease, and none is earlier than
   the moment `plan.md` was written. Read from top to bottom, the
   log accounts for exactly what changed: a file that differs at the end from how `{workdir}`
   started was last listed under `files_written`, a file that was removed last listed under
   `files_deleted`; a file last listed as written exists at the end, one last listed as deleted
   does not.
3. `{proc}/report.json`, written last, describing the final state, with exactly these keys:

   ```
   {{"plan_sha256": "<hex>", "log_sha256": "<hex>", "log_entries": <n>,
    "files": [{{"path": "<relative path>", "change": "created" or "modified",
               "sha256": "<hex>", "bytes": <n>, "lines": <n>}}, ...],
    "deleted": ["<relative path>", ...],
    "counts": {{"created": <n>, "modified": <n>, "deleted": <n>}}}}
   ```

   where `plan_sha256` and `log_sha256` are the SHA-256 (lowercase hex) of `plan.md` and
   `exec.log`, `log_entries` counts the non-empty lines of `exec.log`, `files` lists every file
   created or modified (in any order) with the SHA-256 of its bytes, its size in bytes and its
   number of lines (newline characters, plus one for a last line without one), and `deleted` lists
   every file removed.

The record itself (`{folder}/`), `.git`, `__pycache__` and tool cache folders and `*.pyc` files are
not part of the state; a symbolic link counts as a file whose bytes are the path it points to.
"""


class ProcessChainConfig(BaseModel):
    folder: str = Field("process", description="The record's folder, directly under the workdir")
    backend: str = Field("auto", description="Sandbox backend used to observe the environment and the oracle")
    tolerance_s: float = Field(1.0, ge=0, description="Clock slack allowed between plan.md's ctime and the log")
    max_listed: int = Field(40, ge=1, description="Changed paths listed one by one in the plan; more go by folder")

    @field_validator("folder")
    @classmethod
    def _simple(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", value) or value in (".", ".."):
            raise ValueError(f"folder {value!r}: one plain folder name (letters, digits, _ . -)")
        return value


def harden_markers(task: Task) -> list[dict[str, Any]]:
    section = task.config.metadata.get(SECTION)
    marks = section.get("harden", []) if isinstance(section, dict) else []
    return [m for m in marks if isinstance(m, dict)] if isinstance(marks, list) else []


def is_process_chained(task: Task) -> bool:
    return any(m.get("transform") == Transform.PROCESS_CHAIN.value for m in harden_markers(task))


def check_transformable(task: Task, transform: Transform) -> None:
    """Refuse what the transforms cannot wrap.

    Raises:
        HardenError: multi-step tasks, a separate verifier environment, no test.sh or solve.sh, or a
            task already process-chained (the process chain must be the last transform).
    """
    if task.config.steps:
        raise HardenError(task.path / "task.toml", "multi-step tasks ([[steps]]) cannot be hardened yet")
    if task.verifier_mode is VerifierEnvironmentMode.SEPARATE:
        raise HardenError(task.path / "task.toml", "a separate verifier environment cannot be hardened yet")
    for path in (task.tests_dir / "test.sh", task.solution_dir / "solve.sh"):
        if not path.is_file():
            raise HardenError(path, f"{transform.value} wraps {path.name}, which is missing")
    if is_process_chained(task):
        raise HardenError(
            task.path / "task.toml",
            "the task is process-chained already; the process chain must be the last transform applied",
        )


def process_chain(
    pool: Pool, task_dir: Path, out_dir: Path, *, run_id: str, config: ProcessChainConfig | None = None
) -> HardenRecord:
    """Process-chain the task at `task_dir` into `out_dir/<folder>@process-chain`, recorded in `pool`.

    Raises:
        HardenError: the task cannot be chained (see `check_transformable`), its record folder is in use,
            its reference solution fails, or the result does not load.
        SandboxError: the environment cannot be observed.
    """
    config = config or ProcessChainConfig()
    try:
        task = Task.load(task_dir)
    except TaskError as e:
        raise HardenError(e.path, e.reason) from e
    check_transformable(task, Transform.PROCESS_CHAIN)
    parent = ensure_recorded(pool, task)
    seen = observe(task, backend=config.backend, run_id=run_id)
    _check_folder_free(task, seen, config.folder)
    with building(task.path, out_dir, f"{task.path.name}@process-chain") as work:
        spec = _graph(task, seen, config)
        tests = _write_tests(work, seen, config)
        original_solve = _write_solution(work, task, seen, config)
        proc = f"{seen.workdir.rstrip('/')}/{config.folder}"
        spec_text = INSTRUCTION.format(proc=proc, workdir=seen.workdir, folder=config.folder)
        instruction = task.instruction.rstrip("\n") + "\n" + spec_text
        (work / "instruction.md").write_text(instruction, encoding="utf-8")
        marker = {"transform": Transform.PROCESS_CHAIN.value, "parent": task.version, "folder": config.folder}
        write_task_toml(work, task, spec, marker)
        detail = {"workdir": seen.workdir, "folder": config.folder, "observed_changes": seen.changed,
                  "original_test": tests, "original_solve": original_solve}  # fmt: skip
        return record(pool, work, transform=Transform.PROCESS_CHAIN, author=AUTHOR, parents=[parent], run_id=run_id,
                      detail=detail)  # fmt: skip


def _check_folder_free(task: Task, seen: WorkdirSnapshots, folder: str) -> None:
    used = [p for p in [*seen.initial, *seen.final] if p == folder or p.startswith(folder + "/")]
    proc = f"{seen.workdir.rstrip('/')}/{folder}"
    if used or re.search(rf"{re.escape(proc)}(?![\w.-])", task.instruction):
        where = used[0] if used else "the instruction"
        raise HardenError(task.path, f"{proc}/ is already used by the task ({where}); choose another record folder")


def grouped(paths: list[str], limit: int) -> list[str]:
    """`paths` as they are, or (more than `limit`) top-level files plus top-level folders written with '/'."""
    if len(paths) <= limit:
        return paths
    return sorted({p.split("/", 1)[0] + "/" if "/" in p else p for p in paths})


def plan_text(task: Task, seen: WorkdirSnapshots, limit: int) -> str:
    first = next((ln.strip() for ln in task.instruction.splitlines() if ln.strip()), task.name)
    listed = "\n".join(f"- {p}" for p in grouped(seen.changed, limit)) or "- (nothing)"
    return (
        "# Plan\n\n"
        f"Task: {first[:160]}\n\n"
        "1. Write this plan before changing anything under the workdir.\n"
        "2. Run the reference steps, logging the command and the files it wrote and deleted.\n"
        "3. Write the report from the final state.\n\n"
        f"Files I will create, modify or delete (relative to `{seen.workdir}`):\n{listed}\n"
    )


def _write_tests(work: Path, seen: WorkdirSnapshots, config: ProcessChainConfig) -> str:
    tests = work / "tests"
    original = free_name(tests, "original_test", ".sh")
    (tests / "test.sh").rename(tests / original)
    for name in (CHECK_SCRIPT, STATE_MODULE, CONFIG_FILE):
        if (tests / name).exists():
            raise HardenError(tests / name, "the tests already hold a file of this name")
    (tests / STATE_MODULE).write_text(script_text("workstate.py"), encoding="utf-8")
    (tests / CHECK_SCRIPT).write_text(script_text("process_check.py"), encoding="utf-8")
    check_config = {"workdir": seen.workdir, "folder": config.folder, "manifest": seen.initial,
                    "tolerance_s": config.tolerance_s}  # fmt: skip
    (tests / CONFIG_FILE).write_text(json.dumps(check_config, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    steps = [
        Step(kind=StepKind.SCRIPT, path=CHECK_SCRIPT, label="process record: plan, log, report and final state"),
        Step(kind=StepKind.VERIFIER, path=original, label="the original verifier"),
    ]
    write_composite(tests, "Process-chained verifier: the process record's checks, then the original verifier.",
                    steps)  # fmt: skip
    return original


def _write_solution(work: Path, task: Task, seen: WorkdirSnapshots, config: ProcessChainConfig) -> str:
    solution = work / "solution"
    original = free_name(solution, "original_solve", ".sh")
    (solution / "solve.sh").rename(solution / original)
    for name in (SOLVE_SCRIPT, STATE_MODULE, CONFIG_FILE):
        if (solution / name).exists():
            raise HardenError(solution / name, "the solution already holds a file of this name")
    (solution / STATE_MODULE).write_text(script_text("workstate.py"), encoding="utf-8")
    (solution / SOLVE_SCRIPT).write_text(script_text("process_solve.py"), encoding="utf-8")
    solve_config = {"workdir": seen.workdir, "folder": config.folder, "original": original,
                    "plan": plan_text(task, seen, config.max_listed)}  # fmt: skip
    (solution / CONFIG_FILE).write_text(json.dumps(solve_config, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    (solution / "solve.sh").write_text(
        "#!/bin/bash\n"
        "# Reference solution of the process-chained task: plan.md, the original solution under a logging\n"
        "# shim (exec.log), then report.json from the final state.\n"
        "set -euo pipefail\n"
        f'exec python3 -S "$(dirname "$0")/{SOLVE_SCRIPT}"\n',
        encoding="utf-8",
    )
    (solution / "solve.sh").chmod(0o755)
    return original


def _safe(text: str) -> str:
    return _UNSAFE_ID.sub("_", text)


def _graph(task: Task, seen: WorkdirSnapshots, config: ProcessChainConfig) -> GraphSpec:
    proc = f"{seen.workdir.rstrip('/')}/{config.folder}"
    outputs = grouped([*seen.created, *seen.modified], config.max_listed)
    output_ids = [f"process:output:{_safe(p)}" for p in outputs]
    artifacts = [
        ArtifactSpec(id="process:plan.md", path=f"{proc}/{PLAN}", description="the plan, written first"),
        ArtifactSpec(id="process:exec.log", path=f"{proc}/{LOG}", depends_on=["process:plan.md"],
                     description="the commands run and the files each changed"),
        *[ArtifactSpec(id=i, path=f"{seen.workdir.rstrip('/')}/{p}", depends_on=["process:plan.md"],
                       description="a file the reference solution changes") for i, p in zip(output_ids, outputs,
                                                                                            strict=True)],
        ArtifactSpec(id="process:state", path=seen.workdir, depends_on=["process:plan.md", *output_ids],
                     description="the final state of the workdir"),
        ArtifactSpec(id="process:report.json", path=f"{proc}/{REPORT}",
                     depends_on=["process:exec.log", "process:state"], description="the report of the final state"),
    ]  # fmt: skip
    names = {"plan": "process:plan.md", "log": "process:exec.log", "report": "process:report.json",
             "state": "process:state"}  # fmt: skip
    file = f"tests/{CHECK_SCRIPT}"
    checks = [
        CheckSpec(id=f"process-check:{name}", description=text, file=file, verifies=[names[a] for a in arts])
        for name, (text, arts) in CHECKS.items()
    ]
    checks.append(
        CheckSpec(id="process-check:original-verifier", description="the original verifier gives full reward",
                  verifies=["process:task"])
    )  # fmt: skip
    requirements = [
        RequirementSpec(id="process:task", text="what the original instruction asks", produces=output_ids),
        RequirementSpec(id="process:plan", text="a plan written before the work, naming every change",
                        produces=["process:plan.md"]),
        RequirementSpec(id="process:log", text="a log of the commands run and the files they changed",
                        produces=["process:exec.log"]),
        RequirementSpec(id="process:report", text="a report of the final state, bound to the plan and the log",
                        produces=["process:report.json"]),
    ]  # fmt: skip
    chain = GraphSpec(requirements=requirements, artifacts=artifacts, checks=checks)
    try:
        return GraphSpec.from_metadata(task.config.metadata).extended(chain)
    except GraphSpecError as e:
        raise HardenError(task.path / "task.toml", f"cannot add the process chain's graph: {e}") from e


def write_task_toml(work: Path, task: Task, spec: GraphSpec, marker: dict[str, Any]) -> None:
    """task.toml of `task` with `spec` as its declared graph and `marker` appended to its `harden` list."""
    metadata = spec.to_metadata(task.config.metadata)
    section = dict(metadata[SECTION])
    section["harden"] = [*harden_markers(task), marker]
    metadata[SECTION] = section
    config = task.config.model_copy(update={"metadata": metadata})
    (work / "task.toml").write_text(config.to_toml(), encoding="utf-8")
