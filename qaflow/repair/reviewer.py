"""`LLMReviewer`: the independent audit agent. It sees the original and repaired task, the diff and
the fresh deterministic audit, and answers requirement by requirement (structured output) whether
the repair may be accepted. It may run on another model than the repairer (its own `LLM`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from qaflow.errors import LLMError
from qaflow.llm import LLM
from qaflow.models.audit import TaskAudit
from qaflow.models.repair import ReviewReason, ReviewVerdict
from qaflow.repair.base import RepairError
from qaflow.repair.context import FILE_CAP, findings_json, render, task_files
from qaflow.task import Task

SHOWN = ("tests", "solution", "task.toml")
DIFF_CAP = 30_000


class ReviewRequirement(BaseModel):
    requirement: str = Field(description="The requirement checked, e.g. 'the verifier still checks rounding'.")
    ok: bool = Field(description="True when the repaired task meets it.")
    explanation: str = Field(description="Why, citing the diff or files.")


class ReviewAnswer(BaseModel):
    """What the audit agent must return."""

    accept: bool = Field(description="Accept the repair.")
    reasons: list[ReviewRequirement] = Field(min_length=1, description="One entry per requirement checked.")


class LLMReviewer:
    """Implements `Reviewer`. A verdict that accepts while a requirement is not ok counts as a rejection."""

    def __init__(self, llm: LLM, *, file_cap: int = FILE_CAP, summary: str = ""):
        self.llm = llm
        self.file_cap = file_cap
        self.summary = summary
        self.name = f"llm-review:{llm.model}"

    def messages(self, original: Task, repaired: Task, diff: str, audit: TaskAudit) -> list[dict[str, str]]:
        user = render(
            "review_user",
            task_name=repaired.name,
            summary=self.summary or "(none given)",
            original_instruction=original.instruction,
            original_files=task_files(original.path, under=SHOWN, cap=self.file_cap),
            repaired_instruction=repaired.instruction,
            repaired_files=task_files(repaired.path, under=SHOWN, cap=self.file_cap),
            diff=diff[:DIFF_CAP] + ("\n[... diff truncated]" if len(diff) > DIFF_CAP else ""),
            verdict=audit.verdict.value,
            findings=findings_json(audit.findings),
        )
        return [{"role": "system", "content": render("review_system")}, {"role": "user", "content": user}]

    def review(self, original: Task, repaired: Task, diff: str, audit: TaskAudit) -> ReviewVerdict:
        """Raises:
        RepairError: the model failed, or its output stayed malformed after the re-asks."""
        messages = self.messages(original, repaired, diff, audit)
        try:
            answer = self.llm.structured(messages, ReviewAnswer)
        except LLMError as e:
            raise RepairError(repaired.path, f"review model failed: {e}") from e
        reasons = [ReviewReason(**r.model_dump()) for r in answer.reasons]
        accept = answer.accept and all(r.ok for r in reasons)
        outputs = {"model": self.llm.model, "answer": answer.model_dump(), "overruled": answer.accept and not accept}
        return ReviewVerdict(accept=accept, reasons=reasons, outputs=outputs)
