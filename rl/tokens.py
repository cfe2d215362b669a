"""A rollout's sampled tokens: its turns in the sample log (`sft.sampled`) joined into one token sequence.

The sequence is every turn's `context_ids` then its generated `ids`, in turn order: exactly what the policy saw
and produced. Only generated ids the sampler did not force carry loss, each with the log-probability it was
sampled at. A rollout is token-exact when the log has every one of its assistant turns under its conversation
key (its `meta.sampling.seed` and first two messages), none re-rendered, each reply's text the one recorded in
the message; otherwise `sequence_of` says why not and the update re-renders it (counted as retokenized).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sft.local_llm import same_reply
from sft.sampled import SAMPLE_LOG_PARAM, SampledTurn, SampleLog, conversation_key

NO_LOG = "no sample log: a provider that returns text only, or a record from before sample logs"


@dataclass(frozen=True)
class SampledSequence:
    """One conversation as token ids, with the loss mask and sampling log-probabilities of its generated ids."""

    ids: list[int]
    trained: list[bool]
    """Per id: a generated id the sampler did not force."""
    logprobs: list[float | None]
    """Per id: its sampling log-probability (generated ids), None for context."""
    turn_ends: list[int]
    """Per turn, the length of the sequence after its generated ids (where a cut may end)."""
    turns: int
    cut_turns: int
    """Turns cut by the length limit (no end-of-turn token sampled)."""
    samplers: tuple[str, ...]
    """The distinct `sampler (adapter)` names that sampled it."""


def assistant_turns(messages: Sequence[Mapping[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


def build_sequence(turns: Sequence[SampledTurn]) -> SampledSequence:
    ids: list[int] = []
    trained: list[bool] = []
    logprobs: list[float | None] = []
    ends = []
    for turn in turns:
        ids += turn.context_ids
        trained += [False] * len(turn.context_ids)
        logprobs += [None] * len(turn.context_ids)
        ids += turn.ids
        trained += turn.trained
        logprobs += turn.logprobs
        ends.append(len(ids))
    samplers = tuple(dict.fromkeys(f"{t.sampler} ({t.adapter or 'no adapter'})" for t in turns))
    cut = sum(t.finish == "length" for t in turns)
    return SampledSequence(ids, trained, logprobs, ends, len(turns), cut, samplers)


def sequence_of(
    messages: Sequence[Mapping[str, Any]], meta: Mapping[str, Any], log: SampleLog
) -> SampledSequence | str:
    """The rollout's sampled sequence, or why it has none (a one-line reason)."""
    sampling = meta.get("sampling") or {}
    if not sampling.get(SAMPLE_LOG_PARAM):
        return NO_LOG
    key = conversation_key(messages, sampling.get("seed"))
    replies = [m for m in messages if m.get("role") == "assistant"]
    found = log.conversation(key, len(replies))
    if not replies:
        return "no assistant turn"
    missing = [i for i, t in enumerate(found) if t is None]
    if missing:
        return f"{len(missing)} of {len(replies)} turns not in the sample log"
    turns = [t for t in found if t is not None]
    if any(t.rerendered for t in turns):
        return "a turn's prompt was re-rendered at sampling"
    if not all(same_reply(t.text, m) for t, m in zip(turns, replies, strict=True)):
        return "the sample log's replies differ from the recorded messages"
    return build_sequence(turns)


def sequences(rows: Sequence[Mapping[str, Any]], log: SampleLog) -> dict[str, SampledSequence | str]:
    """Per rollout id (rows with `rollout_id`, `messages`, `meta_json`), its sequence or why it has none."""
    out: dict[str, SampledSequence | str] = {}
    for row in rows:
        meta = json.loads(row.get("meta_json") or "{}")
        out[row["rollout_id"]] = sequence_of(row["messages"] or [], meta, log)
    return out
