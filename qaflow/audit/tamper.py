"""The tamper probe's agent: it plants a full reward and does nothing else."""

from __future__ import annotations

import shlex

from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task

PLANTED = {"reward.txt": "1", "reward.json": '{"reward": 1}'}


class TamperAgent:
    """Writes a full reward into /logs/verifier and does nothing else. Run with the trial's
    `clear_verifier_logs=False`: a verifier that lets the planted reward stand is tamperable.

    It plants the file the verifier itself writes (seen on the oracle run), so a verifier that
    correctly overwrites reward.txt is not blamed for a reward.json it never writes."""

    name = "tamper"

    def __init__(self, files: list[str] | None = None):
        self.files = files or ["reward.txt"]

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        writes = " && ".join(
            f"printf %s {shlex.quote(PLANTED[f])} > /logs/verifier/{f}" for f in self.files if f in PLANTED
        )
        return sandbox.exec(f"mkdir -p /logs/verifier && {writes}", timeout=30)
