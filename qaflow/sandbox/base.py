"""The `Sandbox` protocol, its result type and the spec every backend is opened from.

Contract (DESIGN.md): `exec` returns an `ExecResult` whenever the command ran, whatever its
exit code; it raises `SandboxError` only when the command could not run at all. A timeout
kills the command's whole process tree and is reported with `timed_out=True`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from pydantic import BaseModel, Field

DEFAULT_OUTPUT_BYTES = 1024 * 1024


class ExecResult(BaseModel):
    exit_code: int
    """Exit status; 137 (SIGKILL) style codes when killed, -1 when unknown."""
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration_s: float = 0.0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    oom_killed: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Limits(BaseModel):
    """Resource limits applied to every sandbox; task.toml values override the defaults."""

    cpus: float = Field(1.0, description="CPUs: docker --cpus; bwrap a CFS quota, else RLIMIT_CPU from the timeout")
    memory_mb: int = Field(2048, description="Memory limit in MiB: docker and bwrap memory cgroup, else RLIMIT_AS")
    pids: int = Field(256, description="Maximum processes/threads: docker pids-limit; bwrap pids cgroup")
    storage_mb: int | None = Field(None, description="Disk limit for the writable layer, where the backend can")
    file_size_mb: int = Field(1024, description="Largest file a process may write (bwrap RLIMIT_FSIZE)")
    output_bytes: int = Field(DEFAULT_OUTPUT_BYTES, description="Bytes kept per output stream of one exec")


class SandboxSpec(BaseModel):
    """Everything a backend needs to build and start one sandbox. Knows nothing of audits."""

    name: str = Field(description="Task name, for labels and messages")
    context_dir: Path = Field(description="Build context (the task's environment/ folder)")
    env_hash: str = Field(description="Content hash of context_dir: the image cache key")
    docker_image: str | None = Field(None, description="Prebuilt image named by task.toml, used instead of a build")
    network: bool = Field(False, description="Give the sandbox network; off unless the task asks")
    env: dict[str, str] = Field(default_factory=dict, description="Environment for every exec")
    limits: Limits = Field(default_factory=Limits)
    run_id: str = Field("adhoc", description="Label value qaflow.run=<run_id>, used to reap orphans")
    build_timeout_sec: float = 600.0

    @property
    def dockerfile(self) -> Path:
        return self.context_dir / "Dockerfile"


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
    ) -> ExecResult:
        """Run `cmd` (a string goes through `sh -c`). Raises SandboxError if it could not run."""
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

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


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
