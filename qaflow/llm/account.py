"""Token and cost totals per model for one run; thread-safe, shared by every LLM of the run."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from qaflow.llm.reply import Usage

if TYPE_CHECKING:
    import polars as pl


class ModelTotals(BaseModel):
    """Totals of one model."""

    calls: int = Field(0, description="Requests sent to the provider (each retry counts), failed ones included.")
    failed_calls: int = Field(0, description="Requests that raised (rate limit, timeout, ...).")
    cached_calls: int = Field(0, description="Replies served from the cache: no request, no cost.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: bool = Field(False, description="At least one call had no price in litellm's cost map.")


class UsageAccount:
    """Totals per model. Pass one instance to every `LLM` of a run, then read `summary()` or `to_frame()`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, ModelTotals] = {}

    def _of(self, model: str) -> ModelTotals:
        return self._totals.setdefault(model, ModelTotals())

    def record_call(self, model: str, usage: Usage) -> None:
        with self._lock:
            t = self._of(model)
            t.calls += 1
            t.prompt_tokens += usage.prompt_tokens
            t.completion_tokens += usage.completion_tokens
            t.reasoning_tokens += usage.reasoning_tokens
            t.cost_usd += usage.cost_usd
            t.unpriced = t.unpriced or usage.unpriced

    def record_failure(self, model: str) -> None:
        with self._lock:
            t = self._of(model)
            t.calls += 1
            t.failed_calls += 1

    def record_cached(self, model: str) -> None:
        with self._lock:
            self._of(model).cached_calls += 1

    def totals(self, model: str) -> ModelTotals:
        """A copy of one model's totals (zeros when it was never called)."""
        with self._lock:
            return self._totals.get(model, ModelTotals()).model_copy()

    def summary(self) -> dict[str, Any]:
        """{"models": {model: totals}, "total": totals over all models}, as plain dicts."""
        with self._lock:
            per_model = {m: t.model_copy() for m, t in sorted(self._totals.items())}
        total = ModelTotals(
            calls=sum(t.calls for t in per_model.values()),
            failed_calls=sum(t.failed_calls for t in per_model.values()),
            cached_calls=sum(t.cached_calls for t in per_model.values()),
            prompt_tokens=sum(t.prompt_tokens for t in per_model.values()),
            completion_tokens=sum(t.completion_tokens for t in per_model.values()),
            reasoning_tokens=sum(t.reasoning_tokens for t in per_model.values()),
            cost_usd=sum(t.cost_usd for t in per_model.values()),
            unpriced=any(t.unpriced for t in per_model.values()),
        )
        return {"models": {m: t.model_dump() for m, t in per_model.items()}, "total": total.model_dump()}

    def to_frame(self) -> pl.DataFrame:
        """One row per model: `model` plus every ModelTotals field."""
        import polars as pl

        schema: dict[str, Any] = {"model": pl.String}
        dtypes: dict[object, type[pl.DataType]] = {int: pl.Int64, float: pl.Float64, bool: pl.Boolean}
        for name, field in ModelTotals.model_fields.items():
            schema[name] = dtypes[field.annotation]
        rows = [{"model": m, **t} for m, t in self.summary()["models"].items()]
        return pl.DataFrame(rows, schema=schema)
