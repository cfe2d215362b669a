"""The export-to-training contract: what an export folder holds that training reads (`EXPORT_REPORT_FILE`),
and the token lengths of its sessions under a model's tokenizer. `curation` writes it, `sft` reads it; neither
imports the other."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

EXPORT_REPORT_FILE = "export_report.json"
"""The machine-readable report beside an export's data (its configs, splits, counts, provenance)."""
TRL_DEFAULT_MAX_LENGTH = 1024
"""`trl.SFTConfig.max_length`'s default."""


def session_tools(value: Any) -> list[dict[str, Any]] | None:
    """An exported row's `tools` (a JSON string, a list, or nothing) as a list of tool definitions, or None
    when there are none."""
    if value is None:
        return None
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else None
    return list(value) if value else None


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

    @classmethod
    def of(cls, tokenizer: str, lengths: Sequence[int]) -> TokenLengths:
        """The distribution of `lengths` (percentiles taken as the next higher session, numpy's `higher`).

        Raises:
            ValueError: no session.
        """
        if not lengths:
            raise ValueError("no session to count")
        ordered = sorted(lengths)

        def higher(q: float) -> int:
            return ordered[math.ceil(q / 100 * (len(ordered) - 1))]

        return cls(
            tokenizer=tokenizer, sessions=len(ordered), min=ordered[0], mean=sum(ordered) / len(ordered),
            p50=higher(50), p90=higher(90), p99=higher(99), max=ordered[-1], needed_max_length=ordered[-1],
            over_trl_default=sum(n > TRL_DEFAULT_MAX_LENGTH for n in ordered),
        )  # fmt: skip

    def advice(self) -> str:
        """One line for people: the max_length TRL needs and what its default would do."""
        line = f"TRL SFTTrainer: max_length >= {self.needed_max_length} keeps every session whole"
        if self.over_trl_default:
            line += (
                f"; its default {TRL_DEFAULT_MAX_LENGTH} would cut {self.over_trl_default} of {self.sessions} sessions"
            )
        return line
