"""Counting reasoning tokens when the provider does not report them.

`approx` (the default) is ceil(characters / 4), labelled as such in the record; `hf:PATH` loads a
local Hugging Face tokenizer (never downloaded) and counts exactly, labelled `tokenizer`.
"""

from __future__ import annotations

import functools
import math
from typing import Protocol


class TokenCounter(Protocol):
    source: str

    def count(self, text: str) -> int: ...


class ApproxCounter:
    source = "approx"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 4)


class HFTokenizerCounter:
    source = "tokenizer"

    def __init__(self, path: str):
        from transformers import AutoTokenizer

        self._tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False))


@functools.cache
def counter_from_spec(spec: str) -> TokenCounter:
    """`approx` or `hf:<local tokenizer folder>`.

    Raises:
        ValueError: an unknown spec.
    """
    if spec == "approx":
        return ApproxCounter()
    if spec.startswith("hf:"):
        return HFTokenizerCounter(spec[3:])
    raise ValueError(f"unknown token counter {spec!r}: use 'approx' or 'hf:<tokenizer folder>'")
