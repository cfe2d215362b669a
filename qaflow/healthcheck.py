"""Harbor's healthchecks (`[environment.healthcheck]`, `[steps.healthcheck]`): a command polled in
the sandbox, with Docker HEALTHCHECK semantics, until it passes; the agent starts only then.

Failures during `start_period_sec` do not count; `retries` failures in a row after it fail the
check (`SetupError`: the environment did not come up, not the task's agent or verifier).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from qaflow.errors import TaskError
from qaflow.sandbox.base import ExecResult, Sandbox


class SetupError(TaskError):
    """The environment did not come up: a healthcheck failed, or a step's workdir/setup.sh did."""

    def __init__(self, path: Path, reason: str, exec_result: ExecResult | None = None):
        super().__init__(path, reason)
        self.exec_result = exec_result


class Healthcheck(BaseModel):
    """A healthcheck table of task.toml."""

    model_config = ConfigDict(extra="allow")

    command: str
    interval_sec: float = Field(5.0, ge=0)
    timeout_sec: float = Field(30.0, gt=0)
    start_period_sec: float = Field(0.0, ge=0)
    start_interval_sec: float = Field(5.0, ge=0)
    retries: int = Field(3, ge=1)


def wait_healthy(box: Sandbox, raw: dict[str, Any], *, user: str | int | None, toml: Path, what: str) -> None:
    """Poll the healthcheck `raw` (a task.toml table) in `box` until it passes.

    Raises:
        TaskError: the table is malformed (naming `toml` and the field).
        SetupError: it failed `retries` times in a row after its start period.
    """
    try:
        check = Healthcheck.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise TaskError(toml, f"{what}: healthcheck {where}: {first['msg']}") from exc
    started = time.monotonic()
    failures = 0
    while True:
        res = box.exec(check.command, timeout=check.timeout_sec, user=user)
        if res.ok:
            return
        starting = time.monotonic() - started < check.start_period_sec
        failures = failures if starting else failures + 1
        if failures >= check.retries:
            tail = (res.stderr or res.stdout).strip()[-400:]
            reason = f"{what}: healthcheck {check.command!r} failed {failures} times" + (f": {tail}" if tail else "")
            raise SetupError(toml, reason, res)
        time.sleep(check.start_interval_sec if starting else check.interval_sec)
