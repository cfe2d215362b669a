"""Pydantic models of a Harbor task (`task.toml`), folder validation and the content-hash version id.

Every model keeps unknown fields (`extra="allow"`) so a load/save round trip loses nothing
written by a newer Harbor. Loading validates the *folder*, not just the TOML: required
files, UTF-8 instruction, symlinks and Dockerfile COPY sources that escape the task, and
oversized files each give a `TaskError` naming the file and the reason.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import stat
import tomllib
import warnings
from enum import StrEnum
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from qaflow.errors import TaskError
from qaflow.text import dockerfile_logical_lines

DEFAULT_MAX_FILE_BYTES = 100 * 1024 * 1024
"""Largest single file a task may carry; larger ones make the task invalid."""

IGNORED_NAMES = frozenset({".git", "__pycache__", ".DS_Store", ".qaflow", ".pytest_cache"})
"""Names skipped when hashing and scanning a task folder (qaflow's own side files live in `.qaflow/`)."""


def copy_task_folder(source: Path, dest: Path) -> Path:
    """A fresh copy of the task folder `source` at `dest` (what was there is replaced), for a change that derives
    a new version (a repair round, a hardening transform, an augmentation): links stay links, as the version
    hash counts them, and `IGNORED_NAMES` (qaflow's side files) stay behind."""
    if dest.exists() or dest.is_symlink():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED_NAMES))
    return dest


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class NetworkMode(StrEnum):
    NO_NETWORK = "no-network"
    PUBLIC = "public"
    ALLOWLIST = "allowlist"


class VerifierEnvironmentMode(StrEnum):
    SHARED = "shared"
    SEPARATE = "separate"


class MultiStepRewardStrategy(StrEnum):
    MEAN = "mean"
    """Per-key means over the steps that produced a reward (Harbor's default)."""
    FINAL = "final"
    """The last step that ran."""


class Author(_Open):
    name: str
    email: str | None = None


class PackageInfo(_Open):
    """The `[task]` table (schema 1.4+). Older schemas have none; the folder name is used then."""

    name: str
    version: str | None = None
    description: str = ""
    authors: list[Author] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the task name is empty")
        return value


def _timeout(default: float | None) -> Any:
    """A timeout field: a finite number of seconds above 0 (0, negative, inf and nan are errors, not defaults)."""
    return Field(default, gt=0, allow_inf_nan=False)


class PhaseConfig(_Open):
    timeout_sec: float | None = _timeout(None)
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None


class AgentConfig(PhaseConfig):
    pass


class VerifierConfig(PhaseConfig):
    timeout_sec: float | None = _timeout(600.0)
    env: dict[str, str] = Field(default_factory=dict)
    environment_mode: VerifierEnvironmentMode | None = None


class SolutionConfig(_Open):
    env: dict[str, str] = Field(default_factory=dict)


def _size_to_mb(value: Any) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool):
        mb = float(value)
    else:
        text = str(value).strip().upper().removesuffix("B")
        units = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}
        if not (text and text[-1] in units):
            raise ValueError(f"invalid size {value!r}: expected a number of MB or a string like '2G', '512M'")
        mb = float(text[:-1]) * units[text[-1]]
    if not math.isfinite(mb) or mb < 0:
        raise ValueError(f"invalid size {value!r}: expected a finite size of at least 0")
    return int(mb)


class EnvironmentConfig(_Open):
    build_timeout_sec: float = _timeout(600.0)
    docker_image: str | None = None
    os: str | None = None
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    gpus: int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str | None = None
    healthcheck: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _migrate_legacy(cls, data: Any) -> Any:
        """Older schemas wrote `memory = "2G"`, `storage = "10G"` and `allow_internet = true`."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
            if old in data:
                data.setdefault(new, _size_to_mb(data.pop(old)))
        if "allow_internet" in data and "network_mode" not in data:
            allow = data.pop("allow_internet")
            if allow is not None:
                data["network_mode"] = NetworkMode.PUBLIC if allow else NetworkMode.NO_NETWORK
        return data


class StepConfig(_Open):
    name: str
    agent: AgentConfig = Field(default_factory=AgentConfig)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    min_reward: float | dict[str, float] | None = None

    @field_validator("name")
    @classmethod
    def _folder_name(cls, value: str) -> str:
        """The step's folder is steps/<name>: a plain name, never a path out of steps/."""
        if value in ("", ".", "..") or any(c in value for c in "/\\\0"):
            raise ValueError(f"step name {value!r} is not a plain folder name")
        return value


class TaskConfig(_Open):
    """The whole `task.toml`."""

    schema_version: str = "1.0"
    task: PackageInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    solution: SolutionConfig = Field(default_factory=SolutionConfig)
    source: str | None = None
    steps: list[StepConfig] | None = None
    multi_step_reward_strategy: MultiStepRewardStrategy | None = None
    artifacts: list[str | dict[str, Any]] = Field(
        default_factory=list, description="Harbor: paths collected from the agent's sandbox (a path, or {source = ...})"
    )

    def artifact_paths(self) -> list[str]:
        """The absolute paths `artifacts` names (the object form's `source`)."""
        paths = [a if isinstance(a, str) else a.get("source") for a in self.artifacts]
        return [p for p in paths if isinstance(p, str) and p.startswith("/")]

    @model_validator(mode="before")
    @classmethod
    def _rename_version(cls, data: Any) -> Any:
        if isinstance(data, dict) and "version" in data and not isinstance(data.get("version"), dict):
            data = dict(data)
            data.setdefault("schema_version", str(data.pop("version")))
        return data

    @classmethod
    def from_toml(cls, text: str) -> TaskConfig:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cls.model_validate(tomllib.loads(text))

    def to_toml(self) -> str:
        return tomli_w.dumps(_drop_none(self.model_dump(mode="json", exclude_unset=True)))

    def network_policy(self, phase: PhaseConfig) -> tuple[NetworkMode, list[str]]:
        """The mode and allowed hosts of `phase` (`self.agent` or `self.verifier`), as Harbor resolves
        them: the phase's own `network_mode`, else `[environment]`'s, else `public`."""
        if phase.network_mode is not None:
            return phase.network_mode, list(phase.allowed_hosts or [])
        if self.environment.network_mode is not None:
            return self.environment.network_mode, list(self.environment.allowed_hosts or [])
        return NetworkMode.PUBLIC, []

    def declares_public_network(self) -> bool:
        """Whether task.toml itself says `public` (or `allow_internet = true`) for the agent phase,
        rather than leaving it to Harbor's default."""
        declared = self.agent.network_mode or self.environment.network_mode
        return declared is NetworkMode.PUBLIC

    def agent_network(self) -> bool:
        """Network for the agent phase, Harbor's defaults: on unless `no-network` is declared at
        [agent] or [environment]. `allowlist` is never widened to full network: False here, and
        refused when a sandbox is made (`qaflow.sandbox.spec.spec_for_task`)."""
        return self.network_policy(self.agent)[0] is NetworkMode.PUBLIC

    def verifier_network(self) -> bool:
        """Network for the verifier phase, as `agent_network` (from [verifier] or [environment])."""
        return self.network_policy(self.verifier)[0] is NetworkMode.PUBLIC


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value if v is not None]
    return value


_COPY_RE = re.compile(r"^\s*(COPY|ADD)\s+(.*)$", re.IGNORECASE)


def copy_sources(instruction_args: str) -> list[str]:
    """Sources of a COPY/ADD argument string (flags dropped, JSON form handled); the last word is the dest."""
    import json
    import shlex

    args = instruction_args.strip()
    if args.startswith("["):
        try:
            words = [str(w) for w in json.loads(args)]
        except (json.JSONDecodeError, RecursionError):
            words = shlex.split(args)
    else:
        words = shlex.split(args)
    words = [w for w in words if not w.startswith("--")]
    return words[:-1]


def _check_inside(root: Path, target: Path, where: Path, what: str, scope: str) -> None:
    """Raise a TaskError at `where` unless `target` resolves inside `root` (`scope` names root for people)."""
    try:
        resolved_root = root.resolve()
        resolved = target.resolve()
    except (OSError, RuntimeError, ValueError) as e:  # a symlink loop, a NUL byte in the path
        raise TaskError(where, f"{what} cannot be resolved: {e}") from e
    if resolved != resolved_root and resolved_root not in resolved.parents:
        raise TaskError(where, f"{what} points outside {scope} ({resolved})")


def _walk_files(root: Path) -> list[Path]:
    """All regular files and symlinks under root, sorted, skipping IGNORED_NAMES."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES)
        base = Path(dirpath)
        for d in dirnames:
            if (base / d).is_symlink():
                found.append(base / d)
        for f in sorted(filenames):
            if f not in IGNORED_NAMES:
                found.append(base / f)
    return sorted(found)


def tree_hash(root: Path) -> str:
    """sha256 over (relative path, kind, sha256 of the bytes) of every file under root, in sorted order.

    Each entry is framed unambiguously (a path holds no NUL; the file digest has a fixed length),
    so no two different trees share a hash. A symlink counts as its target text; a special file
    (fifo, socket, device) as its type only: it is never opened.
    """
    digest = hashlib.sha256()
    if not root.exists():
        return digest.hexdigest()
    for path in _walk_files(root):
        rel = path.relative_to(root).as_posix()
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            kind, body = b"L", hashlib.sha256(os.fsencode(os.readlink(path))).digest()
        elif stat.S_ISREG(st.st_mode):
            kind, body = b"F", _file_digest(path)
        else:
            kind, body = b"S", hashlib.sha256(stat.filemode(st.st_mode).encode()).digest()
        digest.update(os.fsencode(rel) + b"\0" + kind + body)
    return digest.hexdigest()


def _special_kind(mode: int) -> str:
    kinds = {"p": "fifo", "s": "socket", "c": "character device", "b": "block device"}
    return kinds.get(stat.filemode(mode)[0], "special file")


def _file_digest(path: Path) -> bytes:
    inner = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            inner.update(chunk)
    return inner.digest()


class Task(BaseModel):
    """A loaded, validated task folder."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: Path
    config: TaskConfig
    instruction: str
    version: str
    """sha256 of the task's files (paths and bytes, sorted): the version id."""
    env_hash: str
    """sha256 of environment/ alone: the image cache key."""
    origin: Path | None = None
    """The folder this task was copied from when `path` is a snapshot of it (`snapshot_task`)."""

    @property
    def home(self) -> Path:
        """The task's folder as its user knows it: the origin of a snapshot, else `path`."""
        return self.origin or self.path

    @property
    def name(self) -> str:
        if self.config.task is not None:
            return self.config.task.name
        return self.path.name

    @property
    def short_version(self) -> str:
        return self.version[:12]

    @property
    def environment_dir(self) -> Path:
        return self.path / "environment"

    @property
    def dockerfile(self) -> Path:
        return self.environment_dir / "Dockerfile"

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.path / "solution"

    @property
    def has_solution(self) -> bool:
        return (self.solution_dir / "solve.sh").is_file()

    @property
    def verifier_mode(self) -> VerifierEnvironmentMode:
        return self.config.verifier.environment_mode or (
            VerifierEnvironmentMode.SEPARATE
            if (self.tests_dir / "Dockerfile").is_file()
            else VerifierEnvironmentMode.SHARED
        )

    @property
    def agent_timeout_sec(self) -> float:
        return float(self.config.agent.timeout_sec or 600.0)

    @property
    def verifier_timeout_sec(self) -> float:
        return float(self.config.verifier.timeout_sec or 600.0)

    @classmethod
    def load(
        cls,
        path: Path | str,
        *,
        require_solution: bool = True,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> Task:
        """Load and validate a task folder.

        Raises:
            TaskError: naming the offending file and the reason, for a missing or malformed
                task.toml, a missing instruction, tests or (with `require_solution`) solution,
                a non-UTF-8 instruction, a symlink outside the task or a Dockerfile COPY source
                outside its build context, a fifo/socket/device, or a file larger than `max_file_bytes`.
        """
        root = Path(path)
        if not root.is_dir():
            raise TaskError(root, "not a task folder (no such directory)")
        for file in _walk_files(root):
            st = file.lstat()
            if stat.S_ISLNK(st.st_mode):
                _check_inside(root, file, file, "symlink", "the task folder")
            elif not stat.S_ISREG(st.st_mode):
                raise TaskError(file, f"not a regular file but a {_special_kind(st.st_mode)}")
            elif st.st_size > max_file_bytes:
                size, limit = _size_text(st.st_size), _size_text(max_file_bytes)
                if size == limit:  # rounded alike: "100 MiB, over the 100 MiB limit" would read as no excess
                    size, limit = f"{size} ({st.st_size} bytes)", f"{limit} ({max_file_bytes} bytes)"
                raise TaskError(file, f"file is {size}, over the {limit} limit")

        toml_path = root / "task.toml"
        if not toml_path.is_file():
            raise TaskError(toml_path, "missing task.toml")
        try:
            config = TaskConfig.from_toml(toml_path.read_text(encoding="utf-8"))
        except OSError as e:
            raise TaskError(toml_path, f"unreadable: {e}") from e
        except RecursionError as e:
            raise TaskError(toml_path, "malformed TOML: nested too deeply") from e
        except UnicodeDecodeError as e:
            raise TaskError(toml_path, f"not UTF-8 ({e.reason} at byte {e.start})") from e
        except tomllib.TOMLDecodeError as e:
            raise TaskError(toml_path, f"malformed TOML: {e}") from e
        except ValidationError as e:
            first = e.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise TaskError(toml_path, f"invalid field {loc!r}: {first['msg']}") from e

        instruction = _load_instruction(root, config)
        _check_required(root, config, require_solution)
        _check_dockerfile(root)
        return cls(
            path=root.resolve(),
            config=config,
            instruction=instruction,
            version=tree_hash(root),
            env_hash=tree_hash(root / "environment"),
        )


def snapshot_task(folder: Path, into: Path, *, require_solution: bool = True) -> Task:
    """The task at `folder` loaded from a copy of its files at `into/<folder name>`, so that whatever runs it
    uses the bytes its version hash counts, even if the folder changes meanwhile (its `origin` is `folder`).

    Raises:
        TaskError: as `Task.load`, naming the file under `folder`.
    """
    folder = Path(folder).resolve()
    Task.load(folder, require_solution=require_solution)  # checked in place first: no fifo read, no huge file copied
    copy = into / folder.name
    try:
        copy_task_folder(folder, copy)
    except shutil.Error as e:
        first = e.args[0][0] if e.args and isinstance(e.args[0], list) and e.args[0] else (str(folder), "", str(e))
        raise TaskError(Path(first[0]), f"cannot copy: {first[2]}") from e
    except OSError as e:
        raise TaskError(Path(e.filename or folder), f"cannot copy: {e.strerror or e}") from e
    try:
        task = Task.load(copy, require_solution=require_solution)
    except TaskError as e:
        try:
            where = folder / Path(e.path).resolve().relative_to(copy.resolve())
        except ValueError:
            where = Path(e.path)
        raise TaskError(where, e.reason) from e
    return task.model_copy(update={"origin": folder})


def _size_text(size: int) -> str:
    """A byte count for people: MiB from 1 MiB up, else bytes (a small limit must not read "0 MiB")."""
    return f"{size / 2**20:.1f}".removesuffix(".0") + " MiB" if size >= 2**20 else f"{size} bytes"


def _read_utf8(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise TaskError(path, f"not UTF-8 ({e.reason} at byte {e.start})") from e
    except OSError as e:
        raise TaskError(path, f"unreadable: {e}") from e


def _load_instruction(root: Path, config: TaskConfig) -> str:
    """The root instruction.md, or for a multi-step task every step's instruction.md joined (as Harbor
    does, a root instruction.md of a multi-step task is not used, and cannot stand in for a step's)."""
    if config.steps:
        parts = []
        for step in config.steps:
            step_file = root / "steps" / step.name / "instruction.md"
            if not step_file.is_file():
                raise TaskError(step_file, f"missing instruction for step {step.name!r}")
            parts.append(_read_utf8(step_file))
        return "\n\n".join(parts)
    top = root / "instruction.md"
    if top.is_file():
        return _read_utf8(top)
    raise TaskError(top, "missing instruction.md")


def _has_any(folder: Path, names: tuple[str, ...]) -> bool:
    return any((folder / n).is_file() for n in names)


def _check_required(root: Path, config: TaskConfig, require_solution: bool) -> None:
    tests = ("test.sh", "test.bat")
    solves = ("solve.sh", "solve.bat")
    if config.steps:
        for step in config.steps:
            step_dir = root / "steps" / step.name
            if not (_has_any(step_dir / "tests", tests) or _has_any(root / "tests", tests)):
                raise TaskError(step_dir / "tests" / "test.sh", f"missing verifier for step {step.name!r}")
            if require_solution and not _has_any(step_dir / "solution", solves):
                raise TaskError(step_dir / "solution" / "solve.sh", f"missing solution for step {step.name!r}")
        return
    if not _has_any(root / "tests", tests):
        raise TaskError(root / "tests" / "test.sh", "missing verifier tests/test.sh")
    if require_solution and not _has_any(root / "solution", solves):
        raise TaskError(root / "solution" / "solve.sh", "missing reference solution solution/solve.sh")


def _check_dockerfile(root: Path) -> None:
    """COPY/ADD sources of environment/Dockerfile and (separate verifier) tests/Dockerfile stay in their context."""
    for context in (root / "environment", root / "tests"):
        dockerfile = context / "Dockerfile"
        if not dockerfile.is_file():
            continue
        scope = f"the build context {context.name}/"
        for line in dockerfile_logical_lines(_read_utf8(dockerfile)):
            match = _COPY_RE.match(line)
            if not match or "--from" in match.group(2):
                continue
            try:
                sources = copy_sources(match.group(2))
            except ValueError as e:
                raise TaskError(dockerfile, f"unparsable {match.group(1).upper()} line {line!r}: {e}") from e
            for source in sources:
                if "://" in source:
                    continue
                if Path(source).is_absolute() or ".." in Path(source).parts:
                    candidate = context / source.lstrip("/")
                    _check_inside(context, candidate, dockerfile, f"{match.group(1).upper()} source {source!r}", scope)


def find_task_dirs(root: Path | str) -> list[Path]:
    """Every folder under `root` holding a task.toml (not descending into a task folder), sorted."""
    root = Path(root)
    if (root / "task.toml").is_file():
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES and not d.startswith("."))
        if "task.toml" in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []
    return sorted(found)
