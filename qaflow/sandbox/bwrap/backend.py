"""The bubblewrap backend: builds a task's environment over the host's own root and opens sandboxes.

The sandbox itself (isolation flags, limits, exec, file IO) is `qaflow.sandbox.bwrap.sandbox.BwrapSandbox`.
The root it sees: /usr, /etc, the /bin- and /lib-style links or dirs and the host Python's prefix
(`sys.base_prefix`, first on PATH) read-only, `--proc /proc`, `--dev /dev`, and the tmpfs root
remounted read-only. Writable: the WORKDIR (default /app), /tests, /solution, /logs, /tmp and
/root (HOME), plus any other WORKDIR/COPY destination outside the read-only pieces; each is the
same path under the sandbox's temp folder, which `close()` deletes. Nothing else on the host is
writable.

Image: the Dockerfile subset (see `dockerfile`: WORKDIR, COPY, ENV, ARG, RUN, SHELL; FROM is
recorded, the host root is the base) is built once per `spec.env_hash` into
`<cache>/bwrap/<hash>` (built in a temp folder, then renamed, so a cache entry is complete or
absent) and copied into each new sandbox, so a second open runs no RUN step. RUN executes inside
the sandbox (with network unless `spec.build_network` is off) and can only write to the writable
paths; one that fails on a read-only file system is an `UnsupportedError` (it needs the docker
backend), any other failure a `BuildError`. A RUN that installs system packages (apt, apk, yum,
dnf, ...) or edits the image's users (useradd, adduser, ...) is refused before any step runs: the
host's root, read-only, is the base; so is a FROM image whose userland the host's root does not
reproduce (another Python or distribution, see `base_image`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qaflow.errors import BuildError, SandboxError, SandboxUnavailableError, UnsupportedError
from qaflow.sandbox.base import SandboxSpec
from qaflow.sandbox.bwrap import cgroups
from qaflow.sandbox.bwrap.base_image import mismatch
from qaflow.sandbox.bwrap.rootfs import host_root, under
from qaflow.sandbox.bwrap.sandbox import (
    BASE_PATH,
    HOST_ENV,
    TEMP_PREFIX,
    BwrapSandbox,
    base_env,
    bwrap_flags,
    close_open,
    tail_args,
)
from qaflow.sandbox.dockerfile import BuildPlan, Copy, MakeDir, Run, plan_build

IMAGE_FORMAT = 1
BASE_ROOTS = ("/tests", "/solution", "/logs", "/tmp", "/root")
_META: dict[Path, dict[str, Any]] = {}
"""Image metadata already read, by cache folder (a stat still checks that the entry exists)."""


@functools.cache
def _check(bwrap: str) -> tuple[bool, str]:
    argv = [*bwrap_flags(bwrap, "qaflow-check", False), *host_root().args, *tail_args(), "--", "true"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=HOST_ENV)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"`bwrap ... true` could not run: {e}"
    if proc.returncode != 0:
        return False, f"`bwrap ... true` failed (exit {proc.returncode}): {proc.stderr.strip()[-400:]}"
    probe = cgroups.create(f"{os.getpid()}-check-{uuid.uuid4().hex[:8]}", memory_bytes=1 << 30, pids=64, cpus=1.0)
    using = sorted(probe.dirs)
    failures = probe.remove()
    if failures:
        return False, f"bwrap works but its probe cgroup could not be removed: {failures[0]}"
    mode = f"cgroup v1 ({', '.join(using)})" if using else "rlimits"
    fallback = f"; rlimits for {', '.join(sorted(probe.missing))}" if using and probe.missing else ""
    if "pids" in probe.missing and os.geteuid() == 0:
        fallback += " (as root RLIMIT_NPROC is ignored: no process limit)"
    return True, f"bubblewrap at {bwrap}; limits via {mode}{fallback}"


def default_cache_dir() -> Path:
    """`$QAFLOW_CACHE_DIR/bwrap`, else the user cache dir's `qaflow/bwrap`."""
    env = os.environ.get("QAFLOW_CACHE_DIR")
    if env:
        return Path(env) / "bwrap"
    import platformdirs

    return Path(platformdirs.user_cache_dir("qaflow")) / "bwrap"


class BwrapBackend:
    """Builds (cached) and opens bwrap sandboxes."""

    def __init__(self, cache_dir: Path | None = None):
        self.cache_dir = cache_dir or default_cache_dir()

    @classmethod
    def check(cls) -> tuple[bool, str]:
        """(works, reason): bwrap is on PATH and a trivial sandbox with our flags runs."""
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return False, "bwrap not found on PATH (apt-get install bubblewrap)"
        return _check(bwrap)

    @classmethod
    def reap(cls, run_id: str | None = None) -> int:
        """Close this process's open sandboxes of `run_id` (all when None; an interrupted run's trials end
        at once), then remove cgroups and temp folders left by dead processes; returns how many went.
        Leftovers carry the pid of the process that made them, not the run.
        """
        removed = close_open(run_id)
        removed += cgroups.reap_stale()
        leftovers = [(f, TEMP_PREFIX) for f in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*")]
        leftovers += [(f, ".build-") for f in default_cache_dir().glob(".build-*")]
        for folder, prefix in leftovers:
            pid = folder.name.removeprefix(prefix).split("-", 1)[0]
            if pid.isdigit() and not cgroups.pid_alive(int(pid)):
                shutil.rmtree(folder)
                removed += 1
        return removed

    @staticmethod
    def host_python() -> str | None:
        """The `python3` bwrap sandboxes run (the host Python's, first on their PATH)."""
        folder = host_root().python_bin
        return f"{folder}/python3" if folder else shutil.which("python3", path=BASE_PATH)

    @classmethod
    def declines(cls, spec: SandboxSpec) -> str | None:
        """Why this backend would not run `spec` as docker does (None: it would), read from the task alone:
        a prebuilt image, a Dockerfile outside the subset or one that installs system packages, a FROM whose
        userland the host does not reproduce, a runtime, network the task declares (bwrap shares the host's)."""
        if spec.runtime is not None:
            return f"runtime {spec.runtime} runs under docker"
        if spec.runtime_network and spec.network_declared:
            return "the task declares network, which bwrap could only share with the host"
        if not spec.dockerfile.is_file():
            return f"task {spec.name!r} names a prebuilt image" if spec.docker_image else "no environment/Dockerfile"
        try:
            plan = plan_build(spec.dockerfile, spec.context_dir, base_env=base_env())
            _refuse_other_userland(spec, plan.base)
            _refuse_system_changes(plan)
        except (UnsupportedError, BuildError) as e:
            return str(e).splitlines()[0] if str(e) else type(e).__name__
        return None

    def build(self, spec: SandboxSpec) -> str:
        """Prepare (once per env_hash) the environment of `spec` without starting a sandbox; returns its folder.

        Raises: as `open`.
        """
        ok, reason = self.check()
        if not ok:
            raise SandboxUnavailableError(reason)
        return str(self._image(spec)[1])

    def stand_ins(self, spec: SandboxSpec) -> dict[str, str]:
        """None: a bwrap sandbox runs the host's userland for its `FROM`, never a stand-in image."""
        return {}

    def python_version(self, ref: str) -> str | None:
        """None: bwrap images have no Python of their own (the host's runs in every sandbox)."""
        return None

    def open(self, spec: SandboxSpec) -> BwrapSandbox:
        """Build the image for `spec` (once per env_hash) and start a sandbox from it.

        Raises:
            SandboxUnavailableError: when bwrap does not work here.
            UnsupportedError: when the task needs the docker backend (a Dockerfile instruction
                outside the subset, a prebuilt image without Dockerfile, writes to read-only paths).
            BuildError: when a COPY or RUN step fails.
            SandboxError: when the image cannot be stored or copied.
        """
        ok, reason = self.check()
        if not ok:
            raise SandboxUnavailableError(reason)
        meta, image_fs = self._image(spec)
        if spec.workdir:
            meta = {**meta, "workdir": spec.workdir}
        box = BwrapSandbox.from_image(spec, meta, image_fs)
        if spec.workdir and not any(under(spec.workdir, root) for root in box.writable_roots):
            box.add_root(spec.workdir)
        return box

    def _image(self, spec: SandboxSpec) -> tuple[dict[str, Any], Path]:
        key = spec.env_hash
        if spec.network_declared and spec.build_network:  # built with the host's network: never reused offline
            key += "-net"
        if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}", key):
            key = "h-" + hashlib.sha256(key.encode()).hexdigest()
        final = self.cache_dir / key
        if not (final / "meta.json").is_file():
            meta = None
        elif (meta := _META.get(final)) is None:
            loaded = json.loads((final / "meta.json").read_text())
            if loaded.get("format") == IMAGE_FORMAT:
                meta = _META[final] = loaded
            else:
                shutil.rmtree(final)
        if meta is not None:
            _refuse_other_userland(spec, meta.get("base"))
            return meta, final / "fs"
        if not spec.dockerfile.is_file():
            if spec.docker_image:
                raise UnsupportedError(
                    f"{spec.context_dir}: task {spec.name!r} names the prebuilt image {spec.docker_image!r} "
                    "and has no environment/Dockerfile; that needs the docker backend"
                )
            plan = BuildPlan(dockerfile=spec.dockerfile)
        else:
            plan = plan_build(spec.dockerfile, spec.context_dir, base_env=base_env())
            _refuse_other_userland(spec, plan.base)
            _refuse_system_changes(plan)
        self.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        work = Path(tempfile.mkdtemp(prefix=f".build-{os.getpid()}-", dir=self.cache_dir))
        try:
            meta = _build(spec, plan, work / "fs")
            (work / "meta.json").write_text(json.dumps(meta, indent=1))
            try:
                work.rename(final)
            except OSError:
                if not (final / "meta.json").is_file():  # not another process's finished build
                    shutil.rmtree(final, ignore_errors=True)
                    work.rename(final)
        except OSError as e:
            raise SandboxError(f"cannot store the bwrap image of {spec.name} in {final}: {e}") from e
        finally:
            if work.exists():
                shutil.rmtree(work)
        _META[final] = meta
        return meta, final / "fs"


def _refuse_other_userland(spec: SandboxSpec, base: str | None) -> None:
    """UnsupportedError when the host's root cannot stand for the Dockerfile's FROM image (`base_image`)."""
    why = mismatch(base)
    if why is not None:
        raise UnsupportedError(f"{spec.dockerfile}: FROM {base}: {why}; that needs the docker backend")


def _build(spec: SandboxSpec, plan: BuildPlan, fs: Path) -> dict[str, Any]:
    """Run the plan's steps into `fs`; returns the image metadata.

    Raises:
        UnsupportedError: for a step that writes outside what bwrap can make writable.
        BuildError: for a failing COPY or RUN.
    """
    fs.mkdir()
    meta: dict[str, Any] = {"format": IMAGE_FORMAT, "base": plan.base, "workdir": plan.workdir, "env": plan.env}
    meta["roots"] = list(BASE_ROOTS)
    meta["labels"] = plan.labels
    box = BwrapSandbox(spec.for_build(), meta, fs, owned=None)
    deadline = time.monotonic() + spec.build_timeout_sec
    log_lines: list[str] = []

    def need_root(path: str, line: int, what: str, *, readonly_ok: bool = False) -> None:
        if box.files.is_writable(path):
            return
        conflict = box.files.root_conflict(path)
        if conflict is not None:
            if readonly_ok and (path == "/" or os.path.isdir(path)):
                return
            raise UnsupportedError(f"{plan.dockerfile}:{line}: {what}: {conflict}; that needs the docker backend")
        box.add_root(path)

    def ensure_dir(path: str, line: int, what: str) -> None:
        """A WORKDIR: made writable (or an existing read-only host folder), and created."""
        need_root(path, line, what, readonly_ok=True)
        if box.files.is_writable(path):
            box.files.makedirs(path)

    try:
        for d in BASE_ROOTS:
            (fs / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
        (fs / "tmp").chmod(0o1777)
        (fs / "root").chmod(0o700)
        for step in plan.steps:
            if isinstance(step, MakeDir):
                ensure_dir(step.path, step.line, f"WORKDIR {step.path}")
            elif isinstance(step, Copy):
                _copy_step(box, step, need_root)
            elif isinstance(step, Run):
                ensure_dir(step.workdir, step.line, f"RUN in {step.workdir}")
                _run_step(box, step, plan, deadline, log_lines)
        ensure_dir(plan.workdir, 0, f"WORKDIR {plan.workdir}")
    except (UnsupportedError, BuildError):
        raise
    except (SandboxError, OSError) as e:
        raise BuildError(f"{plan.dockerfile}: {e}", "\n".join(log_lines)[-4000:]) from e
    finally:
        box.close()
    meta["roots"] = box.files.roots
    return meta


_PACKAGE_INSTALL = re.compile(
    r"(?:^|[\s;&|(/`])(?P<tool>apt-get|apt|aptitude|yum|dnf|microdnf|zypper|apk)"
    r"(?:\s+(?:-o\s+\S+|-\S+))*\s+(?P<verb>install|add)\b"
)
"""A system package manager's install (`apt-get -y install`, `apk add`, ...) in a RUN's shell text."""


_ACCOUNT_CHANGE = re.compile(
    r"(?:^|[\s;&|(/`])(?P<tool>useradd|adduser|groupadd|addgroup|usermod|groupmod|chpasswd|userdel|groupdel)\b"
)
"""A command that edits /etc/passwd or /etc/group (a task's own agent or verifier user) in a RUN's shell text."""


def _refuse_system_changes(plan: BuildPlan) -> None:
    """Raises:
    UnsupportedError: for the first RUN that installs system packages or edits the image's users and groups,
    naming it and its line."""
    for step in plan.steps:
        if not isinstance(step, Run):
            continue
        text = " ".join(step.argv)
        where = f"{plan.dockerfile.parent.name}/{plan.dockerfile.name} line {step.line}"
        match = next((m for m in _PACKAGE_INSTALL.finditer(text) if (m["tool"] == "apk") == (m["verb"] == "add")), None)
        if match:
            raise UnsupportedError(
                f"the bwrap backend cannot install system packages ({match['tool']} {match['verb']} in {where}); "
                "use the docker backend"
            )
        account = _ACCOUNT_CHANGE.search(text)
        if account:
            raise UnsupportedError(
                f"the bwrap backend cannot add or change the image's users and groups ({account['tool']} in "
                f"{where}: the host's /etc is the sandbox's, read-only); use the docker backend"
            )


def _copy_step(box: BwrapSandbox, step: Copy, need_root: Callable[..., None]) -> None:
    def skip(source: Path) -> bool:
        rel = source.relative_to(step.context).as_posix()
        return step.ignore.excluded(rel)

    for source in step.sources:
        real = source.resolve()
        existing_dir = box.files.is_writable(step.dest) and box.files.readable_host(step.dest).is_dir()
        into_dir = step.dest_is_dir or existing_dir
        if real.is_dir():
            need_root(step.dest, step.line, f"COPY to {step.dest}")
            box.files.copy_in(source, step.dest, chmod=step.chmod, skip=skip)
            continue
        dest = f"{step.dest.rstrip('/')}/{source.name}" if into_dir else step.dest
        need_root(dest.rsplit("/", 1)[0] or "/", step.line, f"COPY to {dest}")
        box.files.copy_in(real, dest, chmod=step.chmod)


def _run_step(box: BwrapSandbox, step: Run, plan: BuildPlan, deadline: float, log_lines: list[str]) -> None:
    remaining = deadline - time.monotonic()
    where = f"{plan.dockerfile}:{step.line}"
    if remaining <= 0:
        raise BuildError(f"{where}: build timed out before RUN {step.text[:120]}", "\n".join(log_lines)[-4000:])
    res = box.exec_with_env(list(step.argv), step.env, timeout=remaining, cwd=step.workdir)
    log_lines += [f"#{step.line} RUN {step.text[:200]}", res.stdout, res.stderr]
    tail = "\n".join(log_lines)[-4000:]
    if res.ok:
        return
    if "Read-only file system" in res.stderr or "Read-only file system" in res.stdout:
        raise UnsupportedError(
            f"{where}: RUN writes outside the writable paths ({', '.join(box.files.roots)}); "
            f"that needs the docker backend\n--- build log tail ---\n{tail[-1500:]}"
        )
    why = f"timed out after {res.duration_s:.0f} s" if res.timed_out else f"exited {res.exit_code}"
    raise BuildError(f"{where}: RUN {step.text[:200]} {why}", tail)
