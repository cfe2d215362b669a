"""The processes of the bwrap backend: the shim that is pid 1 of every exec, reading an exec until it
ends or is kept, and the holder of the network namespace that a sandbox's execs share.

Every exec's pid 1 is `SHIM`. It runs the command (stdin /dev/null), counts the processes the
command left running, and reports `<exit code> <count>` on its own stdin: the write end of a pipe
that the command never sees. With keep on and something left running it keeps its pid namespace
alive (pid 1 becomes `sleep`) instead of exiting, so a server the agent started outlives its exec
as it would in a container, and the host stops reading the exec at the report. Otherwise it exits,
and whatever the command left dies with its pid namespace.

A sandbox without network of its own shares one network namespace across its execs (as a
container does): `NetHolder` keeps it (a bwrap with `--unshare-net` running `sleep`; bwrap brings
its loopback up), and each exec enters it with `nsenter --net` before bwrap starts with
`--share-net`. A server left running by one exec then answers the next one, and the verifier.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from qaflow.errors import SandboxError
from qaflow.sandbox.base import CappedBuffer

KILL_GRACE_S = 5.0
SLOW_S = 0.2
"""A command still running after this long gets its storage watchdog (shorter ones cost no thread)."""
READ_CHUNK = 1 << 16
HOST_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}

SHIM = r"""_qkeep=$1; shift
"$@" </dev/null; _qr=$?
_qn=0
for _qd in /proc/[0-9]*; do
  [ "${_qd#/proc/}" = 1 ] && continue
  { read -r _qs < "$_qd/stat"; } 2>/dev/null || continue
  set -- ${_qs##*) }
  [ "$1" = Z ] || _qn=$((_qn+1))
done
echo "$_qr $_qn" >&0
if [ "$_qkeep" = 1 ] && [ "$_qn" -gt 0 ]; then exec /bin/sleep 2147483647 <&- >/dev/null 2>&1; fi
exit $_qr
"""
"""Pid 1 of every exec (`/bin/sh -c SHIM qaflow KEEP command...`); shell builtins only."""


@dataclass(frozen=True)
class Report:
    """What an exec's pid 1 reported when its command ended."""

    exit_code: int
    left: int
    """Processes the command left running."""


def parse_report(data: bytes) -> Report | None:
    match = re.fullmatch(rb"\s*(\d+) (\d+)\s*", data)
    return None if match is None else Report(int(match.group(1)), int(match.group(2)))


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL bwrap's process group; --die-with-parent and the pid namespace take the rest down."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def pump(
    proc: subprocess.Popen[bytes],
    out: CappedBuffer,
    err: CappedBuffer,
    deadline: float | None,
    *,
    report_fd: int,
    keep: bool,
    on_slow: Callable[[], None] | None = None,
) -> tuple[bool, Report | None]:
    """Read both pipes into capped buffers, and the report from `report_fd`, until EOF; kill at the
    deadline. With `keep`, a report of processes left running ends the reading at once (they may
    hold the pipes): what is already in the pipes is read, the rest is theirs.
    Returns whether it timed out, and the report (None when pid 1 wrote none: killed, or bwrap failed).

    `on_slow` is called once if the command is still running after `SLOW_S`.
    """
    assert proc.stdout is not None and proc.stderr is not None
    timed_out = False
    slow_at = time.monotonic() + SLOW_S if on_slow is not None else None
    report = CappedBuffer(64)
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout.fileno(), selectors.EVENT_READ, out)
        sel.register(proc.stderr.fileno(), selectors.EVENT_READ, err)
        sel.register(report_fd, selectors.EVENT_READ, report)
        while sel.get_map():
            now = time.monotonic()
            if slow_at is not None and now >= slow_at and on_slow is not None:
                slow_at = None
                on_slow()
            if deadline is not None and deadline - now <= 0:
                if timed_out:
                    break
                kill(proc)
                timed_out = True
                deadline = time.monotonic() + KILL_GRACE_S
                continue
            wait = None if deadline is None else deadline - now
            if slow_at is not None:
                wait = max(0.0, slow_at - now) if wait is None else max(0.0, min(wait, slow_at - now))
            for key, _ in sel.select(wait):
                data = os.read(key.fd, READ_CHUNK)
                if data:
                    key.data.write(data)
                else:
                    sel.unregister(key.fd)
            done = parse_report(report.text().encode()) if b"\n" in report.text().encode() else None
            if keep and done is not None and done.left > 0:
                _drain(proc, out, err)
                break
    return timed_out, parse_report(report.text().encode())


def _drain(proc: subprocess.Popen[bytes], out: CappedBuffer, err: CappedBuffer) -> None:
    """Read what is in the pipes now, without waiting for more."""
    assert proc.stdout is not None and proc.stderr is not None
    for pipe, buf in ((proc.stdout, out), (proc.stderr, err)):
        os.set_blocking(pipe.fileno(), False)
        with contextlib.suppress(BlockingIOError, OSError):
            while data := os.read(pipe.fileno(), READ_CHUNK):
                buf.write(data)


class NetHolder:
    """Keeps one network namespace (loopback only) alive for the execs of a sandbox and its views."""

    def __init__(self, bwrap: str):
        info_r, info_w = os.pipe()
        argv = [bwrap, "--unshare-net", "--unshare-user", "--ro-bind", "/", "/", "--die-with-parent"]
        argv += ["--new-session", "--info-fd", str(info_w), "--", "/bin/sleep", "2147483647"]
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=HOST_ENV,
                start_new_session=True,
                pass_fds=(info_w,),
            )
        except OSError as e:
            os.close(info_r)
            raise SandboxError(f"cannot start bwrap for the sandbox's network namespace: {e}") from e
        finally:
            os.close(info_w)
        with os.fdopen(info_r, "rb") as info:
            text = info.read()
        match = re.search(rb'"child-pid":\s*(\d+)', text)
        if match is None:
            _, stderr = self.proc.communicate()
            raise SandboxError(f"bwrap could not make a network namespace: {stderr.decode(errors='replace')[-300:]}")
        self.pid = int(match.group(1))

    def enter(self) -> list[str]:
        """The argv prefix that runs a command (bwrap) in this network namespace."""
        return [NSENTER or "nsenter", f"--net=/proc/{self.pid}/ns/net", "--"]

    def close(self) -> None:
        kill(self.proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=KILL_GRACE_S)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


NSENTER = shutil.which("nsenter", path=HOST_ENV["PATH"])
"""util-linux's nsenter; without it every exec gets a network namespace of its own and nothing is kept."""
