"""The error of the hardening step."""

from __future__ import annotations

from qaflow.errors import PathError


class HardenError(PathError):
    """A transform, a graph or the gate cannot work on this task; `path` says where, `reason` why."""
