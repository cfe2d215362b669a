"""Executing the harness's tools (read, write, edit, bash) inside a task's sandbox.

Every tool returns text for the model; a failing tool (missing file, ambiguous edit, timeout) is
a normal result the model can react to, never an exception out of the agent loop. Outputs are
capped (head and tail kept) so one `cat` of a huge file cannot flood the context or the record.
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from qaflow.agents.tool_specs import TOOLS
from qaflow.errors import SandboxError
from qaflow.sandbox.base import Sandbox

BINARY_SNIFF_BYTES = 8192
TOOL_SCHEMAS: dict[str, dict[str, Any]] = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def cap_text(text: str, limit: int) -> str:
    """`text` itself when short enough, else its head and tail around a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    keep = max(limit - 64, 0)
    head, tail = keep * 2 // 3, keep - keep * 2 // 3
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters truncated ...]\n{text[len(text) - tail :] if tail else ''}"


@dataclass
class ToolContext:
    """What the tools need: the sandbox, where relative paths start, who runs commands, and time left."""

    sandbox: Sandbox
    workdir: str
    user: str | int | None
    env: Mapping[str, str]
    output_chars: int
    default_bash_timeout_s: float
    seconds_left: Callable[[], float]

    def abs_path(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workdir, path))


class ToolFailure(Exception):
    """A tool could not do what was asked; the message goes back to the model."""


def _write_file(ctx: ToolContext, path: str, data: bytes) -> None:
    """Write through a temporary file and `cat`, so an existing file keeps its mode and owner."""
    tmp = posixpath.join(posixpath.dirname(path), f".qaflow-write-{uuid.uuid4().hex[:8]}")
    try:
        ctx.sandbox.put(tmp, data)
    except SandboxError as e:
        raise ToolFailure(f"cannot write {path}: {e}") from e
    result = ctx.sandbox.exec(
        ["bash", "-c", 'cat "$2" > "$1"; status=$?; rm -f "$2"; exit $status', "write", path, tmp],
        timeout=max(1.0, min(30.0, ctx.seconds_left())),
        user=ctx.user,
        env=dict(ctx.env),
    )
    if not result.ok:
        raise ToolFailure(f"cannot write {path}: {(result.stderr or result.stdout).strip()[:500]}")


def _read_file(ctx: ToolContext, path: str) -> bytes:
    try:
        return ctx.sandbox.get(path)
    except FileNotFoundError:
        raise ToolFailure(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ToolFailure(f"{path} is a directory; use bash `ls` to list it") from None
    except SandboxError as e:
        raise ToolFailure(f"cannot read {path}: {e}") from e


def tool_read(ctx: ToolContext, path: str, offset: int | None = None, limit: int | None = None) -> str:
    target = ctx.abs_path(path)
    data = _read_file(ctx, target)
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return f"{target} is a binary file ({len(data)} bytes); not shown"
    lines = data.decode("utf-8", "replace").splitlines()
    start = max(int(offset or 1), 1)
    stop = len(lines) if limit is None else min(len(lines), start - 1 + max(int(limit), 1))
    if not lines:
        return f"{target} is empty"
    if start > len(lines):
        return f"{target} has {len(lines)} lines; offset {start} is past the end"
    width = len(str(stop))
    numbered = "\n".join(f"{n:>{width}}\t{lines[n - 1]}" for n in range(start, stop + 1))
    return cap_text(numbered, ctx.output_chars)


def tool_write(ctx: ToolContext, path: str, content: str) -> str:
    target = ctx.abs_path(path)
    data = content.encode("utf-8", "surrogateescape")
    _write_file(ctx, target, data)
    return f"wrote {len(data)} bytes to {target}"


def tool_edit(ctx: ToolContext, path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
    target = ctx.abs_path(path)
    if old_string == "":
        raise ToolFailure("old_string is empty; use write to create or overwrite a file")
    try:
        text = _read_file(ctx, target).decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailure(f"{target} is not UTF-8 text; edit it with bash") from None
    count = text.count(old_string)
    if count == 0:
        raise ToolFailure(f"old_string not found in {target}")
    if count > 1 and not replace_all:
        raise ToolFailure(f"old_string occurs {count} times in {target}; give more context or set replace_all to true")
    updated = text.replace(old_string, new_string) if replace_all else text.replace(old_string, new_string, 1)
    _write_file(ctx, target, updated.encode("utf-8"))
    return f"replaced {count if replace_all else 1} occurrence(s) in {target}"


def tool_bash(ctx: ToolContext, command: str, timeout: int | None = None) -> str:
    left = ctx.seconds_left()
    if left <= 0:
        raise ToolFailure("no time left for the agent")
    limit = min(float(timeout) if timeout else ctx.default_bash_timeout_s, left)
    result = ctx.sandbox.exec(["bash", "-c", command], timeout=limit, cwd=ctx.workdir, user=ctx.user, env=dict(ctx.env))
    parts = [f"exit code: {result.exit_code}"]
    if result.timed_out:
        parts = [f"command timed out after {limit:.0f}s and was killed"]
    if result.stdout:
        parts.append(f"stdout:\n{result.stdout}")
    if result.stderr:
        parts.append(f"stderr:\n{result.stderr}")
    return cap_text("\n".join(parts), ctx.output_chars)


TOOL_FUNCTIONS: dict[str, Callable[..., str]] = {
    "read": tool_read,
    "write": tool_write,
    "edit": tool_edit,
    "bash": tool_bash,
}


_JSON_TYPES: dict[str, type | tuple[type, ...]] = {"string": str, "integer": int, "boolean": bool}


def check_arguments(name: str, arguments: Mapping[str, Any]) -> None:
    """Raise ToolFailure unless `arguments` fit the tool's schema: known names, required present, right types."""
    schema = TOOL_SCHEMAS[name]
    properties = schema["properties"]
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise ToolFailure(f"unknown argument(s) for {name}: {', '.join(unknown)}")
    missing = [key for key in schema.get("required", []) if key not in arguments]
    if missing:
        raise ToolFailure(f"missing required argument(s) for {name}: {', '.join(missing)}")
    for key, value in arguments.items():
        expected = properties[key]["type"]
        is_bool = isinstance(value, bool)
        if (expected == "integer" and is_bool) or not isinstance(value, _JSON_TYPES[expected]):
            raise ToolFailure(f"argument {key} of {name} must be of type {expected}, got {type(value).__name__}")


def run_tool(ctx: ToolContext, name: str, arguments: Mapping[str, Any]) -> tuple[str, bool]:
    """Run one tool; returns (text for the model, ok)."""
    try:
        check_arguments(name, arguments)
        return TOOL_FUNCTIONS[name](ctx, **arguments), True
    except ToolFailure as e:
        return f"error: {e}", False
