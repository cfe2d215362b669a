"""Registering gVisor (`runsc`, from Debian's `runsc` package) with dockerd.

`install` merges `{"runtimes": {"runsc": {"path": ..., "runtimeArgs": ["--network=none"]}}}` into
/etc/docker/daemon.json (other keys kept, a backup of a changed file kept beside it) and sends
dockerd SIGHUP, which reloads its runtimes without touching running containers; then it checks
that a container starts under runsc. `--network=none` is needed here: this runsc build refuses
to start containers with docker's network set-up; qaflow gives containers no network anyway
unless a task asks for it (and under runsc it then gets none).

Nothing here imports the docker SDK at import time.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from qaflow.errors import QaflowError

DAEMON_JSON = Path("/etc/docker/daemon.json")
DOCKER_PIDFILE = Path("/var/run/docker.pid")
RUNTIME_NAME = "runsc"
RUNTIME_ARGS = ["--network=none"]
INSTALL_HINT = "apt-get install -y runsc"


class GvisorError(QaflowError):
    """gVisor could not be registered; the message says what to do."""


class InstallReport(BaseModel):
    runsc: str
    daemon_json: str
    changed: bool
    backup: str | None = None
    reloaded: bool = False
    """dockerd got SIGHUP and now lists the runtime."""
    works: bool = False
    reason: str = ""


def runtime_entry(runsc: str) -> dict[str, Any]:
    return {"path": runsc, "runtimeArgs": list(RUNTIME_ARGS)}


def find_runsc() -> str:
    """The runsc binary's path.

    Raises:
        GvisorError: runsc is not installed.
    """
    found = shutil.which(RUNTIME_NAME) or ("/usr/bin/runsc" if os.access("/usr/bin/runsc", os.X_OK) else None)
    if found is None:
        raise GvisorError(f"runsc is not installed: {INSTALL_HINT}")
    return found


def merge_daemon_json(path: Path, runsc: str) -> tuple[bool, Path | None]:
    """Add (or fix) the runsc runtime in the daemon config at `path`; returns (changed, backup).

    Raises:
        GvisorError: the existing file is not a JSON object, or cannot be written.
    """
    config: dict[str, Any] = {}
    text = None
    if path.exists():
        text = path.read_text(encoding="utf-8")
        try:
            config = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise GvisorError(f"{path} is not valid JSON ({exc}); fix it by hand, nothing was changed") from exc
        if not isinstance(config, dict):
            raise GvisorError(f"{path} is not a JSON object; fix it by hand, nothing was changed")
    runtimes = config.get("runtimes") or {}
    if not isinstance(runtimes, dict):
        raise GvisorError(f"{path}: 'runtimes' is not an object; fix it by hand, nothing was changed")
    if runtimes.get(RUNTIME_NAME) == runtime_entry(runsc):
        return False, None
    config["runtimes"] = {**runtimes, RUNTIME_NAME: runtime_entry(runsc)}
    backup = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is not None:
            backup = path.with_name(path.name + ".qaflow-bak")
            backup.write_text(text, encoding="utf-8")
        tmp = path.with_name(path.name + ".qaflow-tmp")
        tmp.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise GvisorError(f"cannot write {path}: {exc} (run as root)") from exc
    return True, backup


def dockerd_pid() -> int | None:
    """The local dockerd's pid, from its pid file or /proc; None when none runs here."""
    try:
        pid = int(DOCKER_PIDFILE.read_text().strip())
        if Path(f"/proc/{pid}/comm").read_text().strip() == "dockerd":
            return pid
    except (OSError, ValueError):
        pass
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() == "dockerd":
                return int(entry.name)
        except OSError:
            continue
    return None


def registered_runtimes() -> dict[str, Any]:
    """The runtimes the daemon lists (empty when no daemon answers)."""
    import docker.errors
    import requests

    from qaflow.sandbox.docker.client import shared_client

    try:
        return dict(shared_client().api.info().get("Runtimes") or {})
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        return {}


def reload_dockerd(runsc: str, wait_s: float = 15.0) -> bool:
    """SIGHUP the local dockerd and wait until it lists runsc at `runsc`; False when it does not."""
    pid = dockerd_pid()
    if pid is None:
        return False
    os.kill(pid, signal.SIGHUP)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        entry = registered_runtimes().get(RUNTIME_NAME) or {}
        if entry.get("path") == runsc:
            return True
        time.sleep(0.2)
    return False


def install(daemon_json: Path = DAEMON_JSON, *, reload: bool = True) -> InstallReport:
    """Register runsc with dockerd (see the module doc) and check it.

    Raises:
        GvisorError: runsc is missing or the daemon config cannot be updated.
    """
    runsc = find_runsc()
    changed, backup = merge_daemon_json(daemon_json, runsc)
    report = InstallReport(
        runsc=runsc, daemon_json=str(daemon_json), changed=changed, backup=str(backup) if backup else None
    )
    entry = registered_runtimes().get(RUNTIME_NAME) or {}
    if entry.get("path") == runsc and entry.get("runtimeArgs") == RUNTIME_ARGS:
        report.reloaded = True
    elif reload:
        report.reloaded = reload_dockerd(runsc)
    if not report.reloaded:
        report.reason = (
            "dockerd does not list runsc yet: restart it to load the new daemon.json "
            "(systemctl restart docker, or stop dockerd and start it again)"
        )
        return report
    from qaflow.sandbox import check_runtime

    report.works, report.reason = check_runtime(RUNTIME_NAME)
    return report
