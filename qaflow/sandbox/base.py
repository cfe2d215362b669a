"""The `Sandbox` protocol, its result type and the spec every backend is opened from.

Contract (docs/contracts.md, "Sandboxes"): `exec` returns an `ExecResult` whenever the command ran, whatever its
exit code; it raises `SandboxError` only when the command could not run at all. A timeout
kills the command's whole process tree and is reported with `timed_out=True`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol, Self, runtime_checkable

from pydantic import BaseModel, Field

from qaflow.models.trial import ExecResult

log = logging.getLogger(__name__)

DEFAULT_OUTPUT_BYTES = 1024 * 1024
DEFAULT_STORAGE_MB = 10240
"""Disk the writable part of a sandbox may use when task.toml says nothing (Harbor's default)."""
SHELL = "/bin/sh"
"""The shell every command string runs in, by absolute path: a folder the image puts first on PATH is the
agent's to fill, so qaflow never looks its own programs up along the task's PATH."""
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SYSTEM_TOOLS = f"PATH={SYSTEM_PATH}; "
"""Shell that looks qaflow's own programs up in the system's folders, for scripts that run nothing of the task's."""
SAVE_PATH = "_qpath=$PATH; " + SYSTEM_TOOLS
"""`SYSTEM_TOOLS` that keeps the task's PATH in `$_qpath`: `RESTORE_PATH` gives it back before the task's command
runs."""
RESTORE_PATH = "PATH=$_qpath; "
OVER_LIMIT_HEADROOM = 32 * 2**20
"""Bytes an exec that starts with the sandbox already past its storage limit may add (the verifier's reward,
its guard's report and trace) before it is blamed for the overflow an earlier exec left."""
Runtime = Literal["runsc"]
"""An OCI runtime other than docker's default: `runsc` is gVisor (docker backend only)."""


RUNTIMES: dict[str, Runtime | None] = {"runc": None, "default": None, "runsc": "runsc", "gvisor": "runsc"}
"""Spellings accepted for a runtime (task.toml and the CLI), to the spec's value."""


def parse_runtime(value: object, where: str = "runtime") -> Runtime | None:
    """The spec's runtime for a user-given value (None, "runc", "runsc", "gvisor").

    Raises:
        ValueError: for any other value.
    """
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.lower() in RUNTIMES:
        return RUNTIMES[value.lower()]
    raise ValueError(f"{where}: unknown runtime {value!r}; choose one of runc, runsc (gVisor)")


class Limits(BaseModel):
    """Resource limits applied to every sandbox; task.toml values override the defaults."""

    cpus: float = Field(1.0, description="CPUs: docker --cpus; bwrap a CFS quota, else RLIMIT_CPU from the timeout")
    memory_mb: int = Field(2048, description="Memory limit in MiB: docker and bwrap memory cgroup, else RLIMIT_AS")
    pids: int = Field(256, description="Maximum processes/threads: docker pids-limit; bwrap pids cgroup")
    storage_mb: int | None = Field(
        DEFAULT_STORAGE_MB,
        description="Disk limit for the sandbox's writable files: docker --storage-opt size where the storage "
        "driver supports it, else (and on bwrap) a watchdog that kills an exec pushing past it; None: no limit",
    )
    file_size_mb: int = Field(1024, description="Largest file a process may write (bwrap RLIMIT_FSIZE)")
    output_bytes: int = Field(DEFAULT_OUTPUT_BYTES, description="Bytes kept per output stream of one exec")


class SandboxSpec(BaseModel):
    """Everything a backend needs to build and start one sandbox. Knows nothing of audits."""

    name: str = Field(description="Task name, for labels and messages")
    context_dir: Path = Field(description="Build context (the task's environment/ folder)")
    env_hash: str = Field(description="Content hash of context_dir: the image cache key")
    docker_image: str | None = Field(None, description="Prebuilt image named by task.toml, used instead of a build")
    network: bool = Field(False, description="Network at run time (`spec_for_task`: unless the task says no-network)")
    build_network: bool = Field(True, description="Network for the build's RUN steps; off in offline runs")
    build_network_guessed: bool = Field(
        False,
        description="`build_network` is off only because no step looked like a download "
        "(`qaflow.sandbox.build_network`): a build that fails without network is built again with it",
    )
    network_declared: bool = Field(
        False,
        description="The task itself declared `public` (not Harbor's default): bwrap, which can only share "
        "the host's network namespace, shares it only then",
    )
    network_forced_off: bool = Field(
        False,
        description="The run forces network off (`--network none`): no sandbox of this spec, or of a copy "
        "of it, gets network, whatever `network` says",
    )
    env: dict[str, str] = Field(default_factory=dict, description="Environment for every exec")
    workdir: str | None = Field(None, description="Working directory over the image's (`[environment] workdir`)")
    limits: Limits = Field(default_factory=Limits)
    run_id: str = Field("adhoc", description="Label value qaflow.run=<run_id>, used to reap orphans")
    runtime: Runtime | None = Field(
        None, description="OCI runtime for the docker backend: None is docker's default (runc), runsc is gVisor"
    )
    build_timeout_sec: float = 600.0

    @property
    def dockerfile(self) -> Path:
        return self.context_dir / "Dockerfile"

    @property
    def runtime_network(self) -> bool:
        """Whether the running sandbox gets network: what backends apply."""
        return self.network and not self.network_forced_off

    def for_build(self) -> SandboxSpec:
        """This spec as the sandbox its build steps run in: network is `build_network`."""
        return self.model_copy(update={"network": self.build_network, "network_forced_off": False})


@runtime_checkable
class Sandbox(Protocol):
    """One running sandbox. Use as a context manager: `close()` always cleans up."""

    workdir: str
    """The working directory of the image (Dockerfile WORKDIR, `/app` when none)."""

    def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        user: str | int | None = None,
        cwd: str | None = None,
        kill_strays_after: bool = False,
    ) -> ExecResult:
        """Run `cmd` (a string goes through `sh -c`). Raises SandboxError if it could not run.

        `kill_strays_after`: the moment the command ends, kill every process left running that its
        user may signal (the verifier's leftovers must not write after it), before the result returns.
        """
        ...

    def put(self, path: str, data: bytes | Path) -> None:
        """Write bytes to the file `path`, or copy a host file or folder to `path`."""
        ...

    def get(self, path: str) -> bytes:
        """Read the file `path`. Raises FileNotFoundError when it does not exist."""
        ...

    def get_dir(self, path: str, dest: Path) -> None:
        """Copy the folder `path` out of the sandbox into the host folder `dest`."""
        ...

    def read_first_text(self, folder: str, names: Sequence[str]) -> tuple[str, str] | None:
        """(name, text) of the first of `names` that is a regular file in `folder` (a link is not one, and
        is never followed), decoded as UTF-8 with replacement; None when none is. How the trial reads a
        reward: one cheap call, not a copy of the folder."""
        ...

    def kill_strays(self, clear: Sequence[str] = ()) -> int:
        """Kill every process still running in the sandbox (none of its own keepers); return how many.
        Then remove the paths `clear` (a mount point is emptied; links are removed, never followed).

        The trial calls it between the agent phase and the verifier, so that nothing an agent or a
        solution left running (`setsid`, `nohup`, `&`) can act later, and nothing it left at /tests
        or /logs/verifier reaches the verifier. Raises SandboxError when the sandbox is dead or a
        path cannot be removed.
        """
        ...

    def settle(self, clear: Sequence[str] = ()) -> int:
        """After the agent phase: when no process is left running in the sandbox, remove the paths
        `clear` (as `kill_strays` does) and return 0; otherwise change nothing and return how many
        processes are still running (servers the task asked the agent to leave running).

        Raises SandboxError when the sandbox is dead or a path cannot be removed.
        """
        ...

    def exec_when_settled(
        self,
        cmd: str | Sequence[str],
        *,
        clear: Sequence[str],
        uploads: Sequence[tuple[str, Path]],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        user: str | int | None = None,
    ) -> ExecResult | int:
        """`settle(clear)`; when it returns a count (processes still run), return it and run nothing; else
        copy `uploads` ((sandbox path, host folder) pairs) in and run `cmd` with `kill_strays_after`.
        How the trial starts a shared-mode verifier: the docker backend does it all in one exec when the
        command runs as root (`settled_exec` is the plain sequence every backend may use).

        Raises SandboxError as `settle` and `exec` do.
        """
        ...

    @property
    def writable_roots(self) -> list[str]:
        """The folders of this sandbox a process in it can write (`/` where the whole file system is)."""
        ...

    def verifier_view(self) -> Sandbox:
        """A new sandbox for the verifier: a copy of this sandbox's files as they are now, sharing
        its network namespace (the agent's servers answer on 127.0.0.1), running none of its
        processes and sharing no file with it, so nothing left running here can touch the verifier.
        The caller closes it (a context manager); this sandbox is unchanged.

        Raises UnsupportedError when this backend or runtime cannot make one (the reason says why),
        SandboxError when the snapshot or its start failed.
        """
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


@runtime_checkable
class SandboxBackend(Protocol):
    """A sandbox backend, registered by name (`qaflow.sandbox.register_backend`): builds images, opens sandboxes.
    `tests/test_sandbox_contract.py` holds docker, bwrap and the test fake to it."""

    @classmethod
    def check(cls) -> tuple[bool, str]:
        """(works, reason) on this machine."""
        ...

    @classmethod
    def reap(cls, run_id: str | None = None) -> int:
        """Remove what sandboxes of `run_id` (all runs when None) left; how many things went."""
        ...

    def build(self, spec: SandboxSpec) -> str:
        """Build (or find cached) the image of `spec`; its name. Raises BuildError, UnsupportedError."""
        ...

    def open(self, spec: SandboxSpec) -> Sandbox:
        """Build (cached) and start a sandbox of `spec`."""
        ...

    def stand_ins(self, spec: SandboxSpec) -> dict[str, str]:
        """Each `FROM` image of `spec` missing here -> the local stand-in its built image used (empty where the
        backend builds from no stand-ins)."""
        ...

    def python_version(self, ref: str) -> str | None:
        """The `python3` version (`3.11`) of image `ref`, or None when it has none or the backend cannot tell."""
        ...


def settled_exec(
    box: Sandbox,
    cmd: str | Sequence[str],
    *,
    clear: Sequence[str],
    uploads: Sequence[tuple[str, Path]],
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    user: str | int | None = None,
) -> ExecResult | int:
    """`Sandbox.exec_when_settled` as its three steps: settle, put, exec."""
    running = box.settle(clear)
    if running:
        return running
    for path, folder in uploads:
        box.put(path, folder)
    return box.exec(cmd, timeout=timeout, env=env, user=user, kill_strays_after=True)


class CappedBuffer:
    """Keeps the first `limit` bytes written to it and counts the rest."""

    def __init__(self, limit: int):
        self.limit = limit
        self._chunks: list[bytes] = []
        self._kept = 0
        self.dropped = 0

    def write(self, data: bytes) -> None:
        room = self.limit - self._kept
        if room > 0:
            piece = data[:room]
            self._chunks.append(piece)
            self._kept += len(piece)
        self.dropped += max(0, len(data) - max(room, 0))

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", errors="replace")


class StorageWatch:
    """Polls the size of a sandbox's writable files during one exec and calls `on_exceed` once
    when it passes `limit_bytes` (None: never; `measure` may then only check the sandbox's
    health, returning None). An exec that starts past the limit (an earlier exec filled the sandbox)
    is blamed only once it adds `OVER_LIMIT_HEADROOM` to what its first poll found. Polls at `first_wait`
    (0.2 s; 0 for a watch started only once a command proved slow: its baseline then comes before the next
    burst), then every 0.2 s doubling to `max_interval`; an exec shorter than 0.2 s is never measured
    (RLIMIT_FSIZE still caps each file).

    Bounded, not exact: a writer can get `rate x interval` past the limit before it is killed.
    """

    def __init__(
        self,
        measure: Callable[[], int | None],
        limit_bytes: int | None,
        on_exceed: Callable[[], None],
        *,
        baseline: int | None = None,
        max_interval: float = 1.0,
        first_wait: float = 0.2,
    ):
        self._measure = measure
        self._limit = limit_bytes
        self._on_exceed = on_exceed
        self._baseline = baseline
        self._max_interval = max_interval
        self._first_wait = first_wait
        self._stop = threading.Event()
        self.exceeded = False
        self.peak = 0
        self._thread = threading.Thread(target=self._loop, name="qaflow-storage-watch", daemon=True)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def _headroom(self) -> int:
        return OVER_LIMIT_HEADROOM if self._limit is not None and (self._baseline or 0) >= self._limit else 0

    def _loop(self) -> None:
        wait, interval = self._first_wait, 0.2
        while not self._stop.wait(wait):
            if wait >= interval:
                interval = min(self._max_interval, interval * 2)
            wait = interval
            try:
                used = self._measure()
            except Exception as exc:  # a watchdog must never take the exec down with it
                log.warning("storage watch: cannot measure the sandbox: %s", exc)
                return
            if used is None:
                continue
            if self._baseline is None:
                self._baseline = used
            self.peak = max(self.peak, used)
            if self._limit is not None and used > max(self._limit, self._baseline + self._headroom()):
                self.exceeded = True
                try:
                    self._on_exceed()
                except Exception as exc:
                    log.warning("storage watch: could not stop the writer: %s", exc)
                return


def tree_usage(root: Path) -> int:
    """Bytes of disk (allocated blocks) used by the files under `root`, not following links.

    Files that vanish meanwhile are skipped.
    """
    total = 0
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += st.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return total
