"""Observation-masked tokenization of whole agent sessions.

Only what the assistant generated carries loss: its reasoning, text, tool calls and end-of-turn
token, as delimited by the `{% generation %}` markers of the training template; system, user and
tool-observation tokens get label -100. A token carries loss when it overlaps a generation span
(the rule transformers' `return_assistant_tokens_mask` uses, so labels equal TRL's
`assistant_only_loss` preprocessing token for token).

Speed comes from batching: conversations sharing a tool list are rendered in one call, all texts
are tokenized in one parallel call of the Rust tokenizer, and spans map to tokens with numpy.

Sessions longer than `max_length` are never cut mid-turn: `drop` removes them (with a reason);
`truncate_turns` keeps the longest prefix that ends at the end of an assistant turn.

Each session may carry its effort's `Conditioning` (`sft.conditioning`): its system line is merged into the
messages and its template variables are passed to the template, as the policy saw them when it generated.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from qaflow.models.export import session_tools
from sft.conditioning import Conditioning, condition_messages

IGNORE_INDEX = -100
SANE_CONTEXT = 10_000_000
"""A tokenizer's `model_max_length` at or above this is transformers' "unknown" placeholder, not a context."""


def model_context_length(model_config: Any, tokenizer: Any = None) -> int | None:
    """The model's context length: its config's `max_position_embeddings`, else the tokenizer's
    `model_max_length` when it is a real length (not transformers' huge placeholder), else None."""
    for value in (getattr(model_config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)):
        if isinstance(value, int) and 0 < value < SANE_CONTEXT:
            return value
    return None


class MaskingConfig(BaseModel):
    max_length: int | None = Field(None, ge=8, description="Longest tokenized session; None = no limit.")
    overlong: Literal["drop", "truncate_turns"] = Field(
        "drop", description="Over max_length: drop the session, or cut it after its last assistant turn that fits."
    )


@dataclass
class MaskedExample:
    index: int
    input_ids: list[int]
    labels: list[int]
    truncated: bool = False


@dataclass
class MaskingResult:
    examples: list[MaskedExample] = field(default_factory=list)
    dropped: list[tuple[int, str]] = field(default_factory=list)

    @property
    def truncated(self) -> int:
        return sum(e.truncated for e in self.examples)


def clean_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as plain dicts without None values (what `apply_chat_template` renders)."""
    out = []
    for message in messages:
        m = {k: v for k, v in dict(message).items() if v is not None}
        if "tool_calls" in m:
            m["tool_calls"] = [
                {k: v for k, v in dict(call).items() if v is not None} for call in m["tool_calls"] or []
            ] or None
            if m["tool_calls"] is None:
                del m["tool_calls"]
        out.append(m)
    return out


def render(
    conversations: Sequence[Sequence[Mapping[str, Any]]],
    tools: Sequence[Any],
    template: str,
    special_tokens: Mapping[str, Any],
    conditioning: Sequence[Conditioning | None] | None = None,
) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """Rendered texts and generation spans (character offsets), one per conversation, each under its
    conditioning (None: as stored)."""
    conditions = list(conditioning) if conditioning is not None else [None] * len(conversations)
    texts: list[str] = [""] * len(conversations)
    spans: list[list[tuple[int, int]]] = [[] for _ in conversations]
    groups: dict[tuple[str, str], list[int]] = {}
    parsed: dict[str, list[dict[str, Any]] | None] = {}
    kwargs: dict[str, dict[str, Any]] = {}
    for i, t in enumerate(tools):
        key = t if isinstance(t, str) else json.dumps(t, sort_keys=True)
        cond = conditions[i] or Conditioning()
        groups.setdefault((key, cond.key()), []).append(i)
        kwargs.setdefault(cond.key(), cond.template_kwargs)
        if key not in parsed:
            parsed[key] = session_tools(t)
    for (key, cond_key), members in groups.items():
        rendered, indices = render_templates(
            [clean_messages(condition_messages(conversations[i], conditions[i])) for i in members],
            parsed[key],
            template,
            {**special_tokens, **kwargs[cond_key]},
        )
        for i, text, idx in zip(members, rendered, indices, strict=True):
            texts[i] = text
            spans[i] = [(int(s[0]), int(s[1])) for s in idx]
    return texts, spans


def render_templates(
    conversations: Sequence[Sequence[Mapping[str, Any]]],
    tools: list[dict[str, Any]] | None,
    template: str,
    special: Mapping[str, Any],
) -> tuple[list[str], list[list[list[int]]]]:
    """transformers' `render_jinja_template` with the assistant mask: the texts and each one's generation
    spans. (Its annotation says `str`; it returns the pair.)"""
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered: Any = render_jinja_template(
        conversations=[[dict(m) for m in c] for c in conversations],
        tools=list(tools) if tools is not None else None,
        chat_template=template,
        return_assistant_tokens_mask=True,
        **special,
    )
    texts, indices = rendered
    return list(texts), [list(i) for i in indices]


def assistant_mask(offsets: np.ndarray, spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """1 for every token (start, end offsets) that overlaps a span, else 0. Spans are sorted and disjoint."""
    if not spans or len(offsets) == 0:
        return np.zeros(len(offsets), dtype=bool)
    span_arr = np.asarray(spans, dtype=np.int64)
    starts, ends = offsets[:, 0], offsets[:, 1]
    idx = np.searchsorted(span_arr[:, 1], starts, side="right")
    inside = idx < len(span_arr)
    mask = np.zeros(len(offsets), dtype=bool)
    mask[inside] = ends[inside] > span_arr[idx[inside], 0]
    return mask


def _cut(mask: np.ndarray, max_length: int) -> int | None:
    """Length of the longest prefix <= max_length that ends where an assistant turn ends (None: no such turn)."""
    ends = np.flatnonzero(mask[:-1] & ~mask[1:]) + 1
    if mask.size and mask[-1]:
        ends = np.append(ends, mask.size)
    fitting = ends[ends <= max_length]
    return int(fitting[-1]) if fitting.size else None


def mask_sessions(
    messages: Sequence[Sequence[Mapping[str, Any]]],
    tools: Sequence[Any],
    tokenizer: Any,
    template: str,
    config: MaskingConfig | None = None,
    conditioning: Sequence[Conditioning | None] | None = None,
) -> MaskingResult:
    """input_ids and labels for every session (see the module docstring), each under its conditioning;
    dropped sessions keep a reason."""
    config = config or MaskingConfig()
    texts, spans = render(messages, tools, template, tokenizer.special_tokens_map, conditioning)
    encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True, return_attention_mask=False)
    result = MaskingResult()
    for i, (ids, offsets) in enumerate(zip(encoded["input_ids"], encoded["offset_mapping"], strict=True)):
        mask = assistant_mask(np.asarray(offsets, dtype=np.int64).reshape(-1, 2), spans[i])
        if not mask.any():
            result.dropped.append((i, "no assistant tokens: nothing to learn"))
            continue
        truncated = False
        if config.max_length is not None and len(ids) > config.max_length:
            if config.overlong == "drop":
                result.dropped.append((i, f"{len(ids)} tokens > max_length {config.max_length}"))
                continue
            cut = _cut(mask, config.max_length)
            if cut is None:
                result.dropped.append(
                    (i, f"{len(ids)} tokens > max_length {config.max_length} and no assistant turn ends before it")
                )
                continue
            ids, mask, truncated = ids[:cut], mask[:cut], True
        id_arr = np.asarray(ids, dtype=np.int64)
        labels = np.where(mask, id_arr, IGNORE_INDEX)
        result.examples.append(MaskedExample(i, id_arr.tolist(), labels.tolist(), truncated))
    return result
