"""The token lengths of an SFT export's sessions under a model's tokenizer (`qaflow export sft --tokenizer`):
each session rendered whole by the model's own chat template, messages and tools, as TRL's SFTTrainer renders
it, and counted in tokens. The distribution is the export contract's `TokenLengths`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from qaflow.model_source import model_source
from qaflow.models.export import TokenLengths, session_tools


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
        defs = session_tools(t)
        rendered: Any = tokenizer.apply_chat_template(
            [dict(m) for m in session], tools=list(defs) if defs else None, tokenize=True, return_dict=True
        )
        lengths.append(len(rendered["input_ids"]))
    return TokenLengths.of(model, lengths)
