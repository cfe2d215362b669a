"""Turn the tool calls of an assistant message into validated `ToolCall`s.

A malformed call raises `ToolCallError`, whose text is meant to go back to the model as the
tool result (role "tool", same call id), so the agent loop can let the model correct itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from qaflow.errors import ToolCallError


class ToolCall(BaseModel):
    """A tool call that names a known tool with a JSON-object argument."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="Call id, to be echoed as tool_call_id in the tool result message.")
    name: str = Field(description="Name of a tool that was offered.")
    arguments: dict[str, Any] = Field(description="Decoded arguments.")


def _tool_specs(tools: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Name -> JSON schema of the parameters, from OpenAI-style tool definitions."""
    specs: dict[str, Mapping[str, Any]] = {}
    for tool in tools:
        function = tool.get("function", tool)
        specs[function["name"]] = function.get("parameters") or {}
    return specs


def parse_tool_call(call: Mapping[str, Any], tools: Sequence[Mapping[str, Any]]) -> ToolCall:
    """Validate one raw tool call ({id, type, function: {name, arguments}}) against the offered tools.

    Raises:
        ToolCallError: unknown tool, arguments not a JSON object, or a required argument missing.
    """
    specs = _tool_specs(tools)
    call_id = str(call.get("id") or "")
    function = call.get("function") or {}
    name = function.get("name") or ""
    if name not in specs:
        offered = ", ".join(sorted(specs)) or "none"
        raise ToolCallError(call_id, name, f"unknown tool {name!r}; the available tools are: {offered}")
    raw = function.get("arguments")
    if isinstance(raw, Mapping):
        arguments: Any = dict(raw)
    elif raw is None or (isinstance(raw, str) and not raw.strip()):
        arguments = {}
    else:
        try:
            arguments = json.loads(raw)
        except (json.JSONDecodeError, TypeError) as e:
            raise ToolCallError(call_id, name, f"arguments are not valid JSON ({e}): {str(raw)[:200]!r}") from e
    if not isinstance(arguments, dict):
        raise ToolCallError(call_id, name, f"arguments must be a JSON object, got {type(arguments).__name__}")
    missing = [key for key in specs[name].get("required", []) if key not in arguments]
    if missing:
        raise ToolCallError(call_id, name, f"missing required argument(s): {', '.join(missing)}")
    return ToolCall(id=call_id, name=name, arguments=arguments)


def parse_tool_calls(message: Mapping[str, Any], tools: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """All tool calls of an assistant message, validated in order; [] when it has none.

    Raises:
        ToolCallError: for the first malformed call (see `parse_tool_call`).
    """
    return [parse_tool_call(call, tools) for call in message.get("tool_calls") or []]
