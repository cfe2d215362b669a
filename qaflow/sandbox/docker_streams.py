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


class FrameReader:
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
        elif line.strip() == UNTAR_MARK.encode():
            self.untar_failed = True
        else:
            self.stderr.write(line + b"\n")
        if payload[newline + 1 :]:
            self.stderr.write(payload[newline + 1 :])

    def _give_up_pid(self) -> None:
        assert self._pid_line is not None
        self.stderr.write(bytes(self._pid_line))
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
