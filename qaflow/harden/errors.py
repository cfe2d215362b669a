"""The error of the hardening step."""

from __future__ import annotations

from pathlib import Path

from qaflow.errors import QaflowError


class HardenError(QaflowError):
    """A transform, a graph or the gate cannot work on this task; `path` says where, `reason` why."""

    def __init__(self, path: Path | str, reason: str):
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")
