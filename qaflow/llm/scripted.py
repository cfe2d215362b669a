"""The scripted model: canned replies fed through litellm's own mock path, never a bypass.

Each request pops the next `ScriptedReply` and turns it into `litellm.completion` keyword arguments:
`mock_response=<content>` plus `mock_tool_calls=[...]`, or a litellm exception instance for an error
(litellm raises it, so the retry path runs), or a response dict when the reply carries reasoning
(litellm's string path has no place for reasoning_content).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from qaflow.llm.config import ScriptedReply, ScriptedToolCall


class ScriptExhausted(Exception):
    """No scripted reply is left."""


class Script:
    """A thread-safe queue of scripted replies."""

    def __init__(self, replies: Sequence[ScriptedReply]):
        self._replies = deque(replies)
        self._lock = threading.Lock()
        self._calls = 0

    def pop(self) -> tuple[ScriptedReply, int]:
        """The next reply, and how many tool calls the script made before it (ids stay unique, as a
        provider's are: `call_<n>` counts across the whole script)."""
        with self._lock:
            if not self._replies:
                raise ScriptExhausted
            reply = self._replies.popleft()
            offset = self._calls
            self._calls += len(reply.tool_calls or [])
            return reply, offset

    def __len__(self) -> int:
        with self._lock:
            return len(self._replies)


def _tool_call_dict(call: ScriptedToolCall, index: int) -> dict[str, Any]:
    arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
    return {
        "id": call.id or f"call_{index}",
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def _error(litellm: ModuleType, kind: str, model: str) -> Exception:
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    message = f"scripted {kind} error"
    if kind == "rate_limit":
        return litellm.RateLimitError(message=message, llm_provider=provider, model=model)
    if kind == "timeout":
        return litellm.Timeout(message=message, llm_provider=provider, model=model)
    if kind == "connection":
        return litellm.APIConnectionError(message=message, llm_provider=provider, model=model)
    if kind == "server":
        return litellm.InternalServerError(message=message, llm_provider=provider, model=model)
    if kind == "bad_request":
        return litellm.BadRequestError(message=message, llm_provider=provider, model=model)
    raise ValueError(f"unknown scripted error {kind!r}")


def mock_kwargs(litellm: ModuleType, reply: ScriptedReply, model: str, call_offset: int = 0) -> dict[str, Any]:
    """Keyword arguments that make `litellm.completion` produce `reply`.

    `delay_s` of a reply becomes litellm's `mock_delay` (a sleep inside the call); litellm raises a mock
    error before that sleep, so the caller sleeps before an error reply itself.
    """
    if reply.error is not None:
        return {"mock_response": _error(litellm, reply.error, model)}
    delay = {"mock_delay": reply.delay_s} if reply.delay_s else {}
    tool_calls = [_tool_call_dict(c, call_offset + i) for i, c in enumerate(reply.tool_calls or [])]
    if reply.reasoning is None:
        # litellm replaces a None mock_response by "This is a mock request": send "" for "no text".
        kwargs: dict[str, Any] = {"mock_response": reply.content or "", **delay}
        if tool_calls:
            kwargs["mock_tool_calls"] = tool_calls
        return kwargs
    # The dict path builds ModelResponse(**dict): it ignores mock_tool_calls and sets no model or
    # usage, so the dict carries all three (token counts as litellm's string path reports them).
    from litellm.constants import DEFAULT_MOCK_RESPONSE_COMPLETION_TOKEN_COUNT, DEFAULT_MOCK_RESPONSE_PROMPT_TOKEN_COUNT

    reasoning_tokens = len(reply.reasoning.split())
    completion_tokens = DEFAULT_MOCK_RESPONSE_COMPLETION_TOKEN_COUNT + reasoning_tokens
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "reasoning_content": reply.reasoning}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        **delay,
        "mock_response": {
            "model": model.split("/", 1)[-1],
            "choices": [{"index": 0, "finish_reason": "tool_calls" if tool_calls else "stop", "message": message}],
            "usage": {
                "prompt_tokens": DEFAULT_MOCK_RESPONSE_PROMPT_TOKEN_COUNT,
                "completion_tokens": completion_tokens,
                "total_tokens": DEFAULT_MOCK_RESPONSE_PROMPT_TOKEN_COUNT + completion_tokens,
                "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
            },
        },
    }
