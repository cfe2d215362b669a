"""Exception types. Each carries the path it is about and a reason a person can act on.

The line drawn here follows inspect_ai: if a command *could not run*, a `SandboxError`
(or subclass) is raised; if it *ran and failed*, the caller gets a result with a
non-zero exit code. Task problems are `TaskError`s, never sandbox errors.
"""

from __future__ import annotations

from pathlib import Path


class QaflowError(Exception):
    """Base of every error qaflow raises on purpose."""


class PathError(QaflowError):
    """Something is wrong with a file or folder: `path` names it, `reason` says why; the message is
    `path: reason`. Domain errors about files (tasks, pools, ledgers, imports, configs) subclass it."""

    def __init__(self, path: Path | str, reason: str):
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class TaskError(PathError):
    """A task folder is invalid. `path` names the offending file, `reason` says why."""


class SandboxError(QaflowError):
    """The sandbox could not do what was asked (start, build, copy, exec)."""


class SandboxUnavailableError(SandboxError):
    """The backend cannot run on this machine (no daemon, no bwrap, missing base image)."""


class BuildError(SandboxError):
    """The task environment did not build. `log_tail` holds the end of the build log; `stand_ins` maps
    each `FROM` image that was missing here to the local stand-in image the build used instead."""

    def __init__(self, message: str, log_tail: str = "", stand_ins: dict[str, str] | None = None):
        self.log_tail = log_tail
        self.stand_ins = dict(stand_ins or {})
        super().__init__(message if not log_tail else f"{message}\n--- build log tail ---\n{log_tail}")


class BaseImageUnavailableError(BuildError):
    """A `FROM` image is neither present locally nor replaceable by an alias, and no registry can be
    reached: the machine lacks it, which says nothing about the task."""


class UnsupportedError(SandboxError):
    """The backend cannot express what the task needs (e.g. a Dockerfile instruction under bwrap)."""


class RewardError(QaflowError):
    """The verifier left no usable reward: missing, empty or unparsable reward file."""


class RewardForgedError(QaflowError):
    """The reward cannot be the verifier's own: a process test.sh no longer owned wrote it, or the reward
    guard cannot tell who did (docs/security.md). `writer` is the offending command line, when known."""

    def __init__(self, message: str, writer: str | None = None):
        self.writer = writer
        super().__init__(message)


class ConfigError(PathError):
    """A config file (YAML, TOML or JSON) cannot be read or does not match its schema."""


class LLMError(QaflowError):
    """A model call failed for good: retries exhausted, a non-retryable provider error, output that
    stayed malformed after the re-asks, or a scripted model that ran out of replies."""

    def __init__(self, model: str, reason: str):
        self.model = model
        self.reason = reason
        super().__init__(f"{model}: {reason}")


class ToolCallError(QaflowError):
    """A tool call the model made cannot be executed (unknown tool, arguments not a JSON object,
    a required argument missing). `str(error)` is written to be sent back to the model as the
    tool result, so it can correct itself."""

    def __init__(self, call_id: str, name: str, reason: str):
        self.call_id = call_id
        self.name = name
        self.reason = reason
        super().__init__(f"Error in tool call {name!r}: {reason}")
