"""Checking a masked dataset: render each session, attribute every token to the message it came from,
and count per role how many tokens carry loss. Loss on a system, user or tool token is an error, as
is an assistant message with no loss at all, and a tool call the template renders double-encoded or
drops (`sft.tool_render`); chat control tokens inside non-assistant text (which
the tokenizer would read as structure) are warnings.

Attribution renders each conversation's prefixes (messages[:1], messages[:2], ...): with a
prefix-preserving training template, message i is the text between prefix i and prefix i+1. A
template that is not prefix-preserving is reported, not guessed around.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from qaflow.models.export import session_tools
from sft.masking import (
    IGNORE_INDEX,
    MaskingConfig,
    clean_messages,
    mask_sessions,
    render,
    render_templates,
)
from sft.tool_render import message_call_problems


class RoleCount(BaseModel):
    tokens: int = 0
    loss_tokens: int = 0


class SessionCheck(BaseModel):
    index: int
    roles: dict[str, RoleCount] = Field(default_factory=dict)
    errors: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class CheckReport(BaseModel):
    sessions: list[SessionCheck] = Field(default_factory=list)
    dropped: list[tuple[int, str]] = Field(default_factory=list)

    @property
    def roles(self) -> dict[str, RoleCount]:
        total: dict[str, RoleCount] = {}
        for s in self.sessions:
            for role, c in s.roles.items():
                t = total.setdefault(role, RoleCount())
                t.tokens += c.tokens
                t.loss_tokens += c.loss_tokens
        return total

    @property
    def errors(self) -> list[str]:
        return [f"session {s.index}: {e}" for s in self.sessions for e in s.errors]

    @property
    def ok(self) -> bool:
        return not self.errors


def _message_spans(messages: list[dict[str, Any]], tools: Any, template: str, special: Mapping[str, Any]) -> list[int]:
    """End offset of each message in the full rendering (prefix renders); raises ValueError if not prefix-preserving."""
    prefixes = [messages[: i + 1] for i in range(len(messages))]
    texts, _ = render_templates(prefixes, tools, template, special)
    full = texts[-1]
    ends = []
    for i, text in enumerate(texts):
        if not full.startswith(text):
            raise ValueError(f"the template is not prefix-preserving at message {i}")
        ends.append(len(text))
    return ends


def check_sessions(
    messages: Sequence[Sequence[Mapping[str, Any]]],
    tools: Sequence[Any],
    tokenizer: Any,
    template: str,
    config: MaskingConfig | None = None,
) -> CheckReport:
    """Mask the sessions as training would, then audit where the loss falls (see the module docstring)."""
    result = mask_sessions(messages, tools, tokenizer, template, config)
    report = CheckReport(dropped=result.dropped)
    control = [t for t in tokenizer.all_special_tokens if t]
    special = tokenizer.special_tokens_map
    for example in result.examples:
        conv = clean_messages(messages[example.index])
        check = SessionCheck(index=example.index)
        try:
            ends = _message_spans(conv, session_tools(tools[example.index]), template, special)
        except ValueError as e:
            check.errors.append(str(e))
            report.sessions.append(check)
            continue
        texts, _ = render([conv], [tools[example.index]], template, special)
        starts = [0, *ends[:-1]]
        for i, message in enumerate(conv):
            check.errors += message_call_problems(message, texts[0][starts[i] : ends[i]], i)
        encoded = tokenizer(texts[0], add_special_tokens=False, return_offsets_mapping=True)
        if list(encoded["input_ids"][: len(example.input_ids)]) != example.input_ids:
            check.errors.append("input_ids differ from a fresh rendering of the session")
            report.sessions.append(check)
            continue
        offsets = np.asarray(encoded["offset_mapping"], dtype=np.int64).reshape(-1, 2)[: len(example.input_ids)]
        owner = np.searchsorted(np.asarray(ends), offsets[:, 0], side="right")
        labels = np.asarray(example.labels)
        for i, message in enumerate(conv):
            role = str(message.get("role", ""))
            sel = owner == i
            count = check.roles.setdefault(role, RoleCount())
            n_tokens = int(sel.sum())
            n_loss = int((labels[sel[: len(labels)]] != IGNORE_INDEX).sum())
            count.tokens += n_tokens
            count.loss_tokens += n_loss
            if role != "assistant" and n_loss:
                check.errors.append(f"message {i} ({role}) has {n_loss} token(s) with loss")
            if role == "assistant" and n_tokens and not n_loss and not example.truncated:
                check.errors.append(f"message {i} (assistant) has no token with loss")
            content = message.get("content")
            if role != "assistant" and isinstance(content, str):
                found = [t for t in control if t in content]
                if found:
                    check.warnings.append(f"message {i} ({role}) contains control token(s) {found}")
        report.sessions.append(check)
    return report
