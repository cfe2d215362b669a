"""Thaw a container that was paused from outside qaflow (`docker pause`, an operator, a fault) before removing it.

A `docker exec` that starts while its container is being frozen can hang inside the daemon with the container's
lock held (seen with docker 20.10 and containerd's runc shim): from then on every call on that container (inspect,
unpause, remove) waits forever, and a run that reaps it would hang with it. Writing the cgroup's freezer file
thaws the processes behind docker's back; the stuck exec then finishes and the daemon lets go of the container.
Thawing a container that is not frozen changes nothing. Only possible where this process can write the host's
cgroup files (root beside the daemon); elsewhere nothing is done and the removal is left to time out as before.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")


def freezer_files(container_id: str, root: Path = CGROUP_ROOT) -> list[tuple[Path, str]]:
    """The freezer files of the container's cgroup that exist here, each with the text that thaws it (cgroup v1's
    `freezer.state`, v2's `cgroup.freeze`, under the cgroupfs and systemd drivers' folder names)."""
    folders = [
        (root / "freezer" / "docker" / container_id, "freezer.state", "THAWED"),
        (root / "freezer" / "system.slice" / f"docker-{container_id}.scope", "freezer.state", "THAWED"),
        (root / "docker" / container_id, "cgroup.freeze", "0"),
        (root / "system.slice" / f"docker-{container_id}.scope", "cgroup.freeze", "0"),
    ]
    return [(folder / name, thawed) for folder, name, thawed in folders if (folder / name).is_file()]


def thaw(container_id: str, root: Path = CGROUP_ROOT) -> bool:
    """Thaw the container's cgroup if it is frozen; True when one was frozen and is thawed now."""
    thawed_one = False
    for path, thawed in freezer_files(container_id, root):
        try:
            state = path.read_text().strip()
            if state in ("FROZEN", "FREEZING", "1"):
                path.write_text(thawed)
                thawed_one = True
                log.warning("container %s was frozen (paused from outside qaflow): thawed it", container_id[:12])
        except OSError as exc:
            log.debug("could not thaw %s through %s: %s", container_id[:12], path, exc)
    return thawed_one
