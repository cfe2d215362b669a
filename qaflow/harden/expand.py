"""The LLM expansion transform: extra requirements with their checks and solution steps, proposed by a model.

The model answers with an `Expansion` (structured output, validated: every requirement has a check,
every check verifies declared requirements). The new version:
- instruction.md gets an `## Additional requirements` list;
- tests/: the original `test.sh` becomes a step of a composite `test.sh`, followed by one step per
  proposed check (`tests/qaflow_expand/<id>.py`, which must exit 0);
- solution/: `solve.sh` runs the original (`original_solve.sh`), then `qaflow_expand.sh` (the model's
  addition);
- task.toml: the requirements, their artifacts and checks appended to `[metadata.qaflow]`.
The author is `llm:<model>`: at the gate, that model's own attempts do not count as evidence.
Whether the proposal holds (oracle passes, checks reject the untouched environment) is the audit's to say.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from pydantic import BaseModel, Field, model_validator

from qaflow.errors import TaskError
from qaflow.harden.errors import HardenError
from qaflow.harden.process_chain import check_transformable, write_task_toml
from qaflow.harden.prompts import expand_messages
from qaflow.harden.verifier import Step, StepKind, free_name, write_composite
from qaflow.harden.versions import HardenRecord, Transform, building, ensure_recorded, record
from qaflow.llm import LLM
from qaflow.pool import Pool
from qaflow.requirements.spec import ArtifactSpec, CheckSpec, GraphSpec, GraphSpecError, RequirementSpec
from qaflow.task import Task

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,47}$")
CHECKS_DIR = "qaflow_expand"
ADDITION = "qaflow_expand.sh"


class ProposedRequirement(BaseModel):
    id: str = Field(description="Short slug: lowercase letters, digits and hyphens")
    text: str = Field(description="One sentence added to the instruction")
    produces: list[str] = Field(default_factory=list, description="Absolute paths it produces or changes")

    @model_validator(mode="after")
    def _shape(self) -> ProposedRequirement:
        if not SLUG.match(self.id):
            raise ValueError(f"requirement id {self.id!r} must be a slug (a-z, 0-9, -)")
        if not self.text.strip():
            raise ValueError(f"requirement {self.id!r} has no text")
        if any(not p.startswith("/") for p in self.produces):
            raise ValueError(f"requirement {self.id!r}: produces must be absolute paths")
        if re.search(r"(?<![\w.])/(tests|solution)\b", self.text):
            raise ValueError(f"requirement {self.id!r} mentions /tests or /solution, which the agent cannot see")
        return self


class ProposedCheck(BaseModel):
    id: str = Field(description="Short slug: lowercase letters, digits and hyphens")
    verifies: list[str] = Field(description="Ids of the requirements it checks")
    script: str = Field(description="A python3 program (standard library) that exits 0 only when they hold")

    @model_validator(mode="after")
    def _shape(self) -> ProposedCheck:
        if not SLUG.match(self.id):
            raise ValueError(f"check id {self.id!r} must be a slug (a-z, 0-9, -)")
        if not self.script.strip():
            raise ValueError(f"check {self.id!r} has no script")
        return self


class Expansion(BaseModel):
    """The model's proposal: requirements, the checks that verify them, and the solution's addition."""

    requirements: list[ProposedRequirement] = Field(min_length=1)
    checks: list[ProposedCheck] = Field(min_length=1)
    solution: str = Field(description="bash commands run after the original solution, in the workdir")

    @model_validator(mode="after")
    def _links(self) -> Expansion:
        req_ids = [r.id for r in self.requirements]
        check_ids = [c.id for c in self.checks]
        for kind, ids in (("requirement", req_ids), ("check", check_ids)):
            if len(set(ids)) != len(ids):
                raise ValueError(f"{kind} ids must be unique")
        for c in self.checks:
            unknown = sorted(set(c.verifies) - set(req_ids))
            if unknown or not c.verifies:
                raise ValueError(f"check {c.id!r} must verify proposed requirements (unknown: {unknown})")
        unchecked = sorted(set(req_ids) - {r for c in self.checks for r in c.verifies})
        if unchecked:
            raise ValueError(f"requirements without a check: {', '.join(unchecked)}")
        if not self.solution.strip():
            raise ValueError("the solution addition is empty")
        return self


class ExpandConfig(BaseModel):
    max_requirements: int = Field(3, ge=1, le=10, description="At most this many requirements are asked for")


def expand(
    pool: Pool, task_dir: Path, out_dir: Path, llm: LLM, *, run_id: str, config: ExpandConfig | None = None
) -> HardenRecord:
    """Ask `llm` for an expansion of the task at `task_dir` and write it to `out_dir/<folder>@expand`.

    Raises:
        HardenError: the task cannot be wrapped, the proposal clashes with the task, or the result does not load.
        LLMError: the model gives no valid `Expansion`.
    """
    config = config or ExpandConfig()
    try:
        task = Task.load(task_dir)
    except TaskError as e:
        raise HardenError(e.path, e.reason) from e
    check_transformable(task, Transform.EXPAND)
    parent = ensure_recorded(pool, task)
    proposal = llm.structured(expand_messages(task, config.max_requirements), Expansion)
    if len(proposal.requirements) > config.max_requirements:
        raise HardenError(task.path, f"the model proposed {len(proposal.requirements)} requirements, "
                          f"more than the {config.max_requirements} asked for")  # fmt: skip
    with building(task.path, out_dir, f"{task.path.name}@expand") as work:
        _write_tests(work, proposal)
        _write_solution(work, proposal)
        lines = "\n".join(f"- {r.text.strip()}" for r in proposal.requirements)
        instruction = task.instruction.rstrip("\n") + f"\n\n## Additional requirements\n\n{lines}\n"
        (work / "instruction.md").write_text(instruction, encoding="utf-8")
        marker = {"transform": Transform.EXPAND.value, "parent": task.version, "model": llm.model}
        write_task_toml(work, task, _graph(task, proposal), marker)
        detail = {"model": llm.model, "proposal": proposal.model_dump()}
        return record(pool, work, transform=Transform.EXPAND, author=f"llm:{llm.model}", parents=[parent],
                      run_id=run_id, detail=detail)  # fmt: skip


def _write_tests(work: Path, proposal: Expansion) -> None:
    tests = work / "tests"
    original = free_name(tests, "original_test", ".sh")
    (tests / "test.sh").rename(tests / original)
    folder = tests / CHECKS_DIR
    if folder.exists():
        raise HardenError(folder, "the tests already hold a folder of this name")
    folder.mkdir()
    steps = [Step(kind=StepKind.VERIFIER, path=original, label="the original verifier")]
    for check in proposal.checks:
        (folder / f"{check.id}.py").write_text(check.script.rstrip("\n") + "\n", encoding="utf-8")
        steps.append(
            Step(kind=StepKind.SCRIPT, path=f"{CHECKS_DIR}/{check.id}.py", label=f"check {check.id}", runner="python3")
        )
    write_composite(tests, "Expanded verifier: the original verifier, then the added requirements' checks.", steps)


def _write_solution(work: Path, proposal: Expansion) -> None:
    solution = work / "solution"
    original = free_name(solution, "original_solve", ".sh")
    (solution / "solve.sh").rename(solution / original)
    (solution / ADDITION).write_text("#!/bin/bash\nset -euo pipefail\n" + proposal.solution.rstrip("\n") + "\n")
    (solution / "solve.sh").write_text(
        "#!/bin/bash\n"
        "# Reference solution of the expanded task: the original solution, then the added requirements.\n"
        "set -euo pipefail\n"
        'HERE="$(cd "$(dirname "$0")" && pwd)"\n'
        f'bash "$HERE/{original}"\n'
        f'bash "$HERE/{ADDITION}"\n',
        encoding="utf-8",
    )
    (solution / "solve.sh").chmod(0o755)


def _graph(task: Task, proposal: Expansion) -> GraphSpec:
    artifacts: dict[str, ArtifactSpec] = {}
    requirements = []
    for r in proposal.requirements:
        produced = []
        for path in r.produces:
            aid = f"expand:{re.sub(r'[^A-Za-z0-9_.:/@+-]', '_', posixpath.normpath(path))}"
            artifacts.setdefault(aid, ArtifactSpec(id=aid, path=path, description=f"made for {r.id}"))
            produced.append(aid)
        requirements.append(RequirementSpec(id=f"expand:{r.id}", text=r.text.strip(), produces=produced))
    by_req = {r.id: r.produces for r in requirements}
    checks = []
    for c in proposal.checks:
        verifies = [f"expand:{r}" for r in c.verifies]
        arts = sorted({a for r in verifies for a in by_req[r]})
        checks.append(CheckSpec(id=f"expand-check:{c.id}", file=f"tests/{CHECKS_DIR}/{c.id}.py",
                                verifies=[*verifies, *arts]))  # fmt: skip
    added = GraphSpec(requirements=requirements, artifacts=list(artifacts.values()), checks=checks)
    try:
        return GraphSpec.from_metadata(task.config.metadata).extended(added)
    except GraphSpecError as e:
        raise HardenError(task.path / "task.toml", f"cannot add the expansion's graph: {e}") from e
