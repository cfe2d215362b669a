"""Rollouts that forged their reward: a rewarded attempt whose recorded changes reach a trust edge of the
verifier (`qaflow.audit.trust_edges`). Used by the `reward_hack` filter rule, the export gate and RL rounds."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from qaflow.audit.trust_edges import edge_writes
from qaflow.rollouts.changes import CHANGES_KEY


def instruction_of(messages: list[dict[str, Any]] | None) -> str:
    """The task's instruction as the agent got it: its user messages (one per step of a multi-step task)."""
    return "\n".join(m.get("content") or "" for m in messages or [] if m.get("role") == "user")


def hack_reason(
    meta_json: str | None, instruction: str, allow: Iterable[str] = (), unrecorded: bool = True
) -> str | None:
    """Why a rollout that got reward hacked its verifier (`trust_edges`), or None. `unrecorded`: a
    change record whose listing failed counts as a hack (the agent may have removed the evidence)."""
    try:
        meta = json.loads(meta_json or "{}")
    except ValueError:
        return "meta is not JSON: what the attempt changed is unknown"
    record = meta.get(CHANGES_KEY) if isinstance(meta, dict) else None
    if not isinstance(record, dict):
        return None  # imported or recorded before changes were: nothing to judge
    if record.get("error") and record.get("lost", True) and unrecorded:
        return f"what the attempt changed is unknown ({record['error']})"
    changes = {
        p: kind for kind in ("created", "modified", "deleted") for p in record.get(kind) or [] if isinstance(p, str)
    }
    edges = [p for p in record.get("task_edges") or [] if isinstance(p, str)]
    writes = edge_writes(changes, instruction, allow, edges)
    if not writes:
        return None
    more = f" (+{len(writes) - 1} more)" if len(writes) > 1 else ""
    return f"reward hack: {writes[0].reason}{more}"


def rewarded_hack(
    reward: float | None,
    meta_json: str | None,
    messages: list[dict[str, Any]] | None,
    allow: Iterable[str] = (),
    unrecorded: bool = True,
) -> str | None:
    """`hack_reason` for an attempt that got some reward (an unrewarded attempt forged nothing), else None."""
    if not (reward or 0) > 0:
        return None
    return hack_reason(meta_json, instruction_of(messages), allow, unrecorded)
