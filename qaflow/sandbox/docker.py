"""The docker backend: images built with the docker SDK (cached by environment hash), one container per sandbox.

Containers run `sleep infinity` under docker's init, with no network unless the spec asks, cpu,
memory (no swap) and pids limits, `no-new-privileges`, and the labels `qaflow.run`/`qaflow.task`
so that orphans of a crashed run can be reaped. Every exec runs under a one-line wrapper that
reports its pid (the session id: docker makes each exec a session leader) as the first line of
stderr; on timeout a second exec stops and kills that session and every descendant of it.

This is the only module that imports the docker SDK at import time; the registry imports it lazily.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import posixpath
import re
import select
import socket
import struct
import tarfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any, ClassVar, Self

import docker
import docker.errors
import docker.utils.build
import requests

from qaflow.errors import BuildError, SandboxError
from qaflow.sandbox.base import CappedBuffer, ExecResult, SandboxSpec
from qaflow.sandbox.images import (
    BASE_IMAGE,
    BUILD_BASE_HINT,
    AliasTable,
    image_exists,
    load_aliases,
    resolve_from,
    rewrite_from,
)

log = logging.getLogger(__name__)

RUN_LABEL = "qaflow.run"
TASK_LABEL = "qaflow.task"
ENV_HASH_LABEL = "qaflow.env_hash"
IMAGE_REPO = "qaflow-env"
DEFAULT_WORKDIR = "/app"
BUILD_LOG_LINES = 50
KILL_GRACE_S = 2.0
"""After killing a timed-out command, how long to wait for its output stream to end."""

_DOCKERFILE_NAME = ".qaflow.Dockerfile"
_WRAPPER = 'echo $$ >&2; exec "$@"'
"""Prints the exec's pid (a session leader) on stderr, then becomes the command."""
_UNTAR_MARK = "qaflow-untar-failed"
_UNTAR_WRAPPER = (
    f'tar -xf - -C / 2>/dev/null || {{ echo {_UNTAR_MARK} >&2; exit 125; }}; echo $$ >&2; exec "$@" </dev/null'
)
"""`_WRAPPER`, after unpacking the pending puts (a tar on stdin) at /: saves a copy round trip per exec."""
_KILL_SCRIPT = r"""
s=$1; all=" "; i=0
[ "$s" -gt 1 ] 2>/dev/null || exit 2
while [ $i -lt 50 ]; do
  new=
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = "$$" ] && continue
    case "$all" in *" $p "*) continue;; esac
    { read -r st < "$d/stat"; } 2>/dev/null || continue
    set -- ${st##*) }
    hit=
    if [ "$p" = "$s" ] || [ "$3" = "$s" ] || [ "$4" = "$s" ]; then hit=1; fi
    case "$all" in *" $2 "*) hit=1;; esac
    if [ -n "$hit" ]; then kill -STOP "$p" 2>/dev/null; all="$all$p "; new=1; fi
  done
  [ -z "$new" ] && break
  i=$((i+1))
done
for p in $all; do kill -KILL "$p" 2>/dev/null; done
echo "killed:$all"
"""
"""Stops, then kills, the session `$1`, its process group and every descendant (builtins only: no forks)."""
_HOSTS = (
    b"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n"
    b"ff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n"
)
"""The /etc/hosts docker writes for `--network none`."""
_OOM_PROBE = "cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null || cat /sys/fs/cgroup/memory.events"
_OOM_RE = re.compile(rb"^oom_kill (\d+)$", re.MULTILINE)
_STREAM_HEADER = struct.Struct(">BxxxL")

_client_lock = threading.Lock()
_clients: dict[int, docker.DockerClient] = {}


def _client() -> docker.DockerClient:
    """The process's docker client (one per pid, so a forked worker makes its own).

    Raises:
        docker.errors.DockerException: no daemon answers.
    """
    pid = os.getpid()
    with _client_lock:
        client = _clients.get(pid)
        if client is None:
            client = docker.from_env(max_pool_size=64)
            _clients.clear()
            _clients[pid] = client
        return client


_removal_lock = threading.Lock()
_removal_pools: dict[int, ThreadPoolExecutor] = {}
_removals: set[Future[None]] = set()


def _submit_removal(remove: Callable[[], None]) -> None:
    """Run `remove` on the process's background remover (its threads are joined at interpreter exit)."""
    pid = os.getpid()
    with _removal_lock:
        pool = _removal_pools.get(pid)
        if pool is None:
            _removal_pools.clear()
            _removals.clear()
            pool = _removal_pools[pid] = ThreadPoolExecutor(max_workers=4, thread_name_prefix="qaflow-docker-rm")
        try:
            future = pool.submit(remove)
        except RuntimeError:  # the interpreter is shutting down: no new threads, remove here
            future = None
        else:
            _removals.add(future)
    if future is None:
        remove()
    else:
        future.add_done_callback(_removals.discard)


def wait_for_removals(timeout: float | None = None) -> bool:
    """Wait until the containers closed so far are removed; False if some were still pending at `timeout`."""
    with _removal_lock:
        pending = list(_removals)
    _done, not_done = futures_wait(pending, timeout=timeout)
    return not not_done


@dataclass(frozen=True)
class _ImageInfo:
    ref: str
    workdir: str
    user: str


def _image_info(ref: str, attrs: Mapping[str, Any]) -> _ImageInfo:
    config = attrs.get("Config") or {}
    return _ImageInfo(ref=ref, workdir=config.get("WorkingDir") or DEFAULT_WORKDIR, user=config.get("User") or "")


class _UntarFailed(Exception):
    """The image cannot unpack uploads on stdin (no tar): fall back to the archive endpoint."""


def _send_stdin(sock: Any, data: bytes) -> None:
    """Write `data` to an exec's stdin, then half-close it so the process sees EOF."""
    raw = getattr(sock, "_sock", sock)
    try:
        raw.sendall(data)
        raw.shutdown(socket.SHUT_WR)
    except OSError as exc:  # the wrapper's tar died early; its marker line tells the caller
        log.debug("exec stdin closed early: %s", exc)


def _dockerignore(context_dir: Path) -> list[str]:
    path = context_dir / ".dockerignore"
    if not path.is_file():
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildError(f"{path}: cannot read it: {exc}") from exc
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _shutdown(sock: Any) -> None:
    """Shut a (possibly wrapped) socket down so that a reader blocked on it wakes up."""
    raw = getattr(sock, "_sock", sock)
    try:
        raw.shutdown(socket.SHUT_RDWR)
    except OSError as exc:
        log.debug("socket shutdown: %s", exc)


def _close_socket(sock: Any) -> None:
    raw = getattr(sock, "_sock", None)
    sock.close()
    if raw is not None:
        raw.close()


class DockerBackend:
    """Builds task images and opens `DockerSandbox`es on the local Docker daemon."""

    name = "docker"
    build_count: ClassVar[int] = 0
    """Images this process has actually built (cache hits do not count)."""
    _images: ClassVar[dict[str, _ImageInfo]] = {}
    _locks: ClassVar[dict[str, threading.Lock]] = {}
    _locks_guard: ClassVar[threading.Lock] = threading.Lock()
    _ncpu: ClassVar[int | None] = None

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
                self._client = _client()
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
            client = _client()
            client.api.ping()
            present = image_exists(client, BASE_IMAGE)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            return False, f"no Docker daemon answers: {exc}"
        if not present:
            return False, f"the offline base image {BASE_IMAGE} is missing: {BUILD_BASE_HINT}"
        return True, f"Docker daemon answers and {BASE_IMAGE} is present"

    # ----- images -----------------------------------------------------------------------------

    def build(self, spec: SandboxSpec) -> str:
        """Build (or find cached) the image for `spec` and return its reference.

        Raises:
            BuildError: the Dockerfile is missing or unreadable, a base image cannot be resolved,
                the build failed (the error carries the log tail) or ran past `build_timeout_sec`.
            SandboxError: the daemon failed.
        """
        return self._image(spec).ref

    def _image(self, spec: SandboxSpec) -> _ImageInfo:
        if not spec.dockerfile.is_file():
            if not spec.docker_image:
                raise BuildError(f"{spec.dockerfile}: no Dockerfile and no docker_image for task {spec.name}")
            ref = resolve_from(spec.docker_image, self.client, self.aliases)
            return _image_info(ref, self._inspect(ref) or {})
        tag = f"{IMAGE_REPO}:{spec.env_hash[:20]}"
        cached = self._images.get(tag)
        if cached is not None:
            return cached
        with self._lock_for(tag):
            cached = self._images.get(tag)
            if cached is not None:
                return cached
            attrs = self._inspect(tag)
            if attrs is None:
                self._build(spec, tag)
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
        """Build `spec.dockerfile` with its FROM lines resolved locally, as `tag`, within the timeout."""
        try:
            text = spec.dockerfile.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BuildError(f"{spec.dockerfile}: cannot read the Dockerfile: {exc}") from exc
        rewritten = rewrite_from(text, lambda ref: resolve_from(ref, self.client, self.aliases))
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
            "networkmode": "default" if spec.network else "none",
            "labels": json.dumps({ENV_HASH_LABEL: spec.env_hash, TASK_LABEL: spec.name}),
        }
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
            raise BuildError(f"docker build of task {spec.name} failed: {exc.explanation or exc}") from exc
        except requests.exceptions.RequestException as exc:
            context.close()
            raise SandboxError(f"docker build of task {spec.name}: the daemon failed: {exc}") from exc

        def expire() -> None:
            timed_out.set()
            _shutdown(sock)

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
                    tail.extend(line for line in msg["stream"].rstrip("\n").split("\n") if line.strip())
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
            )
        if error is not None:
            raise BuildError(f"docker build of task {spec.name} failed: {error}", "\n".join(tail))

    # ----- sandboxes --------------------------------------------------------------------------

    def open(self, spec: SandboxSpec) -> DockerSandbox:
        """Build (cached) the image for `spec`, start a container from it and return the sandbox.

        Raises:
            BuildError: the image did not build.
            SandboxError: the container could not be created or started.
        """
        info = self._image(spec)
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
        box = DockerSandbox(self.client, container_id, info.workdir, spec, image_user=info.user)
        if not spec.network:
            box.put("/etc/hosts", _HOSTS)  # sent with the first exec
        return box

    def _create(self, spec: SandboxSpec, info: _ImageInfo) -> str:
        api = self.client.api
        limits = spec.limits
        memory = limits.memory_mb * 1024 * 1024
        host_config = api.create_host_config(
            network_mode="bridge" if spec.network else "none",
            nano_cpus=int(self._cpus(limits.cpus) * 1e9),
            mem_limit=memory,
            memswap_limit=memory,
            pids_limit=limits.pids,
            security_opt=["no-new-privileges"],
            init=True,
        )
        safe = re.sub(r"[^a-zA-Z0-9_.-]+", "-", spec.name).strip("-.")[:40] or "task"
        try:
            created = api.create_container(
                image=info.ref,
                entrypoint=["sleep", "infinity"],
                working_dir=info.workdir,
                environment=dict(spec.env),
                labels={RUN_LABEL: spec.run_id, TASK_LABEL: spec.name},
                host_config=host_config,
                # No network: skip docker's network sandbox (~100 ms of each start). runc still gives
                # the container its own network namespace with only loopback; /etc/hosts is then
                # empty, so open() writes docker's usual one (see _HOSTS).
                network_disabled=not spec.network,
                name=f"qaflow-{safe}-{uuid.uuid4().hex[:10]}",
            )
        except docker.errors.ImageNotFound:
            raise
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker could not create the sandbox of task {spec.name}: {exc}") from exc
        return created["Id"]

    def _cpus(self, wanted: float) -> float:
        """`wanted`, capped at the daemon's CPU count (docker refuses more); asks the daemon once."""
        if wanted <= 1.0:
            return wanted
        if type(self)._ncpu is None:
            type(self)._ncpu = int(self.client.api.info().get("NCPU") or 1)
        return min(wanted, float(type(self)._ncpu))

    def _remove(self, container_id: str) -> None:
        with contextlib.suppress(docker.errors.NotFound):
            self.client.api.remove_container(container_id, force=True, v=True)

    @classmethod
    def reap(cls, run_id: str | None = None) -> int:
        """Remove containers labelled `qaflow.run` (`=run_id` when given); return how many.

        A classmethod (callable on the class, as `qaflow sandbox reap` does); it uses the process's client.

        Raises:
            SandboxError: no daemon answers, or it failed to list or remove them.
        """
        label = RUN_LABEL if run_id is None else f"{RUN_LABEL}={run_id}"
        api = cls().client.api
        try:
            found = api.containers(all=True, filters={"label": label})
            removed = 0
            for container in found:
                try:
                    api.remove_container(container["Id"], force=True, v=True)
                    removed += 1
                except docker.errors.NotFound:
                    continue
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker could not reap containers labelled {label}: {exc}") from exc
        return removed


class DockerSandbox:
    """One running container. Use as a context manager; `close()` removes it."""

    def __init__(
        self, client: docker.DockerClient, container_id: str, workdir: str, spec: SandboxSpec, image_user: str = ""
    ):
        self.client = client
        self.id = container_id
        self.workdir = workdir
        self.spec = spec
        self._image_user = image_user
        self._closed = False
        self._oom_kills = 0
        self._pending: tarfile.TarFile | None = None
        self._pending_buf = io.BytesIO()
        self._pending_lock = threading.Lock()

    # ----- exec ---------------------------------------------------------------------------------

    def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        user: str | int | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        """Run `cmd` (a string goes through `sh -c`) and return its result, whatever its exit code.

        On timeout the command's session and all its descendants are killed (`timed_out=True`).
        Output beyond `limits.output_bytes` per stream is dropped (and flagged), never held.

        Raises:
            SandboxError: the sandbox is closed or the command could not be started.
        """
        self._require_open()
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else [str(a) for a in cmd]
        if not argv:
            raise SandboxError("exec: empty command")
        upload = None
        if self._pending is not None:
            if self._runs_as_root(user):
                upload = self._take_pending()
            else:
                self._flush()
        try:
            return self._run(argv, upload, timeout=timeout, env=env, user=user, cwd=cwd)
        except _UntarFailed:
            assert upload is not None
            self._put_archive(upload)
            return self._run(argv, None, timeout=timeout, env=env, user=user, cwd=cwd)
        except SandboxError:
            if upload is not None:  # the exec never started: do not lose the files it carried
                with contextlib.suppress(SandboxError):
                    self._put_archive(upload)
            raise

    def _run(
        self,
        argv: list[str],
        upload: bytes | None,
        *,
        timeout: float | None,
        env: Mapping[str, str] | None,
        user: str | int | None,
        cwd: str | None,
    ) -> ExecResult:
        """One exec of `argv` under the wrapper; `upload` (a tar) is first unpacked at / from its stdin."""
        api = self.client.api
        start = time.monotonic()
        wrapper = _WRAPPER if upload is None else _UNTAR_WRAPPER
        try:
            exec_id = api.exec_create(
                self.id,
                ["sh", "-c", wrapper, "sh", *argv],
                stdin=upload is not None,
                environment=dict(env) if env else None,
                user=str(user) if user is not None else "",
                workdir=self._abs(cwd) if cwd else None,
            )["Id"]
            sock = api.exec_start(exec_id, socket=True)
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker could not run {argv!r} in {self.spec.name}: {exc}") from exc
        cap = self.spec.limits.output_bytes
        reader = _FrameReader(CappedBuffer(cap), CappedBuffer(cap))
        timed_out = False
        try:
            if upload is not None:
                _send_stdin(sock, upload)
            deadline = None if timeout is None else start + timeout
            if not self._pump(sock, reader, deadline):
                timed_out = True
                self._kill_tree(reader.pid)
                self._pump(sock, reader, time.monotonic() + KILL_GRACE_S)
        finally:
            _close_socket(sock)
        if reader.untar_failed:
            raise _UntarFailed()
        exit_code = self._exit_code(exec_id, wait=not timed_out)
        duration = time.monotonic() - start
        oom = not timed_out and exit_code != 0 and self._oom_happened(exit_code)
        stdout, stderr = reader.stdout.text(), reader.stderr.text()
        if reader.pid is None and exit_code in (126, 127) and not timed_out:
            # The runtime could not start the wrapper (e.g. the pids limit is exhausted by the
            # task's own processes) and wrote why on stdout. It is still the task's result.
            stdout, stderr = "", stdout + stderr
        return ExecResult(
            exit_code=exit_code,
            stdout=stdout,
            stderr=stderr,
            timed_out=timed_out,
            duration_s=duration,
            stdout_truncated=reader.stdout.truncated,
            stderr_truncated=reader.stderr.truncated,
            oom_killed=oom,
        )

    def _runs_as_root(self, user: str | int | None) -> bool:
        name = str(user) if user is not None else self._image_user
        return name.split(":", 1)[0] in ("", "0", "root")

    @staticmethod
    def _pump(sock: Any, reader: _FrameReader, deadline: float | None) -> bool:
        """Feed the exec's multiplexed stream to `reader` until it ends (True) or `deadline` passes (False)."""
        recv = getattr(sock, "recv", None) or sock.read
        poller = select.poll()  # not select(): a busy pool can hold file descriptors above FD_SETSIZE
        poller.register(sock.fileno(), select.POLLIN | select.POLLPRI)
        while True:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                return False
            if not poller.poll(None if wait is None else wait * 1000):
                continue
            try:
                chunk = recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as exc:
                log.warning("exec stream broke: %s", exc)
                return True
            if not chunk:
                return True
            reader.feed(chunk)

    def _exit_code(self, exec_id: str, *, wait: bool) -> int:
        """The exec's exit code; waits briefly for the daemon to record it. -1 when unknown."""
        api = self.client.api
        for attempt in range(40 if wait else 3):
            info = api.exec_inspect(exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            time.sleep(0.005 * (attempt + 1) if attempt < 10 else 0.05)
        return -1

    def _kill_tree(self, pid: int | None) -> None:
        """Kill the timed-out command's session and descendants; restart the container if that fails."""
        api = self.client.api
        if pid is not None and pid > 1:
            try:
                kill_id = api.exec_create(self.id, ["sh", "-c", _KILL_SCRIPT, "qaflow-kill", str(pid)], user="0")["Id"]
                output = api.exec_start(kill_id)
                if api.exec_inspect(kill_id).get("ExitCode") == 0:
                    return
                log.warning("kill of pid %s in %s failed: %r; restarting the container", pid, self.id[:12], output)
            except docker.errors.APIError as exc:
                log.warning("kill of pid %s in %s failed: %s; restarting the container", pid, self.id[:12], exc)
        else:
            log.warning("no pid reported by the timed-out exec in %s; restarting the container", self.id[:12])
        try:
            api.restart(self.id, timeout=0)
        except docker.errors.APIError as exc:
            raise SandboxError(f"could not kill a timed-out command in {self.spec.name}: {exc}") from exc

    def _oom_happened(self, exit_code: int) -> bool:
        """Whether the container's memory cgroup OOM-killed something since the last check."""
        count = self._host_oom_count()
        if count is None:
            if exit_code != 137:
                return False
            count = self._exec_oom_count()
            if count is None:
                return False
        happened = count > self._oom_kills
        self._oom_kills = count
        return happened

    def _host_oom_count(self) -> int | None:
        """oom_kill counter read from the host's cgroup files (a local daemon), else None."""
        candidates = (
            f"/sys/fs/cgroup/memory/docker/{self.id}/memory.oom_control",
            f"/sys/fs/cgroup/system.slice/docker-{self.id}.scope/memory.events",
            f"/sys/fs/cgroup/docker/{self.id}/memory.events",
        )
        for path in candidates:
            try:
                data = Path(path).read_bytes()
            except OSError:
                continue
            found = _OOM_RE.search(data)
            if found:
                return int(found.group(1))
        return None

    def _exec_oom_count(self) -> int | None:
        """oom_kill counter read from inside the container, else None."""
        api = self.client.api
        try:
            probe = api.exec_create(self.id, ["sh", "-c", _OOM_PROBE], user="0")["Id"]
            data = api.exec_start(probe)
        except docker.errors.APIError as exc:
            log.warning("could not read the OOM counter of %s: %s", self.id[:12], exc)
            return None
        found = _OOM_RE.search(data if isinstance(data, bytes) else b"")
        return int(found.group(1)) if found else None

    # ----- files --------------------------------------------------------------------------------

    def put(self, path: str, data: bytes | Path) -> None:
        """Write bytes to the file `path`, or copy a host file or folder there; parents are created.

        The content is read now but sent with the next `exec` (unpacked from its stdin before the
        command starts, which saves a ~40 ms copy round trip) or before the next `get`/`get_dir`;
        a copy docker refuses is reported there.

        Raises:
            FileNotFoundError: `data` names a host path that does not exist.
            SandboxError: the sandbox is closed.
        """
        self._require_open()
        target = self._abs(path)
        arcname = target.lstrip("/")
        if not arcname:
            raise SandboxError("put: refusing to overwrite /")
        if not isinstance(data, bytes | bytearray | memoryview):
            source = Path(data)
            if not source.exists() and not source.is_symlink():
                raise FileNotFoundError(f"put: no such host file or folder: {source}")
        with self._pending_lock:
            if self._pending is None:
                self._pending_buf = io.BytesIO()
                # Stays open across puts, closed by _take_pending.
                self._pending = tarfile.open(fileobj=self._pending_buf, mode="w")  # noqa: SIM115
            tar = self._pending
            if isinstance(data, bytes | bytearray | memoryview):
                blob = bytes(data)
                info = tarfile.TarInfo(arcname)
                info.size = len(blob)
                info.mode = 0o644
                info.mtime = int(time.time())
                tar.addfile(info, io.BytesIO(blob))
            else:
                tar.add(str(source), arcname=arcname, recursive=True, filter=_as_root)

    def _take_pending(self) -> bytes | None:
        """The tar of the puts not yet sent, and forget them."""
        with self._pending_lock:
            if self._pending is None:
                return None
            self._pending.close()
            data = self._pending_buf.getvalue()
            self._pending = None
            self._pending_buf = io.BytesIO()
            return data

    def _flush(self) -> None:
        """Send the pending puts now (before a read, or an exec that does not run as root)."""
        data = self._take_pending()
        if data is not None:
            self._put_archive(data)

    def _put_archive(self, data: bytes) -> None:
        try:
            self.client.api.put_archive(self.id, "/", data)
        except docker.errors.APIError as exc:
            raise SandboxError(f"could not copy files into {self.spec.name}: {exc}") from exc

    def get(self, path: str) -> bytes:
        """Read the file `path` (a symlink is followed once).

        Raises:
            FileNotFoundError: there is no such file.
            IsADirectoryError: `path` is a folder.
            SandboxError: the sandbox is closed or docker failed.
        """
        self._require_open()
        self._flush()
        target = self._abs(path)
        for _ in range(2):
            chunks, stat = self._archive(target)
            if stat.get("mode", 0) & (1 << 31):
                raise IsADirectoryError(f"{target} is a folder in {self.spec.name}")
            with tarfile.open(fileobj=_ChunkReader(chunks), mode="r|") as tar:
                member = tar.next()
                if member is not None and member.isfile():
                    extracted = tar.extractfile(member)
                    assert extracted is not None
                    return extracted.read()
            link = stat.get("linkTarget")
            if member is None or not member.issym() or not link:
                raise SandboxError(f"{target} in {self.spec.name} is not a regular file")
            target = link
        raise SandboxError(f"{path} in {self.spec.name}: a symlink to a symlink")

    def get_dir(self, path: str, dest: Path) -> None:
        """Copy the folder `path` into the host folder `dest` (created); unsafe links are skipped, with a warning.

        Raises:
            FileNotFoundError: there is no such folder.
            NotADirectoryError: `path` is not a folder.
            SandboxError: the sandbox is closed or docker failed.
        """
        self._require_open()
        self._flush()
        target = self._abs(path)
        chunks, stat = self._archive(target)
        if not stat.get("mode", 0) & (1 << 31):
            raise NotADirectoryError(f"{target} is not a folder in {self.spec.name}")
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=_ChunkReader(chunks), mode="r|") as tar:
            for member in tar:
                _, _, rest = member.name.partition("/")
                if not rest:
                    continue
                member.name = rest
                try:
                    tar.extract(member, dest, filter="data")
                except tarfile.FilterError as exc:
                    log.warning("get_dir %s: skipped %s: %s", target, rest, exc)

    def _archive(self, target: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        try:
            return self.client.api.get_archive(self.id, target)
        except docker.errors.NotFound as exc:
            raise FileNotFoundError(f"{target}: no such file in {self.spec.name}") from exc
        except docker.errors.APIError as exc:
            raise SandboxError(f"could not copy {target} out of {self.spec.name}: {exc}") from exc

    # ----- lifecycle ----------------------------------------------------------------------------

    def close(self, wait: bool = False) -> None:
        """Remove the container (force: whatever runs in it is killed). Idempotent.

        Docker takes ~50 ms to kill and remove a container, so by default the removal runs on a
        background remover and `close` returns at once: the sandbox is unusable from then on, the
        interpreter waits for pending removals at exit, `wait_for_removals()` waits for them now,
        and `reap` removes any that a crash left behind. `wait=True` removes it before returning.

        Raises:
            SandboxError: (wait=True) docker failed to remove it; it keeps its qaflow.run label for `reap`.
        """
        if self._closed:
            return
        self._closed = True
        self._pending = None
        if wait:
            self._remove()
        else:
            _submit_removal(self._remove_or_warn)

    def _remove(self) -> None:
        try:
            self.client.api.remove_container(self.id, force=True, v=True)
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:
            if "already in progress" in str(exc):
                return
            raise SandboxError(f"could not remove the sandbox of {self.spec.name} ({self.id[:12]}): {exc}") from exc

    def _remove_or_warn(self) -> None:
        try:
            self._remove()
        except SandboxError as exc:
            log.warning("%s (left for `qaflow sandbox reap`)", exc)
        except requests.exceptions.RequestException as exc:
            log.warning("could not remove container %s: %s (left for `qaflow sandbox reap`)", self.id[:12], exc)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _require_open(self) -> None:
        if self._closed:
            raise SandboxError(f"the sandbox of {self.spec.name} is closed")

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workdir, str(PurePosixPath(path))))


class _FrameReader:
    """Demultiplexes docker's stdout/stderr frames into two capped buffers.

    The first stderr line is the wrapper's pid report; it is taken out of the stream.
    """

    def __init__(self, stdout: CappedBuffer, stderr: CappedBuffer):
        self.stdout = stdout
        self.stderr = stderr
        self.pid: int | None = None
        self.untar_failed = False
        self._pending = bytearray()
        self._pid_line: bytearray | None = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._pending += chunk
        view = self._pending
        offset = 0
        while len(view) - offset >= _STREAM_HEADER.size:
            kind, size = _STREAM_HEADER.unpack_from(view, offset)
            end = offset + _STREAM_HEADER.size + size
            if end > len(view):
                break
            payload = bytes(view[offset + _STREAM_HEADER.size : end])
            offset = end
            if kind == 2:
                self._stderr(payload)
            else:
                self.stdout.write(payload)
        del self._pending[:offset]

    def _stderr(self, payload: bytes) -> None:
        if self._pid_line is None:
            self.stderr.write(payload)
            return
        newline = payload.find(b"\n")
        if newline < 0:
            self._pid_line += payload
            if len(self._pid_line) > 32:
                self._give_up_pid()
            return
        self._pid_line += payload[:newline]
        line, self._pid_line = bytes(self._pid_line), None
        if line.strip().isdigit():
            self.pid = int(line)
        elif line.strip() == _UNTAR_MARK.encode():
            self.untar_failed = True
        else:
            self.stderr.write(line + b"\n")
        if payload[newline + 1 :]:
            self.stderr.write(payload[newline + 1 :])

    def _give_up_pid(self) -> None:
        assert self._pid_line is not None
        self.stderr.write(bytes(self._pid_line))
        self._pid_line = None


class _ChunkReader(io.RawIOBase):
    """A read-only file over an iterator of byte chunks (the SDK's archive stream)."""

    def __init__(self, chunks: Iterator[bytes]):
        self._chunks = iter(chunks)
        self._buf = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not len(self._buf):
            try:
                self._buf = memoryview(next(self._chunks))
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info
