"""What the policy sampled, turn by turn, token for token: the sample log of a collection.

A provider that samples token ids itself (the in-process `qaflow-local` model, or `qaflow-endpoint` in front of
an OpenAI-compatible server) writes one `SampledTurn` per model call to the log named by the call's
`sample_log` parameter (a JSON-lines file). A turn holds the tokens that entered the context since the
previous turn's last sampled token (`context_ids`: the first prompt, the template's glue, observations,
the generation prompt and any prefilled `<think>`; tokenized once, where they enter, never trained) and the
tokens the turn generated (`ids`), with their log-probabilities under the sampling policy and whether each
carries loss (`trained`: false for a token the sampler forced, such as `</think>` at the thinking budget).
Concatenated over the turns of a conversation, `context_ids + ids` are exactly the tokens the policy saw
and produced.

Turns are keyed by conversation (`conversation_key`: the attempt's seed and its first two messages, which
the rollout record keeps in `meta.sampling.seed` and `messages`) and turn index; a later line for the same
key (a retried call) replaces an earlier one.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from qaflow.models.rollout import message_text

SAMPLE_LOG_PARAM = "sample_log"
"""The provider parameter (LLMConfig.extra) naming the sample log file."""


class SampledTurn(BaseModel):
    """One model call of one conversation, as the sampler saw and produced it."""

    model_config = ConfigDict(extra="ignore")

    conversation: str = Field(description="conversation_key of the call's messages and seed.")
    turn: int = Field(ge=0, description="Index of the assistant turn (assistant messages before the call).")
    context_ids: list[int] = Field(description="Tokens that entered the context since the previous turn: no loss.")
    ids: list[int] = Field(description="Generated tokens in order, the end-of-turn token included when sampled.")
    logprobs: list[float] = Field(description="Per generated token, its log-probability under the sampling policy.")
    trained: list[bool] = Field(description="Per generated token: false for one the sampler forced (no loss).")
    finish: Literal["stop", "length"] = Field(description="stop: it sampled the end of turn; length: it was cut.")
    rerendered: bool = Field(
        False,
        description="The prompt of a later turn was rendered anew from the messages (the conversation's earlier "
        "tokens could not be continued): the conversation is not token-exact.",
    )
    sampler: str = Field(description="The model (folder or served name) that sampled.")
    adapter: str | None = Field(None, description="The LoRA adapter it sampled with; None: none.")
    text: str = Field("", description="The decoded reply (without the end-of-turn token), as parsed into the message.")

    @model_validator(mode="after")
    def _aligned(self) -> SampledTurn:
        if not len(self.ids) == len(self.logprobs) == len(self.trained):
            raise ValueError(
                f"ids ({len(self.ids)}), logprobs ({len(self.logprobs)}) and trained ({len(self.trained)}) differ"
            )
        return self


def conversation_key(messages: Sequence[Mapping[str, Any]], seed: int | None) -> str:
    """The key of a conversation: its seed and the role and text of its first two messages (system, task)."""
    head = [[str(m.get("role", "")), message_text(m.get("content")) or ""] for m in list(messages)[:2]]
    return hashlib.sha256(json.dumps([seed, head]).encode("utf-8", "surrogatepass")).hexdigest()[:24]


_WRITE = threading.Lock()


def append_turn(path: str | Path, turn: SampledTurn) -> None:
    """Append `turn` to the log at `path` (one JSON line; threads of one process write whole lines)."""
    line = turn.model_dump_json() + "\n"
    with _WRITE:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(line)


class SampleLog(BaseModel):
    """The turns of a sample log, the last line per (conversation, turn)."""

    turns: dict[tuple[str, int], SampledTurn] = Field(default_factory=dict)
    bad_lines: list[str] = Field(default_factory=list, description="'file:line: reason' of every unreadable line.")

    @classmethod
    def read(cls, paths: Sequence[str | Path]) -> SampleLog:
        """The turns of the logs at `paths` (missing files are skipped; bad lines are listed, not fatal)."""
        log = cls()
        for path in paths:
            if not Path(path).is_file():
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        turn = SampledTurn.model_validate_json(line)
                    except ValidationError as e:
                        log.bad_lines.append(f"{path}:{number}: {e.errors()[0]['msg']}")
                        continue
                    log.turns[(turn.conversation, turn.turn)] = turn
        return log

    def conversation(self, key: str, turns: int) -> list[SampledTurn | None]:
        """Turns 0..turns-1 of conversation `key` (None where the log has none)."""
        return [self.turns.get((key, t)) for t in range(turns)]
