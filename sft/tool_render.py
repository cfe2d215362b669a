"""Does a rendered session show its tool calls the way the model family expects?

A chat template that gets tool-call `arguments` as a JSON string instead of an object renders them
double-encoded (`"arguments": "{\\"command\\": ..."`) or fails; one that has no place for tool calls
drops them. Both train a model on text it will never be asked to produce. This module finds both
in a rendered session, from the messages alone: the arguments of every call must appear as JSON (or
at least each of their string values must appear as text), never as an escaped JSON string.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from qaflow.models.rollout import arguments_object


def call_arguments(call: Mapping[str, Any]) -> Any:
    """The arguments of one tool call as an object (decoded when they are a JSON string)."""
    function = call.get("function") or call
    return arguments_object(function.get("arguments"))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _encodings(text: str) -> tuple[str, ...]:
    """How a string value may show in a rendering: as is, or JSON-escaped (with or without non-ASCII escapes)."""
    return (text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1])


def _double_encoded(arguments: Any) -> tuple[str, ...]:
    """The arguments object as it shows when the template encodes an already-encoded JSON string."""
    forms = {
        json.dumps(arguments),
        json.dumps(arguments, ensure_ascii=False),
        json.dumps(arguments, separators=(",", ":")),
    }
    return tuple(json.dumps(form)[1:-1] for form in forms if isinstance(arguments, dict) and arguments)


def message_call_problems(message: Mapping[str, Any], rendered: str, index: int) -> list[str]:
    """What is wrong with the tool calls of message `index` in `rendered` (its own span, or a whole session)."""
    problems = []
    for j, call in enumerate(message.get("tool_calls") or []):
        arguments = call_arguments(call)
        name = (call.get("function") or call).get("name") or "?"
        where = f"message {index} tool call {j} ({name})"
        if any(form in rendered for form in _double_encoded(arguments)):
            problems.append(f"{where}: arguments are rendered double-encoded (a JSON string, not an object)")
            continue
        values = [v for v in _strings(arguments) if v.strip()] or [str(name)]
        if any(not any(form in rendered for form in _encodings(v)) for v in values):
            problems.append(f"{where}: not rendered (the template drops tool calls or their arguments)")
    return problems


def tool_call_problems(messages: Sequence[Mapping[str, Any]], rendered: str) -> list[str]:
    """What is wrong with the tool calls of `messages` in the rendering of the whole session (empty: all right)."""
    return [p for i, message in enumerate(messages) for p in message_call_problems(message, rendered, i)]
