"""Token lengths of SFT sessions under a model's tokenizer, and the `max_length` TRL's SFTTrainer needs.

Each session is rendered whole (its messages and tools, by the training template, as `sft.masking` and TRL's
`assistant_only_loss` preprocessing tokenize it) and counted in tokens. TRL's `SFTConfig.max_length` defaults to
1,024 and cuts every longer sequence (`truncation_mode="keep_start"`), so the end of a longer session, its final
answer included, is never trained; agent sessions are usually far longer. `needed_max_length` is the longest
session: a `max_length` at least that keeps every session whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from qaflow.models.export import TokenLengths
from sft.masking import mask_sessions


def token_lengths(
    messages: Sequence[Sequence[Mapping[str, Any]]], tools: Sequence[Any], tokenizer: Any, template: str, name: str
) -> TokenLengths:
    """The length distribution of `messages` (with their `tools`) rendered by `template`, counted by `tokenizer`.

    Raises:
        ValueError: no session.
    """
    if not messages:
        raise ValueError("no session to count")
    result = mask_sessions(messages, tools, tokenizer, template)
    if not result.examples:
        raise ValueError("no session could be rendered")
    return TokenLengths.of(name, [len(e.input_ids) for e in result.examples])
