"""One docker sandbox: a running container, its execs (with tree-kill timeouts and OOM detection) and file copies.

Every exec runs under a small wrapper that reports its pid (the session id: docker makes each
exec a session leader) as the first line of stderr and an end marker with the exit code as the
last (see `_wrapper`); on timeout a second exec stops and kills that session and every
descendant of it. Puts are batched into a tar that the next exec unpacks from
its stdin. `close` removes the container on the process's background remover.

While an exec runs longer than 0.2 s a watchdog (`StorageWatch`) checks that the container is
still running (under gVisor a sandbox killed whole, e.g. by the OOM killer, leaves the exec's
stream open: the watchdog ends it and reports `sandbox_died`) and, where the storage driver does
not enforce `limits.storage_mb`, measures the writable layer (its upper folder when this host
can read it, else docker's `SizeRw`): an exec that pushes it past the limit is stopped with
every other process of the container (`storage_exceeded`).

`kill_strays` kills every process of the container but docker's init and the `sleep` keeper;
`exec(..., kill_strays_after=True)` does the same inside the exec's own wrapper, the moment the
command ends (no extra exec, and no window in which a leftover process could still write).

Size (over 500 lines on purpose): one class, the `Sandbox` protocol over one container; its exec, copy,
settle and kill paths share the container's state and the wrapper's protocol, so they stay together
(stream decoding is `streams`, the client and remover `client`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import posixpath
import re
import shlex
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any, Self

import docker
import docker.errors
import requests

from qaflow.errors import SandboxError, UnsupportedError
from qaflow.sandbox.base import (
    RESTORE_PATH,
    SAVE_PATH,
    SHELL,
    SYSTEM_TOOLS,
    CappedBuffer,
    ExecResult,
    SandboxSpec,
    StorageWatch,
    settled_exec,
    tree_usage,
)
from qaflow.sandbox.docker.client import submit_removal
from qaflow.sandbox.docker.streams import (
    UNTAR_MARK,
    ChunkReader,
    FrameReader,
    close_socket,
    pump,
    send_stdin,
    shutdown_socket,
)
from qaflow.sandbox.docker.thaw import thaw

log = logging.getLogger(__name__)

KILL_GRACE_S = 2.0
_NONE_FOUND = 3
_READ_FIRST = (
    SYSTEM_TOOLS + '[ -d "$1" ] && [ ! -L "$1" ] && cd -- "$1" || exit 3; shift; for f; do '
    'if [ -f "$f" ] && [ ! -L "$f" ]; then printf "%s\\n" "$f"; exec cat -- "$f"; fi; done; exit 3'
)
"""Prints the name of the first argument after the folder that is a regular file there, then the file."""
"""After killing a timed-out command, how long to wait for its output stream to end."""
KILL_TIMEOUT_S = 60.0
"""How long `kill_strays` (and what it runs after) may take."""
INTERNAL_OUTPUT_BYTES = 64 * 1024
"""Output kept of qaflow's own execs (process scans, reading the reward) however small `Limits.output_bytes` is."""

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
_KEEPER = r"""
_qme=$$; _qpp=$PPID; _qkeep=; _qkst=
for _qd in /proc/[0-9]*; do
  _qp=${_qd#/proc/}
  [ "$_qp" = 1 ] && continue
  { read -r _qst < "$_qd/stat"; } 2>/dev/null || continue
  set -- ${_qst##*) }
  [ "$2" = 1 ] || continue
  if [ -z "$_qkeep" ] || [ "${20}" -lt "$_qkst" ] || { [ "${20}" -eq "$_qkst" ] && [ "$_qp" -lt "$_qkeep" ]; }; then
    _qkeep=$_qp; _qkst=${20}
  fi
done
"""
"""Finds the keeper (`$_qkeep`): init's child with the earliest start time (then the lowest pid): it
started with the container, before any exec, and anything orphaned later is younger."""
_ALIVE = (
    _KEEPER
    + r"""
_qk=0
for _qd in /proc/[0-9]*; do
  _qp=${_qd#/proc/}
  case " 1 $_qkeep $_qme $_qpp " in *" $_qp "*) continue;; esac
  { read -r _qst < "$_qd/stat"; } 2>/dev/null || continue
  set -- ${_qst##*) }
  [ "$1" = Z ] && continue
  _qk=$((_qk+1))
done
echo "qaflow-alive:$_qk"
"""
)
"""Counts (`$_qk`) the processes running in the container but docker's init, the keeper, the shell
itself and its parent, zombies aside; kills nothing."""
_STRAYS = (
    _KEEPER
    + r"""
_qall=" "; _qk=0; _qi=0
while [ $_qi -lt 100 ]; do
  _qnew=
  for _qd in /proc/[0-9]*; do
    _qp=${_qd#/proc/}
    case " 1 $_qkeep $_qme $_qpp " in *" $_qp "*) continue;; esac
    case "$_qall" in *" $_qp "*) continue;; esac
    { read -r _qst < "$_qd/stat"; } 2>/dev/null || continue
    set -- ${_qst##*) }
    [ "$1" = Z ] && continue
    kill -STOP "$_qp" 2>/dev/null && { _qall="$_qall$_qp "; _qk=$((_qk+1)); _qnew=1; }
  done
  [ -z "$_qnew" ] && break
  _qi=$((_qi+1))
done
for _qp in $_qall; do kill -KILL "$_qp" 2>/dev/null; done
"""
)
"""Stops, then kills, every process this user may signal but pid 1 (docker's init), the keeper (see
`_KEEPER`), the shell itself and its parent; counts them in `$_qk` (builtins only: no forks, so a
fork bomb cannot outrun it)."""
_ALIVE_RE = re.compile(rb"qaflow-alive:(\d+)")
_STRAYS_RE = re.compile(rb"qaflow-strays:(\d+)")
_RUN = '_qn=$1; shift; echo $$ >&2; "$@"; _qr=$?; '
_END = 'printf "\\n%s:%s:%s\\n" "$_qn" "$_qr" "${_qk:-0}" >&2; exit $_qr'
_UNTAR = f"tar -xf - -C / 2>/dev/null || {{ echo {UNTAR_MARK} >&2; exit 125; }}; "


def _clear_script(path: str, fail: int = 1) -> str:
    """Shell lines removing `path` (a mount point is emptied), then exiting `fail` if anything is left."""
    q = shlex.quote(path)
    return (
        f"rm -rf {q} 2>/dev/null\n"
        f"if [ -L {q} ]; then echo {shlex.quote(f'cannot remove {path}: still a link')} >&2; exit {fail}; fi\n"
        f'for f in {q}/* {q}/.[!.]* {q}/..?*; do if [ -e "$f" ] || [ -L "$f" ]; then '
        f'echo "cannot empty {path}: $f" >&2; exit {fail}; fi; done\n'
    )


def _wrapper(*, untar: bool, kill_strays: bool) -> str:
    """The exec wrapper: prints its pid (a session leader) on stderr, runs the command, then writes
    an end marker with the nonce `$1`, the exit code and the strays killed: the stream can end there
    even while processes the command left behind hold its pipes (docker would keep it open up to
    2 s more, for them to write into). `untar`: first unpack the pending puts (a tar on stdin) at /,
    which saves a copy round trip per exec. `kill_strays`: kill what is left when the command ends."""
    run = _RUN.replace('"$@";', '"$@" </dev/null;') if untar else _RUN
    return SAVE_PATH + (_UNTAR if untar else "") + RESTORE_PATH + run + (_STRAYS + "\n" if kill_strays else "") + _END


_ALIVE_EXIT = 199
"""The settled wrapper's exit code when processes still run (it ran nothing)."""
_CLEAR_EXIT = 198
"""The settled wrapper's exit code when a path to clear stays."""
_ALIVE_COUNT = _ALIVE.removesuffix('echo "qaflow-alive:$_qk"\n')


def _settled_wrapper(clears: str) -> str:
    """The exec wrapper of `exec_when_settled` (as root): count what runs (in a function, so its `set --`
    leaves the command's arguments alone); if anything does, print the count and exit `_ALIVE_EXIT`
    having changed nothing; else clear the paths, unpack the uploads from stdin, run the command and
    kill what it leaves, as `_wrapper(untar=True, kill_strays=True)` does."""
    return (
        SAVE_PATH
        + "_qn=$1; shift; echo $$ >&2\n"
        + f"_qalive() {{\n{_ALIVE_COUNT}}}\n_qalive\n"
        + f'if [ "$_qk" != 0 ]; then echo "qaflow-alive:$_qk"; _qr={_ALIVE_EXIT}; {_END}; fi\n'
        + clears
        + f"tar -xf - -C / 2>/dev/null || {{ echo {UNTAR_MARK}; exit 125; }}\n"
        + RESTORE_PATH
        + '"$@" </dev/null; _qr=$?\n'
        + _STRAYS
        + "\n"
        + _END
    )


_OOM_PROBE = (
    SYSTEM_TOOLS + "cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null || cat /sys/fs/cgroup/memory.events"
)
_OOM_RE = re.compile(rb"^oom_kill (\d+)$", re.MULTILINE)


def _empty_tar() -> bytes:
    buf = io.BytesIO()
    tarfile.open(fileobj=buf, mode="w").close()
    return buf.getvalue()


_EMPTY_TAR = _empty_tar()


class _UntarFailed(Exception):
    """The image cannot unpack uploads on stdin (no tar): fall back to the archive endpoint."""


class DockerSandbox:
    """One running container. Use as a context manager; `close()` removes it."""

    def __init__(
        self,
        client: docker.DockerClient,
        container_id: str,
        workdir: str,
        spec: SandboxSpec,
        image_user: str = "",
        *,
        storage_enforced: bool = False,
        owned_image: str | None = None,
        open_view: Callable[[DockerSandbox], DockerSandbox] | None = None,
    ):
        self.client = client
        self._open_view = open_view
        """How the backend that made this sandbox starts a verifier view of it (`DockerBackend.open_view`)."""
        self.owned_image = owned_image
        """A snapshot image this sandbox was started from and removes on close (a verifier view)."""
        self.id = container_id
        self.workdir = workdir
        self.spec = spec
        self._image_user = image_user
        self._closed = False
        self._oom_kills = 0
        self._pending: tarfile.TarFile | None = None
        self._pending_buf = io.BytesIO()
        self._pending_lock = threading.Lock()
        self._storage_enforced = storage_enforced
        """The storage driver enforces limits.storage_mb itself (no watchdog needed)."""
        self._upper: Path | bool | None = None
        """The container's writable layer folder on this host; False when unreadable (None: not looked up)."""
        self._sized = False
        """Whether an exec's watchdog has measured the writable layer before it started (the first one does)."""

    @property
    def writable_roots(self) -> list[str]:
        """The container folders this sandbox can write: the whole container file system."""
        return ["/"]

    # ----- exec ---------------------------------------------------------------------------------

    def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        user: str | int | None = None,
        cwd: str | None = None,
        kill_strays_after: bool = False,
        output_floor: int = 0,
    ) -> ExecResult:
        """Run `cmd` (a string goes through `sh -c`) and return its result, whatever its exit code.

        On timeout the command's session and all its descendants are killed (`timed_out=True`).
        Output beyond `limits.output_bytes` per stream is dropped (and flagged), never held.
        `kill_strays_after`: when the command ends, the wrapper kills every process the exec's
        user may signal but the container's init and keeper (`strays_killed` counts them).

        Raises:
            SandboxError: the sandbox is closed or the command could not be started.
        """
        self._require_open()
        argv = [SHELL, "-c", cmd] if isinstance(cmd, str) else [str(a) for a in cmd]
        if not argv:
            raise SandboxError("exec: empty command")
        upload = None
        if self._pending is not None:
            if self._runs_as_root(user):
                upload = self._take_pending()
            else:
                self._flush()
        opts: dict[str, Any] = {"timeout": timeout, "env": env, "user": user, "cwd": cwd, "kill": kill_strays_after,
                                "output_floor": output_floor}  # fmt: skip
        try:
            return self._run(argv, upload, **opts)
        except _UntarFailed:
            assert upload is not None
            self._put_archive(upload)
            return self._run(argv, None, **opts)
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
        kill: bool = False,
        wrapper: str | None = None,
        output_floor: int = 0,
    ) -> ExecResult:
        """One exec of `argv` under the wrapper (`_wrapper`'s, unless `wrapper` is given); `upload` (a tar) is
        first unpacked at / from its stdin.

        Long on purpose: one exec's life (wrapper, socket pump, timeout, tree kill, exit code, OOM) shares its locals.
        """
        api = self.client.api
        start = time.monotonic()
        wrapper = wrapper or _wrapper(untar=upload is not None, kill_strays=kill)
        nonce = f"qaflow-exit-{uuid.uuid4().hex}"
        try:
            exec_id = api.exec_create(
                self.id,
                [SHELL, "-c", wrapper, "sh", nonce, *argv],
                stdin=upload is not None,
                environment=dict(env) if env else None,
                user=str(user) if user is not None else "",
                workdir=self._abs(cwd) if cwd else None,
            )["Id"]
            sock = api.exec_start(exec_id, socket=True)
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker could not run {argv!r} in {self.spec.name}: {exc}") from exc
        cap = max(self.spec.limits.output_bytes, output_floor)
        reader = FrameReader(CappedBuffer(cap), CappedBuffer(cap), marker=nonce.encode())
        timed_out = False
        died: dict[str, Any] = {}
        watch = self._watch(sock, died)
        sender: threading.Thread | None = None
        try:
            if upload is not None:
                # Sent beside the reading: a wrapper that exits without reading its stdin (processes still
                # run, no tar) must not leave a large upload blocked in a full pipe until the timeout.
                sender = threading.Thread(target=send_stdin, args=(sock, upload), daemon=True)
                sender.start()
            deadline = None if timeout is None else start + timeout
            if not pump(sock, reader, deadline) and not died:
                timed_out = True
                self._kill_tree(reader.pid)
                pump(sock, reader, time.monotonic() + KILL_GRACE_S)
        finally:
            watch.stop()
            shutdown_socket(sock)
            if sender is not None:
                sender.join(timeout=KILL_GRACE_S)
            close_socket(sock)
            reader.close()
        if reader.untar_failed:
            raise _UntarFailed()
        duration = time.monotonic() - start
        stdout, stderr = reader.stdout.text(), reader.stderr.text()
        exit_code = -1
        if not died:
            if reader.exit_code is not None and not timed_out:
                exit_code = reader.exit_code
            else:
                exit_code = self._exit_code(exec_id, wait=not timed_out)
            if reader.exit_code is None and not timed_out:
                # The wrapper never wrote its end marker: the whole sandbox may have died under it.
                with contextlib.suppress(docker.errors.APIError):
                    state = self.client.api.inspect_container(self.id).get("State") or {}
                    if not state.get("Running", True):
                        died["state"] = state
        if died:
            state = self._final_state(died["state"])
            oom = bool(state.get("OOMKilled"))
            why = "the out-of-memory killer" if oom else f"exit {state.get('ExitCode')} {state.get('Error') or ''}"
            if state.get("Paused"):
                why = str(state.get("Error"))
            return ExecResult(
                exit_code=137 if oom else -1,
                stdout=stdout,
                stderr=stderr + f"\n[qaflow] the sandbox died during this command ({why.strip()})\n",
                duration_s=duration,
                stdout_truncated=reader.stdout.truncated,
                stderr_truncated=reader.stderr.truncated,
                oom_killed=oom,
                sandbox_died=True,
            )
        oom = not timed_out and exit_code != 0 and self._oom_happened(exit_code)
        if watch.exceeded:
            limit = self.spec.limits.storage_mb
            stderr += f"\n[qaflow] killed: the sandbox's files passed the storage limit ({limit} MiB)\n"
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
            storage_exceeded=watch.exceeded,
            strays_killed=reader.strays_killed,
        )

    def _watch(self, sock: Any, died: dict[str, Any]) -> StorageWatch:
        """The running exec's watchdog: container liveness, and disk use unless the driver bounds it."""
        storage_mb = self.spec.limits.storage_mb
        limit = None if self._storage_enforced or storage_mb is None else storage_mb * 2**20

        def measure() -> int | None:
            attrs = self.client.api.inspect_container(self.id)
            state = attrs.get("State") or {}
            if not state.get("Running", True) or state.get("Paused"):
                # paused from outside qaflow (`docker pause`): nothing in it runs, and a timeout could not
                # kill the command; the command's result is the sandbox's failure, not the task's
                died["state"] = {**state, "Error": "paused from outside qaflow"} if state.get("Paused") else state
                shutdown_socket(sock)
                return None
            return None if limit is None else self._layer_size(attrs)

        def exceeded() -> None:
            log.warning("sandbox %s passed its storage limit (%s MiB): killing it all", self.spec.name, storage_mb)
            self.kill_strays()

        baseline = None
        if limit is not None and not self._sized:
            # the first exec's baseline comes before it starts: a fast filler is past the limit at the first poll
            self._sized = True
            with contextlib.suppress(docker.errors.APIError):
                baseline = self._layer_size(self.client.api.inspect_container(self.id))
        return StorageWatch(measure, limit, exceeded, baseline=baseline).start()

    def _final_state(self, state: dict[str, Any], wait_s: float = 1.0) -> dict[str, Any]:
        """The state of a container that died, once docker has recorded why (its OOM event lags)."""
        if state.get("Paused"):
            return state
        deadline = time.monotonic() + wait_s
        while not state.get("OOMKilled") and time.monotonic() < deadline:
            time.sleep(0.1)
            try:
                state = self.client.api.inspect_container(self.id).get("State") or state
            except docker.errors.APIError:
                break
        return state

    def _layer_size(self, attrs: Mapping[str, Any]) -> int | None:
        """Bytes in the container's writable layer: its upper folder when this host can read it, else SizeRw."""
        if self._upper is None:
            upper = ((attrs.get("GraphDriver") or {}).get("Data") or {}).get("UpperDir")
            self._upper = Path(upper) if upper and os.access(upper, os.R_OK | os.X_OK) else False
        if isinstance(self._upper, Path):
            return tree_usage(self._upper)
        api = self.client.api
        sized = api._result(api._get(api._url("/containers/{0}/json", self.id), params={"size": 1}), True)
        return int(sized.get("SizeRw") or 0)

    def kill_strays(self, clear: Sequence[str] = ()) -> int:
        """Kill every process in the container except docker's init and the keeper; return how many.
        Then remove the paths `clear` (as root, in the same exec; links are removed, not followed),
        and check with shell builtins that they are gone (a replaced `rm` cannot fake it).

        Raises:
            SandboxError: the sandbox is closed, its container is not running, or a path stays.
        """
        script = _STRAYS + 'echo "qaflow-strays:$_qk"\n' + "".join(_clear_script(self._abs(p)) for p in clear)
        return self._count_as_root(script + "true", _STRAYS_RE, "could not stop the leftover processes")

    def settle(self, clear: Sequence[str] = ()) -> int:
        """When nothing but the keepers runs, remove `clear` and return 0; else return how many
        processes run, changing nothing (one exec either way; see `Sandbox.settle`).

        Raises:
            SandboxError: the sandbox is closed or dead, or a path stays.
        """
        clears = "".join(_clear_script(self._abs(p)) for p in clear)
        script = _ALIVE + (f'if [ "$_qk" = 0 ]; then\n{clears}true\nfi\n' if clears else "") + "true"
        return self._count_as_root(script, _ALIVE_RE, "could not look for running processes")

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
        """See `Sandbox.exec_when_settled`. As root it is one exec (`_settled_wrapper`): the check that nothing
        runs, the clearing, the uploads and the command, with no gap in which a process could start. As another
        user, or in an image without tar, it is `settled_exec`'s sequence.

        Raises:
            SandboxError: the sandbox is closed or dead, or a path stays.
        """
        if not self._runs_as_root(user):
            return settled_exec(self, cmd, clear=clear, uploads=uploads, timeout=timeout, env=env, user=user)
        self._require_open()
        for path, folder in uploads:
            self.put(path, folder)
        upload = self._take_pending() or _EMPTY_TAR
        argv = [SHELL, "-c", cmd] if isinstance(cmd, str) else [str(a) for a in cmd]
        clears = "".join(_clear_script(self._abs(p), fail=_CLEAR_EXIT) for p in clear)
        wrapper = _settled_wrapper(clears)
        res = self._run(argv, upload, timeout=timeout, env=env, user=user, cwd=None, kill=True, wrapper=wrapper)
        if res.exit_code == _ALIVE_EXIT and not res.stderr.strip():
            found = _ALIVE_RE.fullmatch(res.stdout.strip().encode())
            if found is not None:
                return int(found.group(1))
        if res.exit_code == _CLEAR_EXIT and res.stderr.strip().startswith("cannot "):
            raise SandboxError(f"in {self.spec.name}: {res.stderr.strip()[-400:]}")
        if res.exit_code == 125 and res.stdout.strip() == UNTAR_MARK:  # no tar in the image: the plain sequence
            return settled_exec(self, cmd, clear=clear, uploads=uploads, timeout=timeout, env=env, user=user)
        return res

    def _count_as_root(self, script: str, count: re.Pattern[bytes], failing: str) -> int:
        """Run a process-scanning `script` as root and return the count it printed (`count`'s group).

        Raises:
            SandboxError: `failing` + why, when it could not run, printed no count or the sandbox died;
                the script's own error when it failed after counting (a path that stays).
        """
        try:
            res = self.exec([SHELL, "-c", script], user="0", timeout=KILL_TIMEOUT_S, output_floor=INTERNAL_OUTPUT_BYTES)
        except SandboxError as exc:
            raise SandboxError(f"{failing} in {self.spec.name}: {self._dead_why(exc)}") from exc
        found = count.search(res.stdout.encode())
        if found is None or res.sandbox_died:
            why = self._dead_why(res.stderr.strip()[-400:] or f"exit {res.exit_code}")
            raise SandboxError(f"{failing} in {self.spec.name}: {why}")
        if not res.ok:
            raise SandboxError(f"in {self.spec.name}: {res.stderr.strip()[-400:] or f'exit {res.exit_code}'}")
        return int(found.group(1))

    def verifier_view(self) -> DockerSandbox:
        """A container started from a snapshot (`docker commit`) of this one, joined to its network
        namespace (`network_mode=container:<id>`); see `Sandbox.verifier_view`. Its close removes
        the container, then the snapshot image.

        Raises:
            UnsupportedError: the runtime cannot join another container's network.
            SandboxError: the commit or the start failed.
        """
        self._require_open()
        self._flush()
        if self._open_view is None:
            raise UnsupportedError(f"the sandbox of {self.spec.name} was made without a way to start a view of it")
        return self._open_view(self)

    def _dead_why(self, error: object) -> str:
        """`error`, or why the container is dead when it is (the sandbox died, e.g. out of memory)."""
        try:
            state = self.client.api.inspect_container(self.id).get("State") or {}
        except docker.errors.APIError:
            return str(error)
        if state.get("Running", True):
            return str(error)
        state = self._final_state(state)
        cause = "killed for want of memory" if state.get("OOMKilled") else f"exit code {state.get('ExitCode')}"
        return f"the sandbox died ({cause}): {str(error).strip()[-300:]}"

    def _runs_as_root(self, user: str | int | None) -> bool:
        name = str(user) if user is not None else self._image_user
        return name.split(":", 1)[0] in ("", "0", "root")

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
                kill_id = api.exec_create(self.id, [SHELL, "-c", _KILL_SCRIPT, "qaflow-kill", str(pid)], user="0")["Id"]
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
            probe = api.exec_create(self.id, [SHELL, "-c", _OOM_PROBE], user="0")["Id"]
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
            with tarfile.open(fileobj=ChunkReader(chunks), mode="r|") as tar:
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
        with tarfile.open(fileobj=ChunkReader(chunks), mode="r|") as tar:
            for member in tar:
                _, _, rest = member.name.partition("/")
                if not rest:
                    continue
                member.name = rest
                try:
                    tar.extract(member, dest, filter="data")
                except tarfile.FilterError as exc:
                    log.warning("get_dir %s: skipped %s: %s", target, rest, exc)

    def read_first_text(self, folder: str, names: Sequence[str]) -> tuple[str, str] | None:
        """See `Sandbox.read_first_text`: one exec as root (docker's archive endpoint costs several
        execs); an image without `cat` falls back to copying the folder out.

        Raises:
            SandboxError: the sandbox is closed or dead.
        """
        self._require_open()
        target = self._abs(folder)
        res = self.exec(
            [SHELL, "-c", _READ_FIRST, "qaflow-read", target, *names],
            user="0", timeout=KILL_TIMEOUT_S, output_floor=INTERNAL_OUTPUT_BYTES,
        )  # fmt: skip
        if res.exit_code == _NONE_FOUND:
            return None
        name, newline, text = res.stdout.partition("\n")
        if res.exit_code == 0 and newline and name in names:
            return name, text
        with tempfile.TemporaryDirectory(prefix="qaflow-read-") as tmp:
            try:
                self.get_dir(target, Path(tmp))
            except (FileNotFoundError, NotADirectoryError):
                return None
            for name in names:
                path = Path(tmp) / name
                if path.is_file() and not path.is_symlink():
                    return name, path.read_text(encoding="utf-8", errors="replace")
        return None

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
            submit_removal(self._remove_or_warn)

    def _remove(self) -> None:
        thaw(self.id)  # a container frozen from outside can hold the daemon's lock on it (`thaw`)
        try:
            self.client.api.remove_container(self.id, force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if "already in progress" not in str(exc):
                raise SandboxError(f"could not remove the sandbox of {self.spec.name} ({self.id[:12]}): {exc}") from exc
        if self.owned_image is not None:
            with contextlib.suppress(docker.errors.NotFound):
                try:
                    self.client.api.remove_image(self.owned_image, force=True)
                except docker.errors.APIError as exc:
                    log.warning("could not remove the snapshot image %s: %s", self.owned_image[:19], exc)

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


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info
