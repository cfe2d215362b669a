"""What one model call returns: the assistant message as an OpenAI chat dict, its usage, where it came from."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Usage(BaseModel):
    """Tokens and price of one call, as reported by the provider and priced by litellm's local cost map."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = Field(0, description="Part of completion_tokens spent reasoning, when reported.")
    reasoning_reported: bool = Field(
        False, description="The provider reported reasoning tokens (completion_tokens_details), even if 0."
    )
    cost_usd: float = Field(0.0, description="Price from litellm's local cost map; 0 when unpriced.")
    unpriced: bool = Field(False, description="litellm has no price for this model: cost_usd is 0, not free.")


class LLMReply(BaseModel):
    """One assistant turn. `message` can be appended to the conversation as is."""

    message: dict[str, Any] = Field(
        description=(
            "OpenAI chat message: role, content (str or None), tool_calls as "
            "[{id, type, function: {name, arguments (JSON str)}}] when any, reasoning_content when any."
        )
    )
    usage: Usage = Field(default_factory=Usage, description="Usage of the call that produced it (even when cached).")
    cached: bool = Field(False, description="Read from the response cache: no call was made and nothing was paid.")
    model: str = Field(description="The configured model string.")
    finish_reason: str | None = Field(None, description="Provider's finish reason (stop, tool_calls, length...).")

    @property
    def content(self) -> str | None:
        return self.message.get("content")

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])

    @property
    def reasoning(self) -> str | None:
        return self.message.get("reasoning_content")
