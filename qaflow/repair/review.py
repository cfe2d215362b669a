"""`qaflow review`'s engine: a rubric check of one task in the style of Terminal-Bench's quality
checker. The model answers pass / fail / not_applicable per criterion (structured output); each
failed criterion becomes an advisory `lint` warning. In a pool, they are stored as findings of the
task's current version under a run of kind `review`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from qaflow.llm import LLM
from qaflow.models.audit import AuditFinding
from qaflow.models.records import Finding, FindingCode, RunKind, Severity
from qaflow.repair.context import FILE_CAP, render, task_files
from qaflow.task import Task

CRITERIA: dict[str, str] = {
    "behavior_in_task_description": "Every behaviour the tests check is described in the instruction.",
    "behavior_in_tests": "Every behaviour the instruction asks for is checked by the tests.",
    "informative_test_docstrings": "Each test (or check) has a docstring or comment saying what it checks.",
    "anti_cheating_measures": "A solver cannot pass by reading the tests or solution, editing the verifier or "
    "hard-coding outputs (tests and solution are not visible to the agent; inputs are not trivially guessable).",
    "structured_data_schema": "Where the task asks for structured output (JSON, CSV, an API), its exact schema "
    "is given in the instruction.",
    "pinned_dependencies": "External dependencies (pip, apt, npm) are pinned to versions; common apt packages "
    "may be unpinned.",
    "typos": "No typos in file names, paths, variable names or the instruction that would mislead a solver.",
    "tests_or_solution_in_image": "The Dockerfile does not copy tests/ or solution/ into the image.",
    "test_deps_in_image": "Dependencies only the tests need are installed by test.sh, not baked into the image.",
    "hardcoded_solution": "The solution derives its answer by computation, not by echoing or copying the final result.",
    "file_reference_mentioned": "Every file the tests read or expect the solver to write is named in the instruction.",
}

Outcome = Literal["pass", "fail", "not_applicable"]


class CriterionResult(BaseModel):
    criterion: str = Field(description="One of the criterion names.")
    outcome: Outcome
    explanation: str = Field(description="Why, citing the task files.")


class RubricAnswer(BaseModel):
    """The model's answer: exactly one result per criterion."""

    results: list[CriterionResult]

    @field_validator("results")
    @classmethod
    def _one_per_criterion(cls, results: list[CriterionResult]) -> list[CriterionResult]:
        names = [r.criterion for r in results]
        unknown = sorted(set(names) - set(CRITERIA))
        missing = [c for c in CRITERIA if c not in names]
        repeated = sorted({n for n in names if names.count(n) > 1})
        problems = [
            f"{label}: {', '.join(items)}"
            for label, items in (("unknown criteria", unknown), ("missing criteria", missing), ("repeated", repeated))
            if items
        ]
        if problems:
            raise ValueError("; ".join(problems))
        return sorted(results, key=lambda r: list(CRITERIA).index(r.criterion))


class TaskReview(BaseModel):
    """One task's rubric review, as `qaflow review --json` writes it."""

    task: str
    path: str
    version: str
    model: str
    results: list[CriterionResult]
    findings: list[AuditFinding] = Field(default_factory=list, description="One `lint` warning per failed criterion.")
    stored_in: str | None = Field(None, description="The pool ledger the findings were stored in, if any.")


def review_messages(task: Task, *, file_cap: int = FILE_CAP) -> list[dict[str, str]]:
    files = task_files(task.path, cap=file_cap)
    return [
        {"role": "system", "content": render("rubric_system", criteria=CRITERIA)},
        {
            "role": "user",
            "content": render("rubric_user", task_name=task.name, instruction=task.instruction, files=files),
        },
    ]


def review_task(task: Task, llm: LLM) -> TaskReview:
    """Rubric-review one task.

    Raises:
        LLMError: the model failed, or its answer stayed malformed after the re-asks.
    """
    answer = llm.structured(review_messages(task), RubricAnswer)
    findings = [
        AuditFinding(
            code=FindingCode.LINT,
            severity=Severity.WARNING,
            message=f"review: {r.criterion} failed: {r.explanation}",
            evidence={
                "criterion": r.criterion,
                "requirement": CRITERIA[r.criterion],
                "explanation": r.explanation,
                "model": llm.model,
            },
        )
        for r in answer.results
        if r.outcome == "fail"
    ]
    return TaskReview(
        task=task.name, path=str(task.path), version=task.version, model=llm.model, results=answer.results,
        findings=findings,
    )  # fmt: skip


def pool_root_of(task_dir: Path) -> Path | None:
    """The nearest folder above `task_dir` holding a pool ledger (.qaflow/ledger.sqlite), if any."""
    for parent in Path(task_dir).resolve().parents:
        if (parent / ".qaflow" / "ledger.sqlite").is_file():
            return parent
    return None


def store_review(review: TaskReview) -> Path | None:
    """Record the review's findings for the task's current version in its pool (a run of kind `review`);
    the pool is scanned first when the version is not recorded yet. Returns the ledger path, or None
    outside a pool."""
    from qaflow.pool import Pool

    root = pool_root_of(Path(review.path))
    if root is None:
        return None
    with Pool.open(root, create=False) as pool:
        with pool.ledger.run(RunKind.REVIEW, {"model": review.model, "criteria": list(CRITERIA)}) as run:
            if pool.ledger.get_version(review.version) is None:
                pool.scan()
            for f in review.findings:
                pool.ledger.add_finding(
                    Finding(task_version=review.version, run_id=run.run_id, code=f.code, severity=f.severity,
                            message=f.message, evidence=f.evidence)
                )  # fmt: skip
        return pool.ledger.path
