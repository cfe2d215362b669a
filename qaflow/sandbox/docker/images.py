"""Offline images: the debootstrapped base image and the alias table that stands in for a registry.

No registry is assumed. `build_base` makes `qaflow/base:bookworm` from Debian's own packages
(debootstrap with its default mirror) and caches the root tarball; `resolve_from` maps a
Dockerfile's `FROM` reference to a local image, through the alias table when the reference
itself is not present. The docker SDK is imported inside the functions that need it.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs
from pydantic import BaseModel, Field, ValidationError

from qaflow.config_file import read_config_data
from qaflow.errors import BaseImageUnavailableError, ConfigError, SandboxError, SandboxUnavailableError

if TYPE_CHECKING:
    import docker

BASE_IMAGE = "qaflow/base:bookworm"
"""Tag of the offline base image made by `build_base`."""
BASE_LABEL = "qaflow.base"
"""Label on the base image; its value names the suite and package set it was built from."""
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-pytest", "python-is-python3", "procps")
ALIASES_ENV = "QAFLOW_IMAGE_ALIASES"
"""Environment variable naming a TOML or JSON file of extra aliases (pattern -> local image)."""
BUILD_BASE_HINT = "run `qaflow images build-base` to make the offline base image"

DEFAULT_ALIASES: dict[str, str] = {
    "python:*": BASE_IMAGE,
    "ubuntu:*": BASE_IMAGE,
    "debian:*": BASE_IMAGE,
    "buildpack-deps:*": BASE_IMAGE,
}

_BASE_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["/bin/bash"]',
)

Progress = Callable[[str], None]


def _quiet(_msg: str) -> None:
    """Progress sink that drops messages (the default)."""


class AliasTable(BaseModel):
    """Ordered glob patterns (matched against `name:tag`) mapped to local images; the first match wins."""

    aliases: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_ALIASES))

    def match(self, image_ref: str) -> str | None:
        """The image the first matching pattern maps `image_ref` to, or None."""
        candidates = _ref_forms(image_ref)
        for pattern, target in self.aliases.items():
            if any(fnmatch.fnmatchcase(c, pattern) for c in candidates):
                return target
        return None


def _ref_forms(image_ref: str) -> list[str]:
    """`image_ref` as written, without a `docker.io/` or `library/` prefix, and with `:latest` if untagged."""
    forms = [image_ref]
    short = image_ref
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if short.startswith(prefix):
            short = short[len(prefix) :]
    short = short.removeprefix("library/")
    forms.append(short)
    last = short.rsplit("/", 1)[-1]
    if ":" not in last and "@" not in last:
        forms.append(short + ":latest")
    return list(dict.fromkeys(forms))


def load_aliases(path: Path | str | None = None, extra: dict[str, str] | None = None) -> AliasTable:
    """The alias table: `extra`, then the file `path` (or $QAFLOW_IMAGE_ALIASES), then the defaults.

    The file is TOML (`*.toml`) or JSON, either a flat `{pattern: image}` table or one under the
    key `aliases`; a top-level `replace_defaults = true` drops the default entries.

    Raises:
        SandboxError: the file cannot be read or does not hold a pattern -> image table.
    """
    if path is None and os.environ.get(ALIASES_ENV):
        path = os.environ[ALIASES_ENV]
    table: dict[str, str] = dict(extra or {})
    use_defaults = True
    if path is not None:
        path = Path(path)
        try:
            data: Any = read_config_data(path, what="the image alias table")
        except ConfigError as exc:
            raise SandboxError(str(exc)) from exc
        if not isinstance(data, dict):
            raise SandboxError(f"{path}: the image alias table must be a table of pattern -> image")
        use_defaults = not data.pop("replace_defaults", False)
        entries = data.get("aliases", data)
        try:
            parsed = AliasTable(aliases=entries)
        except ValidationError as exc:
            raise SandboxError(f"{path}: the image alias table must map patterns to image names: {exc}") from exc
        for pattern, target in parsed.aliases.items():
            table.setdefault(pattern, target)
    if use_defaults:
        for pattern, target in DEFAULT_ALIASES.items():
            table.setdefault(pattern, target)
    return AliasTable(aliases=table)


def image_exists(client: docker.DockerClient, ref: str) -> bool:
    """Whether `ref` names an image present in the local daemon.

    Raises:
        docker.errors.APIError: the daemon failed to answer.
    """
    import docker.errors

    try:
        client.api.inspect_image(ref)
    except docker.errors.ImageNotFound:
        return False
    except docker.errors.NotFound:
        return False
    return True


def resolve_from(image_ref: str, client: docker.DockerClient, aliases: AliasTable | None = None) -> str:
    """A local image to use for the `FROM image_ref` of a Dockerfile.

    The reference itself when present locally, else the image its first matching alias names
    (which must itself be present). `scratch` is returned unchanged.

    Raises:
        BaseImageUnavailableError: neither the image nor an alias for it is present locally (no registry
            is assumed).
    """
    if image_ref == "scratch" or image_exists(client, image_ref):
        return image_ref
    table = aliases if aliases is not None else load_aliases()
    target = table.match(image_ref)
    if target is None:
        raise BaseImageUnavailableError(
            f"base image {image_ref!r} is missing locally, no registry is reachable, and no image alias matches it; "
            f"add an alias (${ALIASES_ENV}) or {BUILD_BASE_HINT}"
        )
    if image_exists(client, target):
        return target
    raise BaseImageUnavailableError(
        f"base image {image_ref!r} is missing locally and no registry is reachable; "
        f"its alias {target!r} is missing too: {BUILD_BASE_HINT}"
    )


def base_cache_dir() -> Path:
    """Folder holding the cached base root tarball (created on demand)."""
    return Path(platformdirs.user_cache_dir("qaflow")) / "base"


def base_tarball() -> Path:
    """Path of the cached base root tarball."""
    return base_cache_dir() / f"{BASE_SUITE}-minbase.tar"


def _base_label_value() -> str:
    return f"debootstrap minbase {BASE_SUITE} +" + ",".join(BASE_PACKAGES)


def build_base(
    force: bool = False,
    progress: Progress | None = None,
    client: docker.DockerClient | None = None,
) -> str:
    """Make the offline base image `BASE_IMAGE` and return its tag.

    Skips all work when the image exists (unless `force`); re-imports from the cached tarball
    when only the tarball exists; otherwise runs debootstrap (Debian's default mirror), tars
    the root into the cache and imports it.

    Raises:
        SandboxUnavailableError: no Docker daemon answers, or debootstrap/tar are not installed.
        SandboxError: debootstrap, tar or the import failed (the message carries the output tail).
    """
    import docker.errors

    say = progress or _quiet
    if client is None:
        try:
            client = docker.from_env()
        except docker.errors.DockerException as exc:
            raise SandboxUnavailableError(f"no Docker daemon answers: {exc}") from exc
    tarball = base_tarball()
    if not force and image_exists(client, BASE_IMAGE):
        say(f"{BASE_IMAGE} already present")
        return BASE_IMAGE
    if force or not tarball.is_file():
        _debootstrap_tarball(tarball, say)
    else:
        say(f"re-importing {BASE_IMAGE} from the cached {tarball}")
    say(f"importing {tarball} as {BASE_IMAGE}")
    repository, _, tag = BASE_IMAGE.partition(":")
    changes = [*_BASE_CHANGES, f'LABEL {BASE_LABEL}="{_base_label_value()}"']
    try:
        client.api.import_image_from_file(str(tarball), repository=repository, tag=tag, changes=changes)
    except docker.errors.APIError as exc:
        raise SandboxError(f"docker import of {tarball} failed: {exc}") from exc
    if not image_exists(client, BASE_IMAGE):
        raise SandboxError(f"docker import of {tarball} reported no error but {BASE_IMAGE} is not present")
    say(f"{BASE_IMAGE} ready")
    return BASE_IMAGE


def _debootstrap_tarball(tarball: Path, say: Progress) -> None:
    """Debootstrap a minimal root and write it to `tarball` (atomically)."""
    for tool in ("debootstrap", "tar"):
        if shutil.which(tool) is None:
            raise SandboxUnavailableError(f"{tool} is not installed (apt-get install -y {tool})")
    tarball.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=tarball.parent))
    rootfs = work / "rootfs"
    try:
        cmd = [
            "debootstrap",
            "--variant=minbase",
            "--include=" + ",".join(BASE_PACKAGES),
            BASE_SUITE,
            str(rootfs),
        ]
        say("running " + " ".join(cmd) + " (about a minute)")
        _run_streaming(cmd, say)
        partial = tarball.with_suffix(".tar.partial")
        say(f"writing {tarball}")
        _run_streaming(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(partial), "."], say)
        partial.replace(tarball)
    finally:
        _remove_rootfs(work)


def _run_streaming(cmd: list[str], say: Progress) -> None:
    """Run `cmd`, passing each output line to `say`; raise SandboxError with the tail on failure."""
    tail: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            say(line)
            tail = [*tail[-49:], line]
    if proc.returncode != 0:
        raise SandboxError(f"{cmd[0]} failed (exit {proc.returncode}):\n" + "\n".join(tail))


def _mounts_under(root: Path) -> list[str]:
    """Mount points at or below `root` (debootstrap mounts /proc and /sys in its target)."""
    prefix = str(root.resolve())
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == prefix or point.startswith(prefix + "/"):
                found.append(point)
    return found


def _remove_rootfs(work: Path) -> None:
    """Delete a debootstrap work folder, refusing while anything is still mounted inside it."""
    mounts = _mounts_under(work)
    for point in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False)
    still = _mounts_under(work)
    if still:
        raise SandboxError(f"not removing {work}: still mounted inside it: {', '.join(still)}")
    shutil.rmtree(work)


_FROM_RE = re.compile(r"^(?P<lead>\s*FROM\s+(?:--\S+\s+)*)(?P<ref>\S+)(?P<rest>.*)$", re.IGNORECASE)
_ARG_RE = re.compile(r"^\s*ARG\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:=(?P<value>\S*))?\s*$", re.IGNORECASE)
_STAGE_RE = re.compile(r"\s+AS\s+(?P<stage>\S+)", re.IGNORECASE)
_VAR_RE = re.compile(r"\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)")


def rewrite_from(dockerfile_text: str, resolve: Callable[[str], str]) -> str:
    """`dockerfile_text` with each `FROM` image replaced by `resolve(image)`.

    References to earlier build stages and `scratch` are left alone; `$VAR`/`${VAR}` in a
    reference are expanded from the `ARG` defaults declared before the first `FROM`.

    Raises:
        Whatever `resolve` raises (BaseImageUnavailableError for an image that cannot be found).
    """
    args: dict[str, str] = {}
    stages: set[str] = set()
    seen_from = False
    out = []
    for line in dockerfile_text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        arg = _ARG_RE.match(body)
        if arg and not seen_from and arg.group("value") is not None:
            args[arg.group("name")] = arg.group("value").strip("\"'")
        match = _FROM_RE.match(body)
        if match is None:
            out.append(line)
            continue
        seen_from = True
        ref = _VAR_RE.sub(lambda m: args.get(m.group("braced") or m.group("bare"), m.group(0)), match.group("ref"))
        stage = _STAGE_RE.match(match.group("rest"))
        new_ref = ref if ref.lower() in stages or ref == "scratch" else resolve(ref)
        if stage:
            stages.add(stage.group("stage").lower())
        out.append(match.group("lead") + new_ref + match.group("rest") + ending)
    return "".join(out)


_COPY_FLAGS_RE = re.compile(r"^(?P<lead>\s*)(?P<op>COPY|ADD)(?P<args>\s+.*)$", re.IGNORECASE)
_USER_RE = re.compile(r"^\s*USER\s+(?P<user>\S+)", re.IGNORECASE)


def without_buildkit_copy_flags(dockerfile_text: str, context_dir: Path) -> str:
    """`dockerfile_text` for docker's legacy builder (no BuildKit here): `COPY`/`ADD --chmod=MODE`
    becomes the plain instruction followed by `RUN chmod` of what it copied (as root, then back to
    the current USER), and `--link` is dropped (it changes layer reuse, not the result).
    JSON-form and continued instructions are left as they are."""
    out: list[str] = []
    user: str | None = None
    for line in dockerfile_text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if found := _USER_RE.match(body):
            user = found.group("user")
        match = _COPY_FLAGS_RE.match(body)
        if match is None or body.endswith("\\") or "[" in match.group("args").split("--", 1)[0]:
            out.append(line)
            continue
        words = match.group("args").split()
        flags = [w for w in words if w.startswith("--")]
        paths = [w for w in words if not w.startswith("--")]
        mode = next((f.split("=", 1)[1] for f in flags if f.startswith("--chmod=")), None)
        kept = [f for f in flags if not f.startswith(("--chmod=", "--link"))]
        if (mode is None and len(kept) == len(flags)) or len(paths) < 2:
            out.append(line)
            continue
        out.append(f"{match.group('lead')}{match.group('op')} {' '.join([*kept, *paths])}\n")
        if mode is not None:
            out.extend(_chmod_lines(mode, paths[:-1], paths[-1], context_dir, user))
    return "".join(out)


def _chmod_lines(mode: str, sources: list[str], dest: str, context_dir: Path, user: str | None) -> list[str]:
    if len(sources) == 1 and not dest.endswith("/"):
        targets = [dest]
    else:
        targets = [dest.rstrip("/") + "/" + Path(src.rstrip("/")).name for src in sources]
    recursive = any((context_dir / src).is_dir() for src in sources)
    quoted = " ".join(shlex.quote(t) for t in targets)
    run = f"RUN chmod {'-R ' if recursive else ''}{shlex.quote(mode)} {quoted}\n"
    return [run] if user in (None, "root", "0") else ["USER root\n", run, f"USER {user}\n"]


OFFLINE_ARG = "QAFLOW_OFFLINE_BUILD"


def offline_stages(dockerfile_text: str) -> str:
    """`dockerfile_text` with `ARG QAFLOW_OFFLINE_BUILD=1` after every `FROM`: the steps of an offline
    build then never match a layer that a build with network cached (an `apt-get install` that
    worked online must fail offline), while offline builds still share their own layers."""
    out = []
    for line in dockerfile_text.splitlines(keepends=True):
        out.append(line if line.endswith("\n") else line + "\n")
        if _FROM_RE.match(line.rstrip("\r\n")):
            out.append(f"ARG {OFFLINE_ARG}=1\n")
    return "".join(out)
