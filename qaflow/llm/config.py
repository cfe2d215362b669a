"""Configuration of one LLM role (model, retries, concurrency, cache) and scripted replies.

Pure pydantic: importing this module imports nothing of litellm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ScriptedError = Literal["rate_limit", "timeout", "connection", "server", "bad_request"]
"""Provider errors a scripted reply can raise: the first four are retried, `bad_request` is not."""


class ScriptedToolCall(BaseModel):
    """One tool call in a scripted reply."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Name of the tool the scripted model calls.")
    arguments: dict[str, Any] | str = Field(
        default_factory=dict,
        description="Arguments: a dict (sent as its JSON) or a raw string (sent as is, to script malformed calls).",
    )
    id: str | None = Field(None, description="Tool call id; `call_<n>` (n counts calls across the script) if omitted.")


class ScriptedReply(BaseModel):
    """One canned model reply. It is fed through `litellm.completion(mock_response=..., mock_tool_calls=...)`,
    so litellm builds the response exactly as for a real provider."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = Field(None, description="Text of the reply; None with tool calls gives an empty text.")
    tool_calls: list[ScriptedToolCall] | None = Field(None, description="Tool calls of the reply.")
    reasoning: str | None = Field(None, description="Reasoning text, returned as the message's reasoning_content.")
    error: ScriptedError | None = Field(
        None, description="Raise this provider error (as a litellm exception) instead of replying."
    )
    delay_s: float = Field(
        0.0, ge=0, description="Simulated latency in seconds, spent inside the call (a concurrency slot held)."
    )

    @model_validator(mode="after")
    def _error_alone(self) -> ScriptedReply:
        if self.error is not None and (self.content is not None or self.tool_calls or self.reasoning is not None):
            raise ValueError("a scripted error reply has no content, tool_calls or reasoning")
        return self


class LLMConfig(BaseModel):
    """One model role: which model, how to call it, how hard to retry, how many calls at once, where to cache."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        description=(
            "Any litellm model string: `openai/gpt-4o-mini`, `anthropic/<name>`, or `openai/<name>` with `api_base` "
            "for an OpenAI-compatible local server. Scripted runs keep it too (e.g. `openai/scripted`); it must "
            "name a provider."
        )
    )
    api_base: str | None = Field(None, description="Base URL of the endpoint (OpenAI-compatible servers, proxies).")
    api_key_env: str | None = Field(
        None, description="Name of the environment variable holding the API key; None = litellm's provider default."
    )
    temperature: float = Field(0.0, ge=0, description="Sampling temperature.")
    max_tokens: int | None = Field(None, gt=0, description="Cap on completion tokens; None = provider default.")
    timeout_s: float = Field(120.0, gt=0, description="Timeout of one request in seconds.")
    max_retries: int = Field(5, ge=0, description="Retries after the first attempt on rate limits, timeouts, etc.")
    backoff_s: float = Field(
        1.0, ge=0, description="First backoff delay; doubles each retry, with jitter, up to backoff_max_s."
    )
    backoff_max_s: float = Field(60.0, ge=0, description="Cap on one backoff delay in seconds.")
    concurrency: int = Field(
        4,
        ge=1,
        description=(
            "Max in-flight calls in this process, shared by every LLM with the same model and concurrency "
            "(cache hits and backoff waits do not hold a slot)."
        ),
    )
    cache_dir: Path | None = Field(None, description="On-disk response cache folder; None = no cache.")
    reasoning_effort: str | None = Field(
        None, description="Passed through to litellm (`low`, `medium`, `high`...) when set."
    )
    extra: dict[str, Any] = Field(default_factory=dict, description="Extra keyword arguments for litellm.completion.")
    script: list[ScriptedReply] | None = Field(
        None, description="Canned replies, in order; when set, no provider is called (litellm's mock path is used)."
    )
