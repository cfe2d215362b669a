"""One bwrap sandbox: the host root read-only, writable folders at container paths, one bwrap per exec.

Isolation (every exec is a fresh `bwrap` over the same writable folders, so state persists
between execs as in a container, but no process outlives its exec):
`--unshare-all --unshare-user --disable-userns --cap-drop ALL` (as root, bwrap would otherwise
keep every capability inside its user namespace, and the sandbox could remount /usr read-write),
`--die-with-parent --new-session --as-pid-1` (the command is pid 1 of its own pid namespace, so
when it exits or bwrap is killed everything inside dies, and no bwrap reaper is left behind as a
zombie for the host's init; like `docker run`, pid 1 ignores signals it has no handler for),
`--hostname`, `--clearenv` plus PATH/HOME/LANG/HOSTNAME, Dockerfile ENV, spec.env and the exec's
env. Network: bwrap has none of its own to give, so a sandbox shares the host's network namespace
(`--share-net`) only when the task itself declares `public` (`spec.network_declared`); otherwise its
execs share one loopback-only namespace of their own (`qaflow.sandbox.bwrap.process.NetHolder`).

Limits: with cgroup v1 (as root), each sandbox gets its own pids, memory (+memsw) and cpu (CFS
quota = `limits.cpus`) groups under the caller's own groups. bwrap starts with `--block-fd`; its
child (the command, not yet exec'd) is moved into the groups and given RLIMIT_FSIZE
(`file_size_mb`) with prlimit, then released: nothing it forks is born outside. `oom_killed` is
the memory group's oom_kill counter going up during the exec. For a controller that is missing,
rlimits stand in: RLIMIT_AS for memory, RLIMIT_NPROC for pids (root ignores it), RLIMIT_CPU from
the exec timeout for cpu; under RLIMIT_AS `oom_killed` means MemoryError or SIGKILL.
`BwrapSandbox.limits_mode` says which is used. bwrap's own monitor process stays outside the
groups, so `pids` counts exactly the command's processes and threads. Cost: the first cgroup
move after an idle spell waits for an RCU grace period (about 8 ms here; later ones take
microseconds), which `cgroups.prime_async` at open overlaps with the image copy and bwrap start.

Disk: writable folders live on the host's disk. RLIMIT_FSIZE caps each file; while an exec runs
longer than 0.2 s a watchdog (`StorageWatch`) measures the sandbox's folder and kills the exec
(its whole pid namespace) once it pushes the total past `limits.storage_mb` (`storage_exceeded`).

Strays: an exec's pid namespace dies with its command, so nothing (`setsid`, `nohup`, `&`) survives
its exec; `kill_strays` still kills whatever is left in the sandbox's groups and bwraps, defensively.

Files: put/get/get_dir never start a process; they are file IO on the sandbox's folders with
symlinks resolved in container space (`rootfs.ContainerFS`), so nothing the sandbox plants can
redirect them onto the host.

Size (over 500 lines on purpose): one class, the `Sandbox` protocol over one bwrap root; its exec, copy,
settle and kill paths share the root's folders and the shim's protocol, so they stay together (the shim,
network holder and pumps are `process`, the host root `rootfs`).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import math
import os
import pwd
import re
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from qaflow.errors import SandboxError, UnsupportedError
from qaflow.sandbox.base import SHELL, CappedBuffer, ExecResult, SandboxSpec, StorageWatch, settled_exec, tree_usage
from qaflow.sandbox.bwrap import cgroups
from qaflow.sandbox.bwrap.process import HOST_ENV as HOST_ENV
from qaflow.sandbox.bwrap.process import KILL_GRACE_S, NSENTER, SHIM, NetHolder, Report, kill, pump
from qaflow.sandbox.bwrap.rootfs import ContainerFS, HostRoot, host_root, under

log = logging.getLogger(__name__)

BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TEMP_PREFIX = "qaflow-bwrap-"
_ENV_NAME = re.compile(r"[^=\0]+")


def bwrap_flags(bwrap: str, hostname: str, network: bool) -> list[str]:
    flags = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    flags += ["--die-with-parent", "--new-session", "--as-pid-1", "--hostname", hostname]
    return flags + (["--share-net"] if network else [])


PROC_COVERS = ("sys", "sysrq-trigger", "acpi", "fs", "pressure")
"""Host-global /proc entries mounted read-only over the sandbox's /proc. The sandbox's uid 0 is the
host's (without capabilities), so root-owned files with an owner write bit, such as most of
/proc/sys (kernel.core_pattern names a program the kernel runs as host root), would otherwise be
writable: bwrap itself covers only irq, bus and those it finds writable from the outside, which
skips /proc/sys. Entries whose writes need a capability (mtrr, scsi, ...) are left alone."""


@functools.cache
def tail_args() -> list[str]:
    covers: list[str] = []
    for name in PROC_COVERS:
        if os.path.lexists(f"/proc/{name}"):
            covers += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    return ["--proc", "/proc", *covers, "--dev", "/dev", "--remount-ro", "/", "--clearenv"]


def base_env() -> dict[str, str]:
    """The environment every sandbox starts from (the 'base image' ENV)."""
    python_bin = host_root().python_bin
    path = f"{python_bin}:{BASE_PATH}" if python_bin else BASE_PATH
    return {"PATH": path, "HOME": "/root", "LANG": "C.UTF-8"}


def hostname_for(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9-]+", "-", name).strip("-")[:63] or "qaflow"


def _user_args(user: str | int | None) -> list[str]:
    """bwrap --uid/--gid for `user` (identity only: every sandbox uid is the host's root, no capabilities).

    Raises:
        SandboxError: for a user name the host's /etc/passwd (the sandbox's) does not know.
    """
    if user is None:
        return []
    text = str(user)
    name, _, group = text.partition(":")
    try:
        entry = None if name.isdigit() else pwd.getpwnam(name)
    except KeyError as e:
        raise SandboxError(f"no user {name!r} in this sandbox's /etc/passwd") from e
    uid = int(name) if entry is None else entry.pw_uid
    gid = int(group) if group.isdigit() else (entry.pw_gid if entry is not None else uid)
    if uid == 0 and gid == 0:
        return []
    return ["--uid", str(uid), "--gid", str(gid)]


class BwrapSandbox:
    """One bwrap sandbox: writable folders in a temp dir, a cgroup set, and a bwrap argv prefix."""

    def __init__(
        self, spec: SandboxSpec, meta: dict[str, Any], fs: Path, owned: Path | None, netns: NetHolder | None = None
    ):
        host: HostRoot = host_root()
        host.ensure()
        self.spec = spec
        self.meta = meta
        self.workdir: str = meta["workdir"]
        self.files = ContainerFS(fs, list(meta["roots"]), host)
        self._bwrap = shutil.which("bwrap") or "bwrap"
        self._base_env = {**base_env(), "HOSTNAME": hostname_for(spec.name)}
        self._image_env = {**meta["env"], **spec.env}
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[bytes]] = set()
        self._kept: dict[subprocess.Popen[bytes], int] = {}
        """Execs whose pid namespace lives on, with how many processes each command left running."""
        self._lost = 0
        """Processes that execs since the last `settle` left running but that died with them (no keep here)."""
        self._netns = netns
        self._owns_netns = netns is None
        self._host_net = spec.runtime_network and spec.network_declared
        """bwrap has no network of its own to give: it shares the host's, and only with tasks that ask."""
        self._can_keep = self._host_net or NSENTER is not None
        self._closed = False
        limits = spec.limits
        self._cg = cgroups.create(
            f"{os.getpid()}-{uuid.uuid4().hex[:12]}",
            memory_bytes=limits.memory_mb * 2**20,
            pids=limits.pids,
            cpus=limits.cpus,
        )
        if self._cg.dirs:
            cgroups.prime_async()  # after create: a move holds the cgroup mutex that mkdir needs
        for controller, why in self._cg.missing.items():
            log.debug("bwrap sandbox %s: no %s cgroup (%s); using rlimits", spec.name, controller, why)
        self._finalizer = weakref.finalize(self, _cleanup, owned, self._cg, spec.name)
        self._configure()
        with _OPEN_LOCK:
            _OPEN.add(self)

    @classmethod
    def from_image(cls, spec: SandboxSpec, meta: dict[str, Any], image_fs: Path) -> BwrapSandbox:
        """A new sandbox whose writable tree starts as a copy of the built image `image_fs`.

        Raises:
            SandboxError: when the image cannot be copied.
        """
        owned = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))
        box = cls(spec, meta, owned, owned)
        try:
            copy_image(image_fs, owned)
        except OSError as e:
            box.close()
            raise SandboxError(f"cannot copy the image of {spec.name} into {owned}: {e}") from e
        return box

    def add_root(self, path: str) -> None:
        """Make the container folder `path` writable too (the build does this for WORKDIR/COPY targets)."""
        (self.files.fs / path.lstrip("/")).mkdir(mode=0o755, parents=True, exist_ok=True)
        self.meta["roots"] = [*self.meta["roots"], path]
        self._configure()

    def _configure(self) -> None:
        """Recompute the bwrap argv prefix (after the writable roots changed)."""
        self.files.set_roots(list(self.meta["roots"]))
        self._argv = [
            *bwrap_flags(self._bwrap, hostname_for(self.spec.name), self._can_keep),
            *self.files.bind_args(),
            *tail_args(),
        ]
        limits = self.spec.limits
        rlimits = [(resource.RLIMIT_FSIZE, limits.file_size_mb * 2**20)]
        if "memory" not in self._cg.dirs:
            rlimits.append((resource.RLIMIT_AS, limits.memory_mb * 2**20))
        if "pids" not in self._cg.dirs:
            rlimits.append((resource.RLIMIT_NPROC, limits.pids))
        self._rlimits = rlimits

    @property
    def host_dir(self) -> Path:
        """The host folder holding this sandbox's writable tree (deleted by `close`)."""
        return self.files.fs

    @property
    def writable_roots(self) -> list[str]:
        """The container folders this sandbox can write (the rest is the host's read-only root)."""
        return list(self.files.roots)

    @property
    def cgroup_dirs(self) -> dict[str, Path]:
        """Controller -> this sandbox's cgroup folder (empty where rlimits are used)."""
        return dict(self._cg.dirs)

    @property
    def limits_mode(self) -> str:
        """How limits are enforced: e.g. 'cgroup v1: cpu, memory, pids' or 'rlimits'."""
        if not self._cg.dirs:
            return "rlimits"
        extra = f"; rlimits for {', '.join(sorted(self._cg.missing))}" if self._cg.missing else ""
        return f"cgroup v1: {', '.join(sorted(self._cg.dirs))}{extra}"

    # -- exec ---------------------------------------------------------------------------------

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
        """Run `cmd` (a string goes through `sh -c`) in a fresh bwrap over this sandbox's folders.

        What the command leaves running lives on in its own pid namespace, sharing the sandbox's
        network (servers answer later execs and the verifier's view), until `kill_strays` or
        `close`; with `kill_strays_after` it dies with the command, before this returns.

        Raises:
            SandboxError: when the sandbox is closed, `cwd` does not exist, an env name is invalid,
                the user is unknown, or bwrap could not be started.
        """
        argv = [SHELL, "-c", cmd] if isinstance(cmd, str) else [str(c) for c in cmd]
        env = {**self._image_env, **(env or {})}
        return self.exec_with_env(argv, env, timeout=timeout, user=user, cwd=cwd, keep=not kill_strays_after)

    def exec_with_env(
        self,
        argv: list[str],
        env: Mapping[str, str],
        *,
        timeout: float | None = None,
        user: str | int | None = None,
        cwd: str | None = None,
        keep: bool = False,
    ) -> ExecResult:
        """`exec` of an argv with `env` over the base environment instead of the image's (a build's RUN).
        `keep`: processes the command leaves running live on (see `qaflow.sandbox.bwrap.process`), where this
        sandbox can.

        Raises:
            SandboxError: as `exec`.

        Long on purpose: one bwrap process's life (argv, limits, shim, pumps, timeout, kill, result) shares its locals.
        """
        if self._closed:
            raise SandboxError(f"sandbox {self.spec.name} is closed")
        if not argv:
            raise SandboxError("empty command")
        merged = {**self._base_env, **env}
        workdir = self._check_cwd(cwd or self.workdir)
        env_args: list[str] = []
        for key, value in merged.items():
            text = str(value)
            if not _ENV_NAME.fullmatch(key) or "\0" in text:
                raise SandboxError(f"invalid environment variable {key!r}")
            env_args += ["--setenv", key, text]
        rlimits = self._rlimits
        if timeout is not None and "cpu" not in self._cg.dirs:
            cpu_s = math.ceil(timeout * max(1.0, self.spec.limits.cpus)) + 1
            rlimits = [*rlimits, (resource.RLIMIT_CPU, cpu_s)]
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        report_r, report_w = os.pipe()
        requested_keep, keep = keep, keep and self._can_keep
        sync = ["--info-fd", str(info_w), "--block-fd", str(block_r)]
        shim = ["/bin/sh", "-c", SHIM, "qaflow", "1" if keep else "0"]
        full = [*self._net_prefix(), *self._argv, *sync, *env_args, *_user_args(user), "--chdir", workdir, "--"]
        oom_before = self._cg.oom_kills()
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                [*full, *shim, *argv],
                stdin=report_w,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=HOST_ENV,
                start_new_session=True,
                pass_fds=(info_w, block_r),
            )
        except (OSError, ValueError) as e:
            for fd in (info_r, block_w, report_r):
                os.close(fd)
            raise SandboxError(f"cannot start bwrap: {e}") from e
        finally:
            for fd in (info_w, block_r, report_w):
                os.close(fd)
        with self._lock:
            self._running.add(proc)
            closed = self._closed
        if closed:  # closed (reaped) from another thread while this exec started
            kill(proc)
        report: Report | None = None
        try:
            try:
                self._admit(proc, info_r, rlimits)
                os.write(block_w, b"x")
            finally:
                os.close(block_w)
            limit = self.spec.limits.output_bytes
            out, err_buf = CappedBuffer(limit), CappedBuffer(limit)
            watches: list[StorageWatch] = []

            def slow() -> None:  # only a command still running after SLOW_S gets a watchdog
                watch = self._storage_watch(proc)
                if watch is not None:
                    watches.append(watch)

            try:
                deadline = None if timeout is None else start + timeout
                timed_out, report = pump(proc, out, err_buf, deadline, report_fd=report_r, keep=keep, on_slow=slow)
                kept = keep and not timed_out and report is not None and report.left > 0
                code = report.exit_code if kept and report is not None else proc.wait()
            finally:
                for watch in watches:
                    watch.stop()
        finally:
            os.close(report_r)
            kept = keep and report is not None and report.left > 0 and proc.poll() is None
            with self._lock:
                if kept and report is not None:
                    self._kept[proc] = report.left  # its processes live on: `settle`, `kill_strays`
                else:
                    self._running.discard(proc)
            if not kept and proc.poll() is None:
                kill(proc)
                proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None and not pipe.closed:
                    pipe.close()
        left = 0 if report is None else report.left
        if requested_keep and not keep:
            self._lost += left
        killed = 0 if kept else left
        return self._result(code, out, err_buf, timed_out, time.monotonic() - start, oom_before, watches, killed)

    def _result(
        self,
        code: int,
        out: CappedBuffer,
        err_buf: CappedBuffer,
        timed_out: bool,
        duration: float,
        oom_before: int | None,
        watches: list[StorageWatch],
        left: int,
    ) -> ExecResult:
        exit_code = 128 - code if code < 0 else code
        oom_after = self._cg.oom_kills()
        if oom_before is not None and oom_after is not None:
            oom = oom_after > oom_before
        else:
            oom = not timed_out and (exit_code == 137 or "MemoryError" in err_buf.text()[-2000:])
        exceeded = any(watch.exceeded for watch in watches)
        stderr = err_buf.text()
        if exceeded:
            limit_mb = self.spec.limits.storage_mb
            stderr += f"\n[qaflow] killed: the sandbox's files passed the storage limit ({limit_mb} MiB)\n"
        return ExecResult(
            exit_code=exit_code,
            stdout=out.text(),
            stderr=stderr,
            storage_exceeded=exceeded,
            timed_out=timed_out,
            duration_s=duration,
            stdout_truncated=out.truncated,
            stderr_truncated=err_buf.truncated,
            oom_killed=oom,
            strays_killed=left,
        )

    def _storage_watch(self, proc: subprocess.Popen[bytes]) -> StorageWatch | None:
        """A watchdog killing `proc` (its whole pid namespace) when the sandbox's files pass the storage limit."""
        storage_mb = self.spec.limits.storage_mb
        if storage_mb is None:
            return None
        root = self.files.fs
        # started only for a command still running after SLOW_S: its first measure (the baseline) at once
        return StorageWatch(lambda: tree_usage(root), storage_mb * 2**20, lambda: kill(proc), first_wait=0).start()

    def kill_strays(self, clear: Sequence[str] = ()) -> int:
        """Kill whatever still runs in this sandbox; return how many were found. Then remove the
        container paths `clear` (a writable root is emptied), host-side, links never followed.

        Each exec's pid namespace ends with its command, so between execs this normally finds
        nothing; it also kills any process left in the sandbox's cgroups (none can be, short of a bug).

        Raises:
            SandboxError: a path cannot be removed, or the sandbox is closed.
        """
        self._check_open()
        killed = 0
        with self._lock:
            running = [p for p in self._running if p.poll() is None]
        for proc in running:
            kill(proc)
            killed += 1
        for proc in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=KILL_GRACE_S)
        with self._lock:
            self._kept.clear()
        for pid in self._cg.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        deadline = time.monotonic() + KILL_GRACE_S
        while self._cg.pids() and time.monotonic() < deadline:  # killed ones take a moment to leave
            time.sleep(0.01)
        for path in clear:
            self.files.clear(path)
        return killed

    def settle(self, clear: Sequence[str] = ()) -> int:
        """How many processes the agent's execs left running: those kept alive (nothing is changed
        then), else `kill_strays(clear)` and those that died with an exec that could not keep them."""
        with self._lock:
            alive = sum(n for proc, n in self._kept.items() if proc.poll() is None)
        if alive:
            return alive
        self.kill_strays(clear)
        lost, self._lost = self._lost, 0
        return lost

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
        """See `Sandbox.exec_when_settled`: settle, put and exec are host-side steps here (no exec to save)."""
        return settled_exec(self, cmd, clear=clear, uploads=uploads, timeout=timeout, env=env, user=user)

    def verifier_view(self) -> BwrapSandbox:
        """A sandbox over a copy of this one's files, in the same network namespace (the host's
        when the task has network), with cgroups and pid namespaces of its own.

        Raises:
            UnsupportedError: nothing is kept alive here (no nsenter: each exec had a network
                namespace of its own, and what it left died with it).
            SandboxError: the copy failed.
        """
        self._check_open()
        with self._lock:
            alive = any(proc.poll() is None for proc in self._kept)
        if not alive:
            raise UnsupportedError(
                f"the bwrap backend could not keep the processes {self.spec.name}'s agent left running "
                "(util-linux nsenter is missing, so each exec had a pid and network namespace of its own); "
                "install it, or use the docker backend"
            )
        owned = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))
        view = type(self)(self.spec, copy.deepcopy(self.meta), owned, owned, netns=self._netns)
        try:
            copy_image(self.files.fs, owned)
        except OSError as e:
            view.close()
            raise SandboxError(f"cannot copy the files of {self.spec.name} into {owned}: {e}") from e
        return view

    def _net_prefix(self) -> list[str]:
        """nsenter into the sandbox's shared network namespace (made at the first exec), or nothing:
        with network the execs share the host's, without nsenter each gets one of its own."""
        if self._host_net or NSENTER is None:
            return []
        with self._lock:
            if self._netns is None:
                self._netns = NetHolder(self._bwrap)
            return self._netns.enter()

    def _admit(self, proc: subprocess.Popen[bytes], info_r: int, rlimits: list[tuple[int, int]]) -> None:
        """Put bwrap's blocked child (the command's pid 1) into the cgroups and set its rlimits.

        Raises:
            SandboxError: when bwrap died before starting the child, or the child cannot be limited.
        """
        with os.fdopen(info_r, "rb") as info:
            text = info.read()
        match = re.search(rb'"child-pid":\s*(\d+)', text)
        if match is None:
            _, err = proc.communicate()
            raise SandboxError(
                f"bwrap could not start in sandbox {self.spec.name} (exit {proc.returncode}): "
                f"{err.decode(errors='replace').strip()[-400:]}"
            )
        pid = int(match.group(1))
        try:
            self._cg.join(pid)
            for which, value in rlimits:
                resource.prlimit(pid, which, (value, value))
        except OSError as e:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            kill(proc)
            _, err = proc.communicate()
            why = err.decode(errors="replace").strip()[-400:] or str(e)
            raise SandboxError(f"bwrap could not start in sandbox {self.spec.name}: {why}") from e

    def _check_cwd(self, cwd: str) -> str:
        resolved = self.files.resolve(cwd)
        mapped = self.files.host_path(resolved)
        if mapped is not None:
            if not mapped[0].is_dir():
                raise SandboxError(f"working directory {cwd} does not exist in sandbox {self.spec.name}")
        elif not (
            resolved in ("/", "/proc", "/dev")
            or under(resolved, "/proc")
            or under(resolved, "/dev")
            or any(under(root, resolved) for root in self.files.roots)
        ):
            raise SandboxError(f"working directory {cwd} does not exist in sandbox {self.spec.name}")
        return cwd

    # -- files --------------------------------------------------------------------------------

    def put(self, path: str, data: bytes | Path) -> None:
        """Write bytes to the file `path`, or copy a host file or folder (its contents) to `path`.

        Raises:
            SandboxError: when `path` is not under a writable folder of this sandbox, contains
                '..', or a folder/file is in the way.
            FileNotFoundError: when the host source does not exist.
        """
        self._check_open()
        if isinstance(data, bytes | bytearray | memoryview):
            self.files.write_bytes(path, bytes(data))
            return
        source = Path(data)
        if not source.exists():
            raise FileNotFoundError(2, "no such host file or folder", str(source))
        self.files.copy_in(source, path)

    def get(self, path: str) -> bytes:
        """Read the file `path` as the sandbox sees it.

        Raises:
            FileNotFoundError: when it does not exist.
            SandboxError: when it is not a regular file, or the host cannot see it (/proc, /dev).
        """
        self._check_open()
        return self.files.read_bytes(path)

    def get_dir(self, path: str, dest: Path) -> None:
        """Copy the folder `path` into the host folder `dest` (created if missing).

        Raises:
            FileNotFoundError: when `path` does not exist.
            SandboxError: when the host cannot see it.
        """
        self._check_open()
        self.files.copy_out(path, Path(dest))

    def read_first_text(self, folder: str, names: Sequence[str]) -> tuple[str, str] | None:
        """See `Sandbox.read_first_text` (read from the host side, links never followed)."""
        self._check_open()
        if self._is_link(folder):
            return None
        for name in names:
            path = f"{folder.rstrip('/')}/{name}"
            if self._is_link(path):
                continue
            try:
                data = self.files.read_bytes(path)
            except (FileNotFoundError, IsADirectoryError, SandboxError):
                continue
            return name, data.decode("utf-8", errors="replace")
        return None

    def _is_link(self, path: str) -> bool:
        """Whether the last component of the container path `path` is a symlink (the rest resolved)."""
        try:
            mapped = self.files.host_path(self.files.resolve(path, follow_last=False))
        except SandboxError:
            return False
        return mapped is not None and os.path.islink(mapped[0])

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError(f"sandbox {self.spec.name} is closed")

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Kill anything still running, remove the temp folders and cgroups. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            running = list(self._running)
        for proc in running:
            kill(proc)
        for proc in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=KILL_GRACE_S)
        self._kept.clear()
        if self._owns_netns and self._netns is not None:
            self._netns.close()
        self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"BwrapSandbox({self.spec.name!r}, workdir={self.workdir!r}, {state})"


_OPEN: weakref.WeakSet[BwrapSandbox] = weakref.WeakSet()
"""The sandboxes of this process not yet garbage: what `close_open` can reach."""
_OPEN_LOCK = threading.Lock()


def close_open(run_id: str | None = None) -> int:
    """Close this process's open sandboxes of `run_id` (all when None), from any thread: their running
    commands are killed, so a trial using one ends at its next step; returns how many were closed."""
    with _OPEN_LOCK:
        boxes = [b for b in _OPEN if not b._closed and (run_id is None or b.spec.run_id == run_id)]
    for box in boxes:
        box.close()
    return len(boxes)


def copy_image(src: Path, dest: Path) -> None:
    """Copy an image tree's contents into the existing folder `dest`: modes, file mtimes and links kept.

    `dest` itself keeps its mode (0700 from mkdtemp: sandboxed root can make setuid-root files, so
    no other host user may reach into the tree). Leaner than shutil.copytree (no xattrs, no folder
    times); the image is ours, so it holds only folders, regular files and symlinks.

    Raises:
        OSError: when a file cannot be copied.
    """
    for entry in os.scandir(src):
        target = os.path.join(dest, entry.name)
        st = entry.stat(follow_symlinks=False)
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), target)
        elif entry.is_dir(follow_symlinks=False):
            os.mkdir(target)
            os.chmod(target, stat.S_IMODE(st.st_mode))
            copy_image(Path(entry.path), Path(target))
        else:
            shutil.copyfile(entry.path, target, follow_symlinks=False)
            os.chmod(target, stat.S_IMODE(st.st_mode))
            os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


def _cleanup(owned: Path | None, cg: cgroups.CgroupSet, name: str) -> None:
    for pid in cg.pids():  # kept processes of a sandbox never closed
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_GRACE_S
    while cg.pids() and time.monotonic() < deadline:
        time.sleep(0.01)
    if owned is not None:
        try:
            shutil.rmtree(owned)
        except FileNotFoundError:
            pass
        except OSError as e:
            log.warning("bwrap sandbox %s: could not remove %s: %s", name, owned, e)
    for failure in cg.remove():
        log.warning("bwrap sandbox %s: could not remove cgroup %s", name, failure)
