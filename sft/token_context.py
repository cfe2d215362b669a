"""The prompt of each turn as token ids that continue the conversation's earlier tokens (token in, token out).

The first turn's prompt is the policy's chat template rendered once (`sft.conditioning.render_prompt`) and
tokenized. A later turn's prompt is the previous prompt, then the previous turn's sampled ids exactly as
sampled, then only what entered the context since: the text the template puts after the last assistant turn's
end-of-turn token (glue, tool observations, the next generation prompt), tokenized once. The earlier turns are
never rendered again, so a reply the template would print differently (whitespace around `</think>`, a
stripped answer) and an end-of-turn token the policy never sampled never reach the model's input. A turn cut
by the length limit did not sample its end of turn: the template's end-of-turn token opens the next context
(masked: context is never trained).

Where the new text starts is found by counting end-of-turn tokens: in the rendering of the conversation up to
and including the last assistant message (`c` of them), the same `c` messages end at the `c`-th end-of-turn
token of the new rendering; whatever the template prints inside earlier messages does not matter. When that
cannot be found (no state for the conversation, a template without an end-of-turn token), the prompt is
rendered anew and the turn is marked `rerendered`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qaflow.models.rollout import Effort
from sft.conditioning import render_prompt

THINK_OPEN = "<think>"
MAX_CONVERSATIONS = 4096
"""Conversations whose tokens are kept for their next turn (the least recently used beyond are forgotten)."""


@dataclass(frozen=True)
class TurnPrompt:
    ids: list[int]
    """The whole prompt: every earlier token, then context_ids."""
    context_ids: list[int]
    """What entered the context for this turn (the whole prompt on a first or re-rendered turn)."""
    rerendered: bool
    """A later turn whose prompt was rendered anew from the messages."""
    prefill: str
    """The `<think>` line the prompt ends with ("" when thinking is off or the template opened it)."""


@dataclass(frozen=True)
class _State:
    ids: list[int]
    messages: int
    ended: bool
    text: str


def thinking_prefill(prompt: str, thinking: bool) -> str:
    """The `<think>` line a thinking turn is opened with, unless the template already opened it."""
    return THINK_OPEN + "\n" if thinking and not prompt.rstrip().endswith(THINK_OPEN) else ""


def _nth_end(text: str, marker: str, n: int) -> int | None:
    """The offset just after the `n`-th occurrence of `marker` in `text` (None: fewer occurrences)."""
    at = -len(marker)
    for _ in range(n):
        at = text.find(marker, at + len(marker))
        if at < 0:
            return None
    return at + len(marker)


class TokenContexts:
    """Per conversation, the tokens so far; thread-safe, one per provider."""

    def __init__(self, same_reply: Callable[[str, Mapping[str, Any]], bool]) -> None:
        """`same_reply(text, message)`: whether the sampled `text` is the assistant `message` the caller sent back
        (a conversation is continued only from its own reply)."""
        self._same_reply = same_reply
        self._states: OrderedDict[str, _State] = OrderedDict()
        self._lock = threading.Lock()

    def prompt(
        self,
        tokenizer: Any,
        key: str,
        messages: Sequence[Mapping[str, Any]],
        tools: Any,
        effort: Effort | None,
        thinking: bool,
    ) -> TurnPrompt:
        """The prompt ids of the next turn of conversation `key` (see the module docstring)."""
        with self._lock:
            state = self._states.get(key)
        text = render_prompt(tokenizer, messages, effort, tools=tools, thinking=thinking)
        prefill = thinking_prefill(text, thinking)
        later = any(m.get("role") == "assistant" for m in messages)
        eos = tokenizer.eos_token
        if (
            state is not None
            and eos
            and state.messages < len(messages)
            and messages[state.messages].get("role") == "assistant"
            and self._same_reply(state.text, messages[state.messages])
        ):
            before = render_prompt(
                tokenizer,
                messages[: state.messages + 1],
                effort,
                tools=tools,
                thinking=thinking,
                add_generation_prompt=False,
            )
            ends = before.count(eos)
            start = _nth_end(text, eos, ends) if ends else None
            if start is not None:
                new = ("" if state.ended else eos) + text[start:] + prefill
                context = encode(tokenizer, new)
                return TurnPrompt(ids=[*state.ids, *context], context_ids=context, rerendered=False, prefill=prefill)
        ids = encode(tokenizer, text + prefill)
        return TurnPrompt(ids=ids, context_ids=ids, rerendered=later, prefill=prefill)

    def advance(
        self, key: str, prompt: TurnPrompt, generated: Sequence[int], text: str, messages: int, ended: bool
    ) -> None:
        """Record the turn just sampled: `generated` (decoded: `text`) follows `prompt`, the call had `messages`
        messages, and `ended`: the turn sampled its end-of-turn token."""
        with self._lock:
            self._states[key] = _State(ids=[*prompt.ids, *generated], messages=messages, ended=ended, text=text)
            self._states.move_to_end(key)
            while len(self._states) > MAX_CONVERSATIONS:
                self._states.popitem(last=False)


def encode(tokenizer: Any, text: str) -> list[int]:
    return [int(i) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]
