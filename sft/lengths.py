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

import numpy as np
from pydantic import BaseModel, Field

from sft.masking import mask_sessions

TRL_DEFAULT_MAX_LENGTH = 1024
"""`trl.SFTConfig.max_length`'s default."""


class TokenLengths(BaseModel):
    """The token-length distribution of a dataset's sessions under one tokenizer."""

    tokenizer: str = Field(description="The tokenizer (model) the sessions were counted with.")
    sessions: int
    min: int
    mean: float
    p50: int
    p90: int
    p99: int
    max: int
    needed_max_length: int = Field(description="The max_length that keeps every session whole: the longest one.")
    over_trl_default: int = Field(
        description=f"Sessions longer than TRL's default max_length ({TRL_DEFAULT_MAX_LENGTH}), which it would cut."
    )

    def advice(self) -> str:
        """One line for people: the max_length TRL needs and what its default would do."""
        line = f"TRL SFTTrainer: max_length >= {self.needed_max_length} keeps every session whole"
        if self.over_trl_default:
            line += (
                f"; its default {TRL_DEFAULT_MAX_LENGTH} would cut {self.over_trl_default} of {self.sessions} sessions"
            )
        return line


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
    lengths = np.asarray([len(e.input_ids) for e in result.examples], dtype=np.int64)
    if not lengths.size:
        raise ValueError("no session could be rendered")
    p50, p90, p99 = (int(np.percentile(lengths, q, method="higher")) for q in (50, 90, 99))
    return TokenLengths(
        tokenizer=name,
        sessions=int(lengths.size),
        min=int(lengths.min()),
        mean=float(lengths.mean()),
        p50=p50,
        p90=p90,
        p99=p99,
        max=int(lengths.max()),
        needed_max_length=int(lengths.max()),
        over_trl_default=int((lengths > TRL_DEFAULT_MAX_LENGTH).sum()),
    )


def model_token_lengths(
    messages: Sequence[Sequence[Mapping[str, Any]]], tools: Sequence[Any], model: str, template: Any = None
) -> TokenLengths:
    """`token_lengths` under the tokenizer of `model` (a folder or hub id) and its training template (`template`:
    a template file, else the model's own, as `sft train` renders).

    Raises:
        ModelPathError: `model` reads as a path that does not exist.
        ValueError: no session.
    """
    from transformers import AutoTokenizer

    from sft.model_source import model_source
    from sft.templates import training_template

    tokenizer = AutoTokenizer.from_pretrained(model_source(model))
    return token_lengths(messages, tools, tokenizer, training_template(tokenizer, template), model)
