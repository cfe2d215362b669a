"""Per-sandbox cgroup v1 groups (pids, memory, cpu) for backends that run plain processes (bwrap).

Each controller's group is created under the calling process's own group of that controller
(`/sys/fs/cgroup/<controller>/<own path>/qaflow/<name>`), so the sandbox stays inside whatever
limits the caller already runs under. `CgroupSet.join(pid)` moves a process in; the caller does
that while the process cannot yet fork (bwrap's `--block-fd`), so all its children are born inside.

Only cgroup v1 is handled; where a controller is not mounted or not writable the caller falls
back to rlimits for it (`CgroupSet.missing`).
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("pids", "memory", "cpu")
PARENT = "qaflow"
CPU_PERIOD_US = 100_000
"""The kernel's default CFS period for a new group; the quota is `cpus` periods."""


def own_paths() -> dict[str, str]:
    """Controller name -> this process's cgroup path, from /proc/self/cgroup (v1 lines only).

    Raises:
        OSError: when /proc/self/cgroup cannot be read.
    """
    paths: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(","):
            if name:
                paths[name] = path
    return paths


def controller_base(controller: str, own: dict[str, str]) -> Path | None:
    """Where this process may create groups for `controller`, or None when it is not mounted (v1)."""
    mount = CGROUP_ROOT / controller
    if not (mount / "cgroup.procs").is_file():
        return None
    nested = mount / own.get(controller, "/").lstrip("/")
    return (nested if (nested / "cgroup.procs").is_file() else mount) / PARENT


@dataclass
class CgroupSet:
    """The groups of one sandbox. `dirs` maps controller -> group folder."""

    name: str
    dirs: dict[str, Path] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    """Controller -> why it is not used (the caller falls back to rlimits)."""
    _procs: list[int] = field(default_factory=list, repr=False)

    def join(self, pid: int) -> None:
        """Move process `pid` into every group of the set.

        Raises:
            OSError: when the kernel refuses (the process is gone, or a group was removed).
        """
        text = str(pid).encode()
        for fd in self._procs:
            os.write(fd, text)

    def pids(self) -> list[int]:
        """The processes in the set's groups (empty without groups)."""
        found: set[int] = set()
        for path in self.dirs.values():
            try:
                text = (path / "cgroup.procs").read_text()
            except OSError:
                continue
            found.update(int(line) for line in text.split() if line.isdigit())
        return sorted(found)

    def oom_kills(self) -> int | None:
        """The memory group's OOM-kill counter, or None without a memory group (or an old kernel)."""
        memory = self.dirs.get("memory")
        if memory is None:
            return None
        try:
            text = (memory / "memory.oom_control").read_text()
        except FileNotFoundError:
            return None
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return None

    def remove(self, wait_s: float = 2.0) -> list[str]:
        """Remove every group; retries briefly while exiting processes leave them.

        Returns the groups that could not be removed, with the reason (empty when all went).
        """
        failures = []
        while self._procs:
            os.close(self._procs.pop())
        for controller, path in list(self.dirs.items()):
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY or time.monotonic() > deadline:
                        failures.append(f"{path}: {e.strerror}")
                        break
                    time.sleep(0.002)
            del self.dirs[controller]
        return failures


def create(name: str, *, memory_bytes: int, pids: int, cpus: float) -> CgroupSet:
    """Create the groups for one sandbox and set its limits; absent controllers go to `missing`.

    `pids` counts every process and thread in the group.
    Never raises for an unusable controller (that is recorded in `missing`).
    """
    cg = CgroupSet(name)
    try:
        own = own_paths()
    except OSError as e:
        cg.missing = dict.fromkeys(CONTROLLERS, f"cannot read /proc/self/cgroup: {e}")
        return cg
    settings: dict[str, list[tuple[str, str]]] = {
        "pids": [("pids.max", str(pids))],
        "memory": [("memory.limit_in_bytes", str(memory_bytes)), ("memory.memsw.limit_in_bytes", str(memory_bytes))],
        "cpu": [("cpu.cfs_quota_us", str(int(cpus * CPU_PERIOD_US)))],
    }
    for controller in CONTROLLERS:
        base = controller_base(controller, own)
        if base is None:
            cg.missing[controller] = f"cgroup v1 {controller} controller not mounted at {CGROUP_ROOT / controller}"
            continue
        if controller == "cpu" and cpus <= 0:
            continue
        path = base / name
        try:
            base.mkdir(exist_ok=True)
            path.mkdir()
            for filename, value in settings[controller]:
                target = path / filename
                if filename.endswith("memsw.limit_in_bytes") and not target.exists():
                    continue
                target.write_text(value)
            cg._procs.append(os.open(path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        except OSError as e:
            cg.missing[controller] = f"cannot set up {path}: {e.strerror or e}"
            if path.is_dir():
                try:
                    path.rmdir()
                except OSError as rm:
                    log.warning("could not remove half-made cgroup %s: %s", path, rm)
            continue
        cg.dirs[controller] = path
    return cg


def prime_async() -> None:
    """Start warming the kernel's cgroup-migration lock in the background; returns at once.

    Moving a process between cgroups takes a global lock whose first writer after an idle spell
    waits for an RCU grace period (about 8 ms here); writers within a grace period of another are
    fast (microseconds). A sandbox calls this when it opens, so the grace period elapses while it
    copies its image and starts bwrap, and its first exec's `join` is quick. The warm-up is a
    no-op migration: a short-lived thread writes its own id into the pids group it is already in.
    """
    threading.Thread(target=_prime, name="qaflow-cgroup-prime", daemon=True).start()


def _prime() -> None:
    try:
        for line in Path("/proc/thread-self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "pids" in controllers.split(","):
                (CGROUP_ROOT / "pids" / path.lstrip("/") / "tasks").write_text(str(threading.get_native_id()))
                return
    except OSError as e:
        log.debug("cgroup migration warm-up failed (harmless, only slower): %s", e)


def reap_stale(prefix: str = "") -> int:
    """Remove empty qaflow groups whose owning process (the pid after `prefix` in the name) is gone.

    Returns how many groups were removed. Groups still holding processes are left alone.
    """
    try:
        own = own_paths()
    except OSError:
        return 0
    removed = 0
    for controller in CONTROLLERS:
        base = controller_base(controller, own)
        if base is None or not base.is_dir():
            continue
        for group in base.iterdir():
            pid_text = group.name.removeprefix(prefix).split("-", 1)[0]
            if not group.name.startswith(prefix) or not pid_text.isdigit() or pid_alive(int(pid_text)):
                continue
            try:
                group.rmdir()
                removed += 1
            except OSError as e:
                log.warning("stale cgroup %s not removed: %s", group, e.strerror)
    return removed


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
