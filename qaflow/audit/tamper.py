"""The tamper probe's agent: it plants a full reward and does nothing else."""

from __future__ import annotations

import posixpath
import re
import shlex

from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task

PLANTED = {"reward.txt": "1", "reward.json": '{"reward": 1}'}
_PATH = re.compile(r"(?<![\w.$-])(/(?:[\w.-]+/)*[\w.-]+)")
_NOT_AGENT_WRITABLE = ("/logs/", "/tests/", "/dev/", "/proc/", "/sys/", "/usr/bin/", "/bin/")


def trusted_paths(task: Task) -> list[str]:
    """Files outside /logs and /tests that the verifier's shell scripts move into /logs/verifier:
    if the agent can write them, it can write its own reward (e.g. `cp /app/.grading/reward.txt
    /logs/verifier/`)."""
    found: set[str] = set()
    for script in sorted(task.tests_dir.rglob("*.sh")):
        for line in script.read_text(encoding="utf-8", errors="replace").splitlines():
            code = line.split("#", 1)[0]
            if "/logs/verifier" not in code:
                continue
            for path in _PATH.findall(code):
                if not path.startswith(_NOT_AGENT_WRITABLE) and path != "/logs/verifier":
                    found.add(path)
    files = {p for p in found if "." in posixpath.basename(p).lstrip(".")}
    return sorted(p for p in files if not any(other.startswith(p + "/") for other in found))


class TamperAgent:
    """Writes a full reward into /logs/verifier and does nothing else. Run with the trial's
    `clear_verifier_logs=False`: a verifier that lets the planted reward stand is tamperable.

    It plants the file the verifier itself writes (seen on the oracle run), so a verifier that
    correctly overwrites reward.txt is not blamed for a reward.json it never writes; and it writes
    a full reward into any file the verifier's scripts copy into /logs/verifier (`trusted_paths`)."""

    name = "tamper"

    def __init__(self, files: list[str] | None = None, extra_paths: list[str] | None = None):
        self.files = files or ["reward.txt"]
        self.extra_paths = extra_paths or []

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        targets = {f"/logs/verifier/{f}": PLANTED[f] for f in self.files if f in PLANTED}
        for path in self.extra_paths:
            targets[path] = PLANTED["reward.json"] if path.endswith(".json") else PLANTED["reward.txt"]
        writes = "; ".join(
            f"mkdir -p {shlex.quote(posixpath.dirname(path))} && printf %s {shlex.quote(text)} > {shlex.quote(path)}"
            for path, text in targets.items()
        )
        return sandbox.exec(writes + "; true", timeout=30)
