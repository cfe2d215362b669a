"""Whether the bwrap backend can honour a Dockerfile's `FROM`: it runs on the host's own root, so it only
reproduces an image whose userland is the host's.

Reproduced: `scratch`-free images of the host's distribution release (`debian:12`, `debian:bookworm-slim`
on a Debian 12 host), `python:X.Y[.Z][-variant]` where X.Y is the Python that bwrap sandboxes run (the
host interpreter's), and qaflow's own offline base. Anything else (another Python, another distribution
or release, a language image such as `node:20` or `golang:1.22`, a `python:3` whose version is not
pinned) is declined with what differs: a task judged on a userland it was not written for gets verdicts
that belong to the machine, not to the task.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

OS_RELEASE = Path("/etc/os-release")
OWN_IMAGES = ("qaflow/base",)
_PYTHON_TAG = re.compile(r"(?P<version>\d+(?:\.\d+)*)(?:[-.](?P<variant>[\w.-]+))?")


@functools.cache
def host_release() -> tuple[str, frozenset[str]]:
    """The host's distribution id (`debian`) and the names of its release (`12`, `bookworm`)."""
    fields: dict[str, str] = {}
    try:
        for line in OS_RELEASE.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                fields[key.strip()] = value.strip().strip("\"'")
    except OSError:
        return "", frozenset()
    names = {fields.get("VERSION_ID", ""), fields.get("VERSION_CODENAME", "")} - {""}
    return fields.get("ID", ""), frozenset(names)


def _split(ref: str) -> tuple[str, str]:
    """(`name` without registry `docker.io/` or `library/`, `tag`), `latest` when untagged; digests dropped."""
    ref = ref.split("@", 1)[0]
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        ref = ref.removeprefix(prefix)
    ref = ref.removeprefix("library/")
    name, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:
        return ref, "latest"
    return name, tag


def mismatch(ref: str | None) -> str | None:
    """Why the host's root cannot stand for the image `ref` (None: it can, or there is no FROM)."""
    if not ref:
        return None
    name, tag = _split(ref)
    if name.startswith(OWN_IMAGES):
        return None
    host_python = f"{sys.version_info.major}.{sys.version_info.minor}"
    distro, release = host_release()
    host = f"{distro} {'/'.join(sorted(release))}".strip() or "the host's distribution"
    if name == "python":
        m = _PYTHON_TAG.fullmatch(tag)
        version = m.group("version") if m else ""
        if version.count(".") < 1:
            return f"the image's Python is not pinned to a version ({ref}); bwrap runs the host's Python {host_python}"
        if ".".join(version.split(".")[:2]) != host_python:
            return f"the image has Python {version} ({ref}); bwrap sandboxes run the host's Python {host_python}"
        variant = (m.group("variant") or "") if m else ""
        other = [w for w in re.split(r"[-.]", variant) if w.isalpha() and w not in ("slim",) and w not in release]
        if other:
            return f"the image is built on {other[0]} ({ref}); bwrap sandboxes run on {host}"
        return None
    if name == distro and distro:
        release_tag = tag.removesuffix("-slim")
        if release_tag in release or release_tag.split(".")[0] in release:
            return None
    return f"the image {ref} is not the host's userland; bwrap sandboxes run on {host} with Python {host_python}"
