"""The `Agent` protocol: one `run` over a task and its sandbox."""

from __future__ import annotations

from typing import Protocol

from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task


class Agent(Protocol):
    name: str

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        """Act on the task; return the last command's result (None when nothing ran)."""
        ...
