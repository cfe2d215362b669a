"""The reward guard: test.sh runs under a tracer that records who wrote the reward (docs/security.md).

`reward_guard.c` (built once, statically, so any image runs it) traces test.sh and every process it
starts, records each write to /logs/verifier/reward.txt and reward.json with the writer's pid and
command line and whether the writer was still attached to test.sh (its parent chain intact; a loop
left behind by a child of the verifier is detached), and kills every other process the moment test.sh
exits, before anything is read. `GuardReport.check` turns a write by a detached process, or a report
that is missing or not the guard's (its key), into `RewardForgedError`: the trial records
`reward_forged`, never a reward.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from qaflow.errors import RewardForgedError, UnsupportedError
from qaflow.sandbox.base import RESTORE_PATH, SAVE_PATH

SOURCE = Path(__file__).with_name("reward_guard.c")
GUARD_DIR = "/logs/.qaflow-guard"
"""Where the guard, its key and its report live in the sandbox; cleared before every verifier run."""
REPORT = "report"
TRACE = "trace"
"""The guard's observe-mode trace in `GUARD_DIR` (`qaflow.audit.trace` reads it)."""
GUARD_FAILED = 125
"""The guard's exit code when it could not run the command (stderr says why)."""


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "qaflow" / "guard"


def guard_binary() -> Path:
    """The static guard binary for this source, built once into the user's cache.

    Raises:
        UnsupportedError: no C compiler with a static libc here, or not x86_64.
    """
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    target = cache_dir() / f"reward_guard-{digest}"
    if target.is_file():
        return target
    if os.uname().machine != "x86_64":
        raise UnsupportedError(f"the reward guard runs on x86_64 only, not {os.uname().machine}")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise UnsupportedError("the reward guard is built once with a C compiler: install gcc and libc6-dev")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():
            return target
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".build-")
        os.close(fd)
        built = subprocess.run(
            [compiler, "-static", "-O2", "-o", tmp, str(SOURCE)], capture_output=True, text=True, check=False
        )
        if built.returncode != 0:
            os.unlink(tmp)
            line = next((ln for ln in built.stderr.splitlines() if "error" in ln), built.stderr.strip()[-300:])
            raise UnsupportedError(f"cannot build the reward guard with {compiler} -static: {line}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    return target


@dataclass
class GuardKit:
    """The folder uploaded to `GUARD_DIR` for one verifier run: the guard and a fresh key."""

    folder: Path
    key: str = field(default_factory=lambda: secrets.token_hex(16))

    @classmethod
    def make(cls, scratch: Path, *, observe: bool = False) -> GuardKit:
        """A kit in `scratch`; `observe`: the guard also writes its trace of every process (`TRACE`)."""
        folder = scratch / "guard"
        folder.mkdir()
        folder.chmod(0o777)  # a verifier running as another user writes its report here
        shutil.copy2(guard_binary(), folder / "reward_guard")
        kit = cls(folder)
        (folder / "key").write_text(kit.key + "\n")
        (folder / "key").chmod(0o444)
        if observe:
            (folder / "observe").write_text("")
        return kit

    def command(self, test_sh: str, verifier_logs: str, *, prepare: str = "true") -> str:
        """The shell command running `prepare` (its failure is the command's), then `bash test_sh` under the guard
        (`exec`: the guard is the exec's command); both find their programs in the system's folders, as the task's
        PATH may start with a folder the agent filled, and test.sh gets the task's PATH back."""
        guard = f"{GUARD_DIR}/reward_guard"
        return (
            f"{SAVE_PATH}{prepare} || exit $?; _qbash=$(command -v bash) || _qbash=bash; {RESTORE_PATH}"
            f'exec {guard} {GUARD_DIR} {shlex.quote(verifier_logs)} -- "$_qbash" {shlex.quote(test_sh)}'
        )


@dataclass(frozen=True)
class Writer:
    pid: int
    path: str
    command: str
    attached: bool


@dataclass(frozen=True)
class GuardReport:
    writers: list[Writer]
    killed: int

    @classmethod
    def parse(cls, found: tuple[str, str] | None, key: str, *, stderr: str = "") -> GuardReport:
        """The guard's report ((name, text) as `read_first_text` gives it) if it carries `key`.

        Raises:
            RewardForgedError: no report, not the guard's, or cut short (the guard did not finish).
        """
        why = _guard_line(stderr)
        if found is None:
            raise RewardForgedError(f"the reward guard left no report{why}: cannot tell who wrote the reward")
        lines = found[1].splitlines()
        if not lines or lines[0] != f"key {key}":
            raise RewardForgedError("the reward guard's report is not the guard's: cannot tell who wrote the reward")
        if lines[-1] != "end":
            raise RewardForgedError(f"the reward guard's report is cut short{why}: cannot tell who wrote the reward")
        writers, killed = [], 0
        for line in lines[1:-1]:
            kind, _, rest = line.partition(" ")
            if kind == "killed":
                killed = int(rest)
            elif kind == "write":
                verdict, pid, tail = rest.split(" ", 2)
                path, _, command = tail.partition("\t")
                writers.append(Writer(int(pid), path, command, verdict == "ok"))
        return cls(writers, killed)

    def check(self) -> None:
        """Raises RewardForgedError naming the first writer that was not test.sh's own (detached)."""
        for writer in self.writers:
            if not writer.attached:
                raise RewardForgedError(
                    f"{writer.path} was written by a process test.sh no longer owned (pid {writer.pid}: "
                    f"{writer.command})",
                    writer=writer.command,
                )


def _guard_line(stderr: str) -> str:
    line = next((ln for ln in reversed(stderr.splitlines()) if ln.startswith("reward_guard: ")), "")
    return f" ({line})" if line else ""
