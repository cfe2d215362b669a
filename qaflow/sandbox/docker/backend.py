"""The docker backend: images built with the docker SDK (cached by environment hash), one container per sandbox.

Containers run `sleep infinity` under docker's init and are hardened by default:
`no-new-privileges`; every capability dropped but `CONTAINER_CAPS` (documented there); cpu,
memory (no swap) and pids limits always set (the `Limits` defaults when task.toml is silent);
RLIMIT_FSIZE per file; a storage limit (`--storage-opt size` where the storage driver supports
it, else a watchdog, see `DockerSandbox`); no network unless the spec asks (`runtime_network`: then the
`qaflow-public` bridge, inter-container traffic off;
builds use it too unless `build_network` is off, under the sandbox's memory, cpu and file-size limits); no host path
mounted at all (files travel through the archive API); and the labels `qaflow.run`/`qaflow.task`
so that orphans of a crashed run can be reaped (images carry `qaflow.env_hash`/`qaflow.task`).
`spec.runtime = "runsc"` runs the container under gVisor (registered with dockerd by
`qaflow sandbox install-gvisor`, see `gvisor`). Every exec runs under a small wrapper that
reports its pid (the session id: docker makes each exec a session leader) as the first line of
stderr and its exit code in an end marker; on timeout a second exec stops and kills that session
and every descendant of it (see `qaflow.sandbox.docker.sandbox`).

The backend (check, image build and cache, open, reap) lives here; the sandbox it opens is
`qaflow.sandbox.docker.sandbox`, the shared client and remover `qaflow.sandbox.docker.client`,
and the stream and socket helpers `qaflow.sandbox.docker.streams`. `DockerSandbox` and
`wait_for_removals` are re-exported from here.

Only this package imports the docker SDK at import time;
the registry imports it lazily.

Size (over 500 lines on purpose): the backend's checks, image build and cache, container start under
limits and views, and reaping are one object's steps over one daemon; images and the client live apart.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import threading
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import docker
import docker.errors
import docker.types
import docker.utils.build
import requests

from qaflow.errors import (
    BaseImageUnavailableError,
    BuildError,
    SandboxError,
    SandboxUnavailableError,
    UnsupportedError,
)
from qaflow.sandbox.base import SandboxSpec
from qaflow.sandbox.docker.client import shared_client
from qaflow.sandbox.docker.client import wait_for_removals as wait_for_removals
from qaflow.sandbox.docker.images import (
    BASE_IMAGE,
    BUILD_BASE_HINT,
    AliasTable,
    image_exists,
    load_aliases,
    offline_stages,
    resolve_from,
    rewrite_from,
    without_buildkit_copy_flags,
)
from qaflow.sandbox.docker.sandbox import KILL_GRACE_S as KILL_GRACE_S
from qaflow.sandbox.docker.sandbox import DockerSandbox
from qaflow.sandbox.docker.streams import shutdown_socket
from qaflow.sandbox.docker.thaw import thaw
from qaflow.sandbox.userland import LIST_SCRIPT, Userland

log = logging.getLogger(__name__)

RUN_LABEL = "qaflow.run"
OWNER_LABEL = "qaflow.owner"
"""`<host>:<pid>` of the process that started the container: `reap` without a run id leaves a live one's alone."""
TASK_LABEL = "qaflow.task"
ENV_HASH_LABEL = "qaflow.env_hash"
VIEW_LABEL = "qaflow.view_of"
STAND_INS_LABEL = "qaflow.stand_ins"
"""On an image built on stand-ins: JSON of each missing `FROM` image -> the local image used instead."""
IMAGE_REPO = "qaflow-env"
VIEW_REPO = "qaflow-view"
"""Snapshot images of verifier views; each is removed with its view's container (and by `reap`)."""
DEFAULT_WORKDIR = "/app"
BUILD_LOG_LINES = 50
KEEP_COMMAND = ["sh", "-c", "sleep infinity"]

CONTAINER_CAPS = (
    "CHOWN",  # root chowns files: tar unpacking uploads with their owners, `chown` in solutions
    "DAC_OVERRIDE",  # root reads and writes files it does not own (a verifier as root over an agent user's files)
    "FOWNER",  # chmod/utime on files of other owners (tar restoring modes and mtimes, `chmod` in solutions)
    "FSETID",  # keep setgid/setuid bits when root rewrites such files (dpkg, tar); no-new-privileges stops their use
    "SETUID",  # switch user: `su`/`runuser`, apt dropping to _apt, tasks that run as a non-root user
    "SETGID",  # the same, for groups
    "KILL",  # root signals processes of other users (timeouts and `kill_strays` across users)
    "NET_BIND_SERVICE",  # servers on ports < 1024 (web tasks listen on :80), on the container's own network
    "SYS_CHROOT",  # privilege separation: sshd's chroot("/run/sshd"), build tools, tasks that chroot
    "MKNOD",  # device nodes (a FIFO needs none); the device cgroup still refuses every device docker does not allow
    "NET_RAW",  # ping and raw sockets, on the container's own network (none unless the task asks for one)
    "SETPCAP",  # dropping capabilities from the bounding set (daemons that drop privileges)
    "SETFCAP",  # file capabilities set by packages (dpkg: ping); no-new-privileges keeps them from raising any
    "AUDIT_WRITE",  # login tools (sshd, su, PAM) write audit records
)
"""Capabilities a container keeps: docker's default set, which Harbor's containers run with, so that a
task runs as its authors' harness runs it (issue 41: sshd's privilege separation needs SYS_CHROOT).
With `no-new-privileges`, docker's seccomp profile and no host mount. Never added: SYS_ADMIN,
SYS_PTRACE, NET_ADMIN, SYS_MODULE, and the rest."""
PUBLIC_NETWORK = "qaflow-public"
"""The bridge network every sandbox with network joins (docker's default bridge is never used): created once
with inter-container traffic off (`com.docker.network.bridge.enable_icc=false`), so no task's container can
reach another's (nor any other container on it); traffic out works as on docker's default bridge."""
_ISOLATED = {"com.docker.network.bridge.enable_icc": "false"}
RUNSC_PIDS_BASE = 512
RUNSC_PIDS_PER_TASK = 20
"""Under gVisor the host pids cgroup counts the sandbox's own threads (about 110 at rest) and host
threads per guest process (about 16 each under a fork bomb, measured), so the host limit is
`base + per_task x limits.pids` (past it the whole sandbox dies);
the guest's process count is capped by RLIMIT_NPROC = `limits.pids`, which gVisor enforces for
root too (Linux does not, so runc containers rely on the pids cgroup alone)."""
RUNSC_HINT = "register it with `qaflow sandbox install-gvisor` (apt-get install runsc first)"

_DOCKERFILE_NAME = ".qaflow.Dockerfile"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_HOSTS = (
    b"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n"
    b"ff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n"
)
"""The /etc/hosts docker writes for `--network none`."""


@dataclass(frozen=True)
class _ImageInfo:
    ref: str
    workdir: str
    user: str
    entrypoint: bool = False
    """The image has an ENTRYPOINT of its own, which starts the environment's services (Harbor runs it)."""
    stand_ins: Mapping[str, str] = field(default_factory=dict)
    """Each `FROM` image missing here -> the local image (an alias) the build used instead."""


def _image_info(ref: str, attrs: Mapping[str, Any], stand_ins: Mapping[str, str] | None = None) -> _ImageInfo:
    config = attrs.get("Config") or {}
    workdir = config.get("WorkingDir") or DEFAULT_WORKDIR
    user, entrypoint = config.get("User") or "", bool(config.get("Entrypoint"))
    if stand_ins is None:
        try:
            stand_ins = json.loads((config.get("Labels") or {}).get(STAND_INS_LABEL) or "{}")
        except ValueError:
            stand_ins = {}
    return _ImageInfo(ref=ref, workdir=workdir, user=user, entrypoint=entrypoint, stand_ins=dict(stand_ins or {}))


def _dockerignore(context_dir: Path) -> list[str]:
    path = context_dir / ".dockerignore"
    if not path.is_file():
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildError(f"{path}: cannot read it: {exc}") from exc
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def host_config_args(spec: SandboxSpec, cpus: float, storage: bool) -> dict[str, Any]:
    """`create_host_config` arguments for a sandbox of `spec` (the hardening; see the module doc)."""
    limits = spec.limits
    memory = limits.memory_mb * 1024 * 1024
    fsize = limits.file_size_mb * 1024 * 1024
    ulimits = [docker.types.Ulimit(name="fsize", soft=fsize, hard=fsize)]
    pids = limits.pids
    if spec.runtime == "runsc":
        ulimits.append(docker.types.Ulimit(name="nproc", soft=limits.pids, hard=limits.pids))
        pids = RUNSC_PIDS_BASE + RUNSC_PIDS_PER_TASK * limits.pids
    args: dict[str, Any] = {
        "network_mode": PUBLIC_NETWORK if spec.runtime_network else "none",
        "nano_cpus": int(cpus * 1e9),
        "mem_limit": memory,
        "memswap_limit": memory,
        "pids_limit": pids,
        "ulimits": ulimits,
        "security_opt": ["no-new-privileges"],
        "cap_drop": ["ALL"],
        "cap_add": list(CONTAINER_CAPS),
        "init": True,
    }
    if spec.runtime:
        args["runtime"] = spec.runtime
    if storage and limits.storage_mb is not None:
        args["storage_opt"] = {"size": f"{limits.storage_mb}m"}
    return args


def build_limits(spec: SandboxSpec, cpus: float) -> dict[str, Any]:
    """The `/build` parameters that confine a build's RUN steps as the task's sandbox is confined: its memory
    (no swap), CPUs and file-size limit, and network only when the build has any (`build_network`), on
    `PUBLIC_NETWORK` (no traffic to other containers). docker's legacy builder takes no capability,
    no-new-privileges or pids option: RUN steps keep docker's default capabilities (the set containers
    keep too) and only the build timeout bounds a fork bomb (docs/security.md)."""
    memory = spec.limits.memory_mb * 1024 * 1024
    fsize = spec.limits.file_size_mb * 1024 * 1024
    return {
        "networkmode": PUBLIC_NETWORK if spec.build_network else "none",
        "memory": memory,
        "memswap": memory,
        "cpuperiod": 100_000,
        "cpuquota": int(cpus * 100_000),
        "ulimits": json.dumps([{"Name": "fsize", "Soft": fsize, "Hard": fsize}]),
    }


_public_network_ready = threading.Lock()
_public_network_seen: list[str] = []


def ensure_public_network(client: docker.DockerClient) -> None:
    """Create `PUBLIC_NETWORK` unless it exists (once per process; a concurrent creation is fine).

    Raises:
        SandboxError: it exists without inter-container isolation (made by hand), or cannot be created.
    """
    with _public_network_ready:
        if _public_network_seen:
            return
        api = client.api
        try:
            found = api.networks(names=[PUBLIC_NETWORK])
            if not found:
                try:
                    api.create_network(PUBLIC_NETWORK, driver="bridge", options=_ISOLATED,
                                       labels={"qaflow.network": "public"}, check_duplicate=True)  # fmt: skip
                except docker.errors.APIError as exc:
                    if exc.status_code != 409:  # 409: another process created it meanwhile
                        raise
                found = api.networks(names=[PUBLIC_NETWORK])
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker could not create the network {PUBLIC_NETWORK}: {exc}") from exc
        options = next((n.get("Options") or {} for n in found if n.get("Name") == PUBLIC_NETWORK), {})
        if options.get("com.docker.network.bridge.enable_icc") != "false":
            raise SandboxError(
                f"docker network {PUBLIC_NETWORK} lets containers reach each other (enable_icc is not false); "
                f"remove it (`docker network rm {PUBLIC_NETWORK}`) and qaflow recreates it isolated"
            )
        _public_network_seen.append(PUBLIC_NETWORK)


_runtime_ok: dict[str, str] = {}
_RUNSC_WARNED: set[str] = set()
"""Tasks already warned (once per process) that runsc gives them no network."""


def _check_runtime(runtime: str) -> tuple[bool, str]:
    if runtime in _runtime_ok:
        return True, _runtime_ok[runtime]
    api = shared_client().api
    try:
        registered = api.info().get("Runtimes") or {}
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        return False, f"no Docker daemon answers: {exc}"
    if runtime not in registered:
        return False, f"runtime {runtime!r} is not registered with dockerd ({', '.join(registered)}); {RUNSC_HINT}"
    container_id = None
    try:
        host_config = api.create_host_config(
            network_mode="none", runtime=runtime, init=True, security_opt=["no-new-privileges"], cap_drop=["ALL"]
        )
        container_id = api.create_container(
            BASE_IMAGE,
            ["true"],
            host_config=host_config,
            network_disabled=True,
            labels={RUN_LABEL: "runtime-check", OWNER_LABEL: owner()},
        )["Id"]
        api.start(container_id)
        status = api.wait(container_id, timeout=60)
        logs = api.logs(container_id).decode(errors="replace").strip()[-400:]
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        return False, f"a container does not start under runtime {runtime!r}: {exc}"
    finally:
        if container_id is not None:
            with contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException):
                api.remove_container(container_id, force=True)
    if status.get("StatusCode") != 0:
        return False, f"a container under runtime {runtime!r} exited {status.get('StatusCode')}: {logs}"
    path = (registered.get(runtime) or {}).get("path", runtime)
    reason = f"runtime {runtime} ({path}) starts containers"
    _runtime_ok[runtime] = reason
    return True, reason


class DockerBackend:
    """Builds task images and opens `DockerSandbox`es on the local Docker daemon."""

    name = "docker"
    build_count: ClassVar[int] = 0
    """Images this process has actually built (cache hits do not count)."""
    _images: ClassVar[dict[str, _ImageInfo]] = {}
    _pythons: ClassVar[dict[str, str | None]] = {}
    _userlands: ClassVar[dict[str, Userland | None]] = {}
    _locks: ClassVar[dict[str, threading.Lock]] = {}
    _locks_guard: ClassVar[threading.Lock] = threading.Lock()
    _ncpu: ClassVar[int | None] = None
    _storage_opt: ClassVar[bool | None] = None
    """Whether the daemon's storage driver takes `--storage-opt size` (None: not tried yet)."""

    def __init__(self, client: docker.DockerClient | None = None, aliases: AliasTable | None = None):
        self._client = client
        self._aliases = aliases

    @property
    def client(self) -> docker.DockerClient:
        """The docker client.

        Raises:
            SandboxError: no Docker daemon answers.
        """
        if self._client is None:
            try:
                self._client = shared_client()
            except docker.errors.DockerException as exc:
                raise SandboxError(f"no Docker daemon answers: {exc}") from exc
        return self._client

    @property
    def aliases(self) -> AliasTable:
        if self._aliases is None:
            self._aliases = load_aliases()
        return self._aliases

    @classmethod
    def check(cls) -> tuple[bool, str]:
        """(works, reason): does a daemon answer, and is the offline base image present?"""
        try:
            client = shared_client()
            client.api.ping()
            present = image_exists(client, BASE_IMAGE)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            return False, f"no Docker daemon answers: {exc}"
        if not present:
            return False, f"the offline base image {BASE_IMAGE} is missing: {BUILD_BASE_HINT}"
        return True, f"Docker daemon answers and {BASE_IMAGE} is present"

    @classmethod
    def check_runtime(cls, runtime: str) -> tuple[bool, str]:
        """(works, reason): is `runtime` registered with dockerd, and does a container start under it?

        Starts (and removes) one tiny container from the base image; a success is remembered.
        """
        if runtime in _runtime_ok:
            return True, _runtime_ok[runtime]
        ok, reason = cls.check()
        if not ok:
            return False, reason
        return _check_runtime(runtime)

    # ----- images -----------------------------------------------------------------------------

    def build(self, spec: SandboxSpec) -> str:
        """Build (or find cached) the image for `spec` and return its reference.

        Raises:
            BuildError: the Dockerfile is missing or unreadable, a base image cannot be resolved,
                the build failed (the error carries the log tail) or ran past `build_timeout_sec`.
            SandboxError: the daemon failed.
        """
        return self._image(spec).ref

    def stand_ins(self, spec: SandboxSpec) -> dict[str, str]:
        """Each `FROM` image of `spec` that is missing here -> the local stand-in its (built) image used."""
        return dict(self._image(spec).stand_ins)

    def python_version(self, ref: str) -> str | None:
        """The `python3` version (`3.11`) of the local image `ref`, or None when it has none (one short
        container per image, remembered)."""
        if ref not in self._pythons:
            try:
                out = self.client.containers.run(
                    ref, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], entrypoint="python3",
                    network_disabled=True, remove=True, stdout=True, stderr=False,
                )  # fmt: skip
                text = out.decode("utf-8", "replace").strip() if isinstance(out, bytes) else ""
                self._pythons[ref] = text if re.fullmatch(r"\d+\.\d+", text) else None
            except (docker.errors.DockerException, requests.RequestException):
                self._pythons[ref] = None
        return self._pythons[ref]

    def from_target(self, ref: str) -> str | None:
        """The local image a `FROM ref` builds on here: the image itself, else its stand-in; None when
        neither is present."""
        try:
            return resolve_from(ref, self.client, self.aliases)
        except BaseImageUnavailableError:
            return None

    def userland(self, ref: str) -> Userland | None:
        """The programs on PATH and the Python modules of the local image `ref` (one short container per
        image and process); None when it cannot be listed (no `python3` in it)."""
        if ref not in self._userlands:
            try:
                out = self.client.containers.run(
                    ref, ["-I", "-c", LIST_SCRIPT], entrypoint="python3",
                    network_disabled=True, remove=True, stdout=True, stderr=False,
                )  # fmt: skip
                text = out.decode("utf-8", "replace") if isinstance(out, bytes) else ""
                self._userlands[ref] = Userland.from_json(text)
            except (docker.errors.DockerException, requests.RequestException, ValueError, KeyError):
                self._userlands[ref] = None
        return self._userlands[ref]

    def _image(self, spec: SandboxSpec) -> _ImageInfo:
        if not spec.dockerfile.is_file():
            if not spec.docker_image:
                raise BuildError(f"{spec.dockerfile}: no Dockerfile and no docker_image for task {spec.name}")
            ref = resolve_from(spec.docker_image, self.client, self.aliases)
            used = {spec.docker_image: ref} if ref != spec.docker_image else {}
            return _image_info(ref, self._inspect(ref) or {}, used)
        # An offline run must show that the environment builds without network: it never reuses an
        # image, nor a layer, that a build with network made.
        tag = f"{IMAGE_REPO}:{spec.env_hash[:20]}" + ("" if spec.build_network else "-offline")
        cached = self._images.get(tag)
        if cached is not None:
            return cached
        with self._lock_for(tag):
            cached = self._images.get(tag)
            if cached is not None:
                return cached
            attrs = self._inspect(tag)
            if attrs is None:
                try:
                    self._build(spec, tag)
                except BuildError as exc:
                    if not spec.build_network_guessed or isinstance(exc, BaseImageUnavailableError):
                        raise
                    log.warning("task %s did not build without network (%s); building it with network",
                                spec.name, str(exc).splitlines()[0])  # fmt: skip
                    return self._image(spec.model_copy(update={"build_network": True, "build_network_guessed": False}))
                attrs = self._inspect(tag)
                if attrs is None:
                    raise BuildError(f"docker build of task {spec.name} reported success but {tag} is missing")
                type(self).build_count += 1
            info = _image_info(tag, attrs)
            self._images[tag] = info
            return info

    @classmethod
    def _lock_for(cls, tag: str) -> threading.Lock:
        with cls._locks_guard:
            return cls._locks.setdefault(tag, threading.Lock())

    def _inspect(self, ref: str) -> dict[str, Any] | None:
        try:
            return self.client.api.inspect_image(ref)
        except docker.errors.NotFound:
            return None
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker could not inspect image {ref}: {exc}") from exc

    def _build(self, spec: SandboxSpec, tag: str) -> None:
        """Build `spec.dockerfile` with its FROM lines resolved locally, as `tag`, within the timeout.

        Long on purpose: one image build (context, offline stages, the SDK stream, failure evidence) shares
        its locals.
        """
        try:
            text = spec.dockerfile.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BuildError(f"{spec.dockerfile}: cannot read the Dockerfile: {exc}") from exc
        stand_ins: dict[str, str] = {}

        def resolve(ref: str) -> str:
            local = resolve_from(ref, self.client, self.aliases)
            if local != ref:
                stand_ins[ref] = local
            return local

        rewritten = rewrite_from(text, resolve)
        rewritten = without_buildkit_copy_flags(rewritten, spec.context_dir)
        if not spec.build_network:
            rewritten = offline_stages(rewritten)
        try:
            context = docker.utils.build.tar(
                str(spec.context_dir), exclude=_dockerignore(spec.context_dir), dockerfile=(_DOCKERFILE_NAME, rewritten)
            )
        except OSError as exc:
            raise BuildError(f"{spec.context_dir}: cannot pack the build context: {exc}") from exc
        params = {
            "t": tag,
            "rm": True,
            "forcerm": True,
            "pull": False,
            "dockerfile": _DOCKERFILE_NAME,
            **build_limits(spec, self._cpus(spec.limits.cpus)),
            "labels": json.dumps(
                {ENV_HASH_LABEL: spec.env_hash, TASK_LABEL: spec.name}
                | ({STAND_INS_LABEL: json.dumps(stand_ins, sort_keys=True)} if stand_ins else {})
            ),
        }
        if spec.build_network:
            ensure_public_network(self.client)
        api = self.client.api
        tail: deque[str] = deque(maxlen=BUILD_LOG_LINES)
        timed_out = threading.Event()
        try:
            # The SDK's `build` hides the response, and closing it is the only way to cancel a
            # legacy build on timeout, so post to the same endpoint through the SDK's session.
            response = api._post(
                api._url("/build"),
                data=context,
                params=params,
                headers={"Content-Type": "application/tar"},
                stream=True,
                timeout=None,
            )
            sock = api._get_raw_response_socket(response)
        except docker.errors.APIError as exc:
            context.close()
            raise BuildError(
                f"docker build of task {spec.name} failed: {exc.explanation or exc}", stand_ins=stand_ins
            ) from exc
        except requests.exceptions.RequestException as exc:
            context.close()
            raise SandboxError(f"docker build of task {spec.name}: the daemon failed: {exc}") from exc

        def expire() -> None:
            timed_out.set()
            shutdown_socket(sock)

        watchdog = threading.Timer(spec.build_timeout_sec, expire)
        watchdog.daemon = True
        watchdog.start()
        error: str | None = None
        try:
            for raw_line in response.iter_lines():
                if not raw_line.strip():
                    continue
                try:
                    msg = json.loads(raw_line)
                except json.JSONDecodeError:
                    tail.append(raw_line.decode("utf-8", "replace"))
                    continue
                if "stream" in msg:
                    text = _ANSI.sub("", msg["stream"])  # the legacy builder colours a RUN's stderr
                    tail.extend(line for line in text.rstrip("\n").split("\n") if line.strip())
                if "error" in msg or "errorDetail" in msg:
                    error = msg.get("error") or (msg.get("errorDetail") or {}).get("message") or str(msg)
                    tail.append(error)
        except (requests.exceptions.RequestException, OSError) as exc:
            if not timed_out.is_set():
                raise SandboxError(f"docker build of task {spec.name}: the stream broke: {exc}") from exc
        finally:
            watchdog.cancel()
            response.close()
            context.close()
        if timed_out.is_set():
            raise BuildError(
                f"docker build of task {spec.name} ran past build_timeout_sec={spec.build_timeout_sec:g}",
                "\n".join(tail),
                stand_ins,
            )
        if error is not None:
            raise BuildError(f"docker build of task {spec.name} failed: {error}", "\n".join(tail), stand_ins)

    # ----- sandboxes --------------------------------------------------------------------------

    def open(self, spec: SandboxSpec) -> DockerSandbox:
        """Build (cached) the image for `spec`, start a container from it and return the sandbox.

        Raises:
            BuildError: the image did not build.
            SandboxError: the container could not be created or started.
        """
        info = self._image(spec)
        if spec.runtime == "runsc" and spec.runtime_network and spec.name not in _RUNSC_WARNED:
            _RUNSC_WARNED.add(spec.name)
            log.warning(
                "task %s asks for network, but under runsc registered with --network=none (as install-gvisor does) "
                "it gets none",
                spec.name,
            )
        try:
            container_id = self._create(spec, info)
        except docker.errors.ImageNotFound:
            # The image was removed behind this process's cache: build it again, once.
            self._images.pop(info.ref, None)
            info = self._image(spec)
            try:
                container_id = self._create(spec, info)
            except docker.errors.ImageNotFound as exc:
                raise SandboxError(f"image {info.ref} of task {spec.name} vanished while starting it") from exc
        api = self.client.api
        try:
            api.start(container_id)
        except docker.errors.APIError as exc:
            self._remove(container_id)
            raise SandboxError(f"docker could not start the sandbox of task {spec.name}: {exc}") from exc
        box = DockerSandbox(
            self.client,
            container_id,
            spec.workdir or info.workdir,
            spec,
            image_user=info.user,
            storage_enforced=self._storage_opt is True,
            open_view=self.open_view,
        )
        if not spec.runtime_network:
            box.put("/etc/hosts", _HOSTS)  # sent with the first exec
        return box

    def open_view(self, box: DockerSandbox) -> DockerSandbox:
        """A verifier view of `box` (see `DockerSandbox.verifier_view`): commit it (paused for the
        commit), start a container from that image in `box`'s network namespace, same limits.

        Raises:
            UnsupportedError: under gVisor (its network stack is per sandbox), or the runtime refused
                to join `box`'s network namespace.
            SandboxError: the commit, create or start failed otherwise.
        """
        spec, api = box.spec, self.client.api
        if spec.runtime == "runsc":
            raise UnsupportedError(
                f"under gVisor each sandbox has a network stack of its own, so a verifier view of {spec.name} "
                "cannot reach what its agent left running; run without --runtime runsc to keep services"
            )
        try:
            image = api.commit(box.id, repository=VIEW_REPO, tag=uuid.uuid4().hex[:16], pause=True)["Id"]
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker could not snapshot the sandbox of {spec.name}: {exc}") from exc
        storage = type(self)._storage_opt is True and spec.limits.storage_mb is not None
        host = host_config_args(spec, self._cpus(spec.limits.cpus), storage)
        host["network_mode"] = f"container:{box.id}"
        safe = re.sub(r"[^a-zA-Z0-9_.-]+", "-", spec.name).strip("-.")[:34] or "task"
        container_id: str | None = None
        try:
            container_id = api.create_container(
                image=image,
                entrypoint=["sleep", "infinity"],
                working_dir=box.workdir,
                environment=dict(spec.env),
                labels={RUN_LABEL: spec.run_id, TASK_LABEL: spec.name, VIEW_LABEL: box.id, OWNER_LABEL: owner()},
                host_config=api.create_host_config(**host),
                name=f"qaflow-view-{safe}-{uuid.uuid4().hex[:10]}",
            )["Id"]
            api.start(container_id)
        except docker.errors.APIError as exc:
            if container_id is not None:
                self._remove(container_id)
            with contextlib.suppress(docker.errors.APIError):
                api.remove_image(image, force=True)
            if spec.runtime:
                raise UnsupportedError(
                    f"the {spec.runtime} runtime cannot start a verifier view of {spec.name} in its network "
                    f"namespace: {exc}"
                ) from exc
            raise SandboxError(f"docker could not start a verifier view of {spec.name}: {exc}") from exc
        return DockerSandbox(
            self.client,
            container_id,
            box.workdir,
            spec,
            image_user=box._image_user,
            storage_enforced=storage,
            owned_image=image,
            open_view=self.open_view,
        )

    def _create(self, spec: SandboxSpec, info: _ImageInfo) -> str:
        safe = re.sub(r"[^a-zA-Z0-9_.-]+", "-", spec.name).strip("-.")[:40] or "task"
        storage = self._storage_opt is not False and spec.limits.storage_mb is not None
        try:
            return self._create_container(spec, info, safe, storage=storage)
        except docker.errors.APIError as exc:
            if not storage or "storage-opt" not in str(exc).lower():
                raise
        # This storage driver cannot limit a container's size (overlay2 needs xfs with pquota):
        # remember that, and let DockerSandbox's watchdog bound the writable layer instead.
        log.info("the docker storage driver ignores --storage-opt size here; a watchdog bounds disk use instead")
        type(self)._storage_opt = False
        return self._create_container(spec, info, safe, storage=False)

    def _create_container(self, spec: SandboxSpec, info: _ImageInfo, safe: str, *, storage: bool) -> str:
        """Create the container; APIErrors other than a missing image become SandboxErrors unless
        `storage` (the caller retries without the storage option)."""
        api = self.client.api
        if spec.runtime_network:
            ensure_public_network(self.client)
        try:
            created = api.create_container(
                image=info.ref,
                # As Harbor does: the image's ENTRYPOINT (if any) runs with `sleep infinity` as its
                # command; without one, the keeper is `sleep infinity` itself.
                **({"command": KEEP_COMMAND} if info.entrypoint else {"entrypoint": ["sleep", "infinity"]}),
                working_dir=spec.workdir or info.workdir,
                environment=dict(spec.env),
                labels={RUN_LABEL: spec.run_id, TASK_LABEL: spec.name, OWNER_LABEL: owner()},
                host_config=api.create_host_config(**host_config_args(spec, self._cpus(spec.limits.cpus), storage)),
                # No network: skip docker's network sandbox (~100 ms of each start). runc still gives
                # the container its own network namespace with only loopback; /etc/hosts is then
                # empty, so open() writes docker's usual one (see _HOSTS).
                network_disabled=not spec.runtime_network,
                name=f"qaflow-{safe}-{uuid.uuid4().hex[:10]}",
            )
        except docker.errors.ImageNotFound:
            raise
        except docker.errors.APIError as exc:
            text = str(exc)
            if spec.runtime and "runtime" in text.lower():
                raise SandboxUnavailableError(
                    f"docker has no working runtime {spec.runtime!r} for task {spec.name}: {text}; {RUNSC_HINT}"
                ) from exc
            if storage and "storage-opt" in text.lower():
                raise
            raise SandboxError(f"docker could not create the sandbox of task {spec.name}: {exc}") from exc
        if storage and type(self)._storage_opt is None:
            type(self)._storage_opt = True
        return created["Id"]

    def _cpus(self, wanted: float) -> float:
        """`wanted`, capped at the daemon's CPU count (docker refuses more); asks the daemon once."""
        if wanted <= 1.0:
            return wanted
        ncpu = type(self)._ncpu
        if ncpu is None:
            ncpu = type(self)._ncpu = int(self.client.api.info().get("NCPU") or 1)
        return min(wanted, float(ncpu))

    def _remove(self, container_id: str) -> None:
        with contextlib.suppress(docker.errors.NotFound):
            self.client.api.remove_container(container_id, force=True, v=True)

    @classmethod
    def reap(cls, run_id: str | None = None) -> int:
        """Remove containers labelled `qaflow.run` (`=run_id` when given); return how many. Without a run id,
        a container whose starting process still lives on this host is left alone: another audit or rollout
        running beside the reap is not a crash.

        A classmethod (callable on the class, as `qaflow sandbox reap` does); it uses the process's client.

        Raises:
            SandboxError: no daemon answers, or it failed to list or remove them.
        """
        label = RUN_LABEL if run_id is None else f"{RUN_LABEL}={run_id}"
        api = cls().client.api
        try:
            found = api.containers(all=True, filters={"label": label})
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker could not list containers labelled {label}: {exc}") from exc
        removed, failed = 0, []
        for container in found:
            if run_id is None and owner_alive((container.get("Labels") or {}).get(OWNER_LABEL)):
                continue
            thaw(container["Id"])  # a container frozen from outside can hold the daemon's lock on it (`thaw`)
            try:
                api.remove_container(container["Id"], force=True, v=True)
                removed += 1
            except docker.errors.NotFound:
                continue
            except docker.errors.APIError as exc:
                if exc.status_code == 409:  # its removal is already under way (its owner, or another reap)
                    continue
                failed.append(str(exc))
            except requests.exceptions.RequestException as exc:  # the daemon did not answer for this one
                failed.append(f"{container['Id'][:12]}: docker did not answer ({type(exc).__name__})")
        if failed:
            raise SandboxError(f"docker could not reap {len(failed)} container(s) labelled {label}: {failed[0]}")
        _remove_unused_views(api)
        return removed


def owner() -> str:
    """This process, as the `qaflow.owner` label names it."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_alive(label: str | None) -> bool:
    """Whether the process a `qaflow.owner` label names runs on this host now (False for another host's)."""
    host, _, pid = (label or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_unused_views(api: Any) -> None:
    """Remove snapshot images of verifier views that no container uses any more (a crash left them)."""
    try:
        images = api.images(name=VIEW_REPO)
    except docker.errors.APIError:
        return
    for image in images:
        with contextlib.suppress(docker.errors.APIError):  # in use by a live view: not ours to remove
            api.remove_image(image["Id"], force=False)
