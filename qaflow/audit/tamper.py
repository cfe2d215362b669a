"""The tamper probe's agent: it plants a full reward and does nothing else."""

from __future__ import annotations

from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task

PLANT = (
    "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt"
    " && echo '{\"reward\": 1}' > /logs/verifier/reward.json"
)


class TamperAgent:
    """Writes reward 1 into /logs/verifier/reward.txt and reward.json. Run with the trial's
    `clear_verifier_logs=False`: a verifier that lets the planted reward stand is tamperable."""

    name = "tamper"

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        return sandbox.exec(PLANT, timeout=30)
