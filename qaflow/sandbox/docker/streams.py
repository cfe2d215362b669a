"""Byte plumbing for docker execs and archives: socket helpers, the stdout/stderr frame demuxer, and a file over chunks.

Nothing here talks to the daemon; `DockerSandbox` and `DockerBackend` feed these the raw
sockets and streams the docker SDK hands back.
"""

from __future__ import annotations

import io
import logging
import select
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

from qaflow.sandbox.base import CappedBuffer

log = logging.getLogger(__name__)

UNTAR_MARK = "qaflow-untar-failed"
"""The line the upload wrapper writes on stderr when it cannot unpack the puts (no tar in the image)."""
_STREAM_HEADER = struct.Struct(">BxxxL")
AFTER_EXIT_GRACE_S = 0.05
"""Once the command has exited (its end marker arrived), how long output still in flight is read.
Processes it left behind may hold the exec's pipes open; docker then keeps the stream open up to
2 s, but the command is over: its result must not wait for them (nor take what they write)."""


def send_stdin(sock: Any, data: bytes) -> None:
    """Write `data` to an exec's stdin, then half-close it so the process sees EOF."""
    raw = getattr(sock, "_sock", sock)
    try:
        raw.sendall(data)
        raw.shutdown(socket.SHUT_WR)
    except OSError as exc:  # the wrapper's tar died early; its marker line tells the caller
        log.debug("exec stdin closed early: %s", exc)


def shutdown_socket(sock: Any) -> None:
    """Shut a (possibly wrapped) socket down so that a reader blocked on it wakes up."""
    raw = getattr(sock, "_sock", sock)
    try:
        raw.shutdown(socket.SHUT_RDWR)
    except OSError as exc:
        log.debug("socket shutdown: %s", exc)


def close_socket(sock: Any) -> None:
    raw = getattr(sock, "_sock", None)
    sock.close()
    if raw is not None:
        raw.close()


def pump(sock: Any, reader: FrameReader, deadline: float | None) -> bool:
    """Feed the exec's multiplexed stream to `reader` until it ends or the command's end marker
    came (True; output still in flight is read for `AFTER_EXIT_GRACE_S`), or `deadline` passes (False)."""
    recv = getattr(sock, "recv", None) or sock.read
    poller = select.poll()  # not select(): a busy pool can hold file descriptors above FD_SETSIZE
    poller.register(sock.fileno(), select.POLLIN | select.POLLPRI)
    while True:
        now = time.monotonic()
        if reader.exited_at is not None and now - reader.exited_at >= AFTER_EXIT_GRACE_S:
            return True
        wait = None if deadline is None else deadline - now
        if reader.exited_at is not None:
            grace = reader.exited_at + AFTER_EXIT_GRACE_S - now
            wait = grace if wait is None else min(wait, grace)
        if wait is not None and wait <= 0:
            return reader.exited_at is not None
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


class FrameReader:
    """Demultiplexes docker's stdout/stderr frames into two capped buffers.

    The first stderr line is the wrapper's pid report; it is taken out of the stream. With a
    `marker`, the line `\\n<marker>:<exit code>[:<strays killed>]\\n` the wrapper writes on stderr
    when the command exits is taken out too, and sets `exit_code`, `strays_killed` and `exited_at`.
    """

    def __init__(self, stdout: CappedBuffer, stderr: CappedBuffer, marker: bytes | None = None):
        self.stdout = stdout
        self.stderr = stderr
        self.pid: int | None = None
        self.untar_failed = False
        self.exit_code: int | None = None
        self.exited_at: float | None = None
        self.strays_killed = 0
        self._marker = b"\n" + marker + b":" if marker else None
        self._held = bytearray()
        """Stderr tail held back while it could be the start of the end marker."""
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
            self._command_stderr(payload)
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
        elif line.strip() == UNTAR_MARK.encode():
            self.untar_failed = True
        else:
            self._command_stderr(line + b"\n")
        if payload[newline + 1 :]:
            self._command_stderr(payload[newline + 1 :])

    def _command_stderr(self, payload: bytes) -> None:
        """The command's stderr, with the end marker taken out (it may arrive split over frames)."""
        marker = self._marker
        if marker is None or self.exit_code is not None:
            self.stderr.write(payload)
            return
        data = bytes(self._held) + payload
        self._held = bytearray()
        at = data.find(marker)
        if at >= 0:
            end = data.find(b"\n", at + len(marker))
            if end < 0:  # the marker's line is not complete yet
                self.stderr.write(data[:at])
                self._held = bytearray(data[at:])
                return
            fields = data[at + len(marker) : end].split(b":")
            if all(f.strip().lstrip(b"-").isdigit() for f in fields) and len(fields) <= 2:
                self.stderr.write(data[:at])
                self.exit_code = int(fields[0])
                self.strays_killed = int(fields[1]) if len(fields) > 1 else 0
                self.exited_at = time.monotonic()
                self.stderr.write(data[end + 1 :])
                return
        # Hold back a tail that could be the start of the marker, write the rest.
        keep = 0
        for size in range(min(len(marker), len(data)), 0, -1):
            if marker.startswith(data[len(data) - size :]):
                keep = size
                break
        if at >= 0:  # a marker-like line with no exit code: command output, pass it on
            keep = 0
        self.stderr.write(data[: len(data) - keep])
        self._held = bytearray(data[len(data) - keep :])

    def close(self) -> None:
        """The stream ended: pass on any stderr held back."""
        if self._held:
            self.stderr.write(bytes(self._held))
            self._held = bytearray()
        if self._pid_line:
            self._give_up_pid()

    def _give_up_pid(self) -> None:
        assert self._pid_line is not None
        self._command_stderr(bytes(self._pid_line))
        self._pid_line = None


class ChunkReader(io.RawIOBase):
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
