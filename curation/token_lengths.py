"""The token lengths of an SFT export's sessions under a model's tokenizer (`qaflow export sft --tokenizer`):
each session rendered whole by the model's own chat template, messages and tools, as TRL's SFTTrainer renders
it, and counted in tokens. The distribution is the export contract's `TokenLengths`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from qaflow.model_source import model_source
from qaflow.models.export import TokenLengths


def _tools(value: Any) -> list[dict[Any, Any] | Callable[..., Any]] | None:
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else None
    return list(value) if value else None


def model_token_lengths(
    messages: Sequence[Sequence[Mapping[str, Any]]], tools: Sequence[Any], model: str
) -> TokenLengths:
    """The length distribution of `messages` (with their `tools`) under `model`'s tokenizer and chat template.

    Raises:
        ModelPathError: `model` reads as a path that does not exist.
        ValueError: no session.
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_source(model))
    lengths = []
    for session, t in zip(messages, tools, strict=True):
        rendered: Any = tokenizer.apply_chat_template(
            [dict(m) for m in session], tools=_tools(t), tokenize=True, return_dict=True
        )
        lengths.append(len(rendered["input_ids"]))
    return TokenLengths.of(model, lengths)
