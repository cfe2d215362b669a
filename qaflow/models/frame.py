"""Rollout records as a polars frame with a fixed schema, and parquet shards of them.

One row per rollout. `messages` is a list of structs with a fixed dtype (`MESSAGE_DTYPE`) so that
filters can explode and group it without parsing JSON; tool-call arguments stay JSON strings (as in
the OpenAI format); free-form mappings (tools, rewards, timings, meta) are JSON strings.

Text that cannot be encoded as UTF-8 (lone surrogates from bytes decoded with `surrogateescape`,
as foreign trajectories may carry) is replaced by U+FFFD and the row is flagged `text_repaired`, so
writing parquet never fails and the filters can drop the row with a reason.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from qaflow.errors import PathError
from qaflow.models.rollout import RolloutRecord, normalize_message

TOOL_CALL_DTYPE = pl.Struct(
    {"id": pl.String, "type": pl.String, "function": pl.Struct({"name": pl.String, "arguments": pl.String})}
)
MESSAGE_DTYPE = pl.Struct(
    {
        "role": pl.String,
        "content": pl.String,
        "reasoning_content": pl.String,
        "tool_call_id": pl.String,
        "name": pl.String,
        "tool_calls": pl.List(TOOL_CALL_DTYPE),
    }
)
USAGE_DTYPE = pl.Struct(
    {
        "prompt_tokens": pl.Int64,
        "completion_tokens": pl.Int64,
        "reasoning_tokens": pl.Int64,
        "reasoning_source": pl.String,
    }
)
SIDE_CALL_DTYPE = pl.Struct({"kind": pl.String, "turn": pl.Int64, "tokens": pl.Int64})

ROLLOUT_SCHEMA: dict[str, pl.DataType] = {
    "rollout_id": pl.String(),
    "task": pl.String(),
    "task_version": pl.String(),
    "source": pl.String(),
    "model": pl.String(),
    "effort": pl.String(),
    "attempt": pl.Int64(),
    "round": pl.Int64(),
    "agent": pl.String(),
    "messages": pl.List(MESSAGE_DTYPE),
    "tools_json": pl.String(),
    "usage": pl.List(USAGE_DTYPE),
    "thinking_tokens": pl.Int64(),
    "turns": pl.Int64(),
    "reward": pl.Float64(),
    "rewards_json": pl.String(),
    "full_reward": pl.Boolean(),
    "exit_status": pl.String(),
    "stop_reason": pl.String(),
    "error": pl.String(),
    "verifier_output": pl.String(),
    "side_calls": pl.List(SIDE_CALL_DTYPE),
    "timings_json": pl.String(),
    "backend": pl.String(),
    "run_id": pl.String(),
    "created_at": pl.Datetime("us", "UTC"),
    "meta_json": pl.String(),
    "text_repaired": pl.Boolean(),
}
"""The contract of a rollout frame (and of every parquet shard)."""


class _Sanitizer:
    """Replaces text that UTF-8 cannot encode, remembering whether it had to."""

    def __init__(self) -> None:
        self.repaired = False

    def text(self, value: Any) -> str | None:
        if value is None:
            return None
        s = value if isinstance(value, str) else str(value)
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            self.repaired = True
            return s.encode("utf-8", "replace").decode("utf-8")
        return s

    def json(self, value: Any) -> str:
        return self.text(json.dumps(value, ensure_ascii=False, default=str)) or "null"


def _message_row(message: dict[str, Any], clean: _Sanitizer) -> dict[str, Any]:
    m = normalize_message(message) if isinstance(message, dict) else {"role": "", "content": clean.text(message)}
    calls = m.get("tool_calls")
    return {
        "role": clean.text(m.get("role")),
        "content": clean.text(m.get("content")),
        "reasoning_content": clean.text(m.get("reasoning_content")),
        "tool_call_id": clean.text(m.get("tool_call_id")),
        "name": clean.text(m.get("name")),
        "tool_calls": None
        if not calls
        else [
            {
                "id": clean.text(c["id"]),
                "type": clean.text(c["type"]),
                "function": {
                    "name": clean.text(c["function"]["name"]),
                    "arguments": clean.text(c["function"]["arguments"]),
                },
            }
            for c in calls
        ],
    }


def record_row(record: RolloutRecord) -> dict[str, Any]:
    """One frame row (a dict matching ROLLOUT_SCHEMA) of `record`."""
    clean = _Sanitizer()
    row = {
        "rollout_id": record.rollout_id,
        "task": clean.text(record.task),
        "task_version": clean.text(record.task_version),
        "source": clean.text(record.source),
        "model": clean.text(record.model),
        "effort": record.effort.value,
        "attempt": record.attempt,
        "round": record.round,
        "agent": clean.text(record.agent),
        "messages": [_message_row(m, clean) for m in record.messages],
        "tools_json": clean.json(record.tools),
        "usage": [u.model_dump() for u in record.usage],
        "thinking_tokens": record.thinking_tokens,
        "turns": record.turns,
        "reward": record.reward,
        "rewards_json": clean.json(record.rewards) if record.rewards is not None else None,
        "full_reward": record.full_reward,
        "exit_status": record.exit_status.value,
        "stop_reason": clean.text(record.stop_reason),
        "error": clean.text(record.error),
        "verifier_output": clean.text(record.verifier_output),
        "side_calls": [{"kind": s.kind.value, "turn": s.turn, "tokens": s.tokens} for s in record.side_calls],
        "timings_json": clean.json(record.timings),
        "backend": clean.text(record.backend),
        "run_id": clean.text(record.run_id),
        "created_at": record.created_at,
        "meta_json": clean.json(record.meta),
    }
    row["text_repaired"] = clean.repaired
    return row


def empty_frame() -> pl.DataFrame:
    return pl.DataFrame(schema=ROLLOUT_SCHEMA)


def records_to_frame(records: Iterable[RolloutRecord]) -> pl.DataFrame:
    """A frame with exactly ROLLOUT_SCHEMA, one row per record."""
    rows = [record_row(r) for r in records]
    if not rows:
        return empty_frame()
    return pl.DataFrame(rows, schema=ROLLOUT_SCHEMA)


def _strip_nulls(message: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in message.items() if v is not None and k != "content"}
    out["content"] = message.get("content")
    return out


def frame_to_records(frame: pl.DataFrame) -> list[RolloutRecord]:
    """The records of a rollout frame (the inverse of `records_to_frame`, modulo repaired text)."""
    records = []
    for row in frame.iter_rows(named=True):
        records.append(
            RolloutRecord(
                task=row["task"],
                task_version=row["task_version"],
                source=row["source"],
                model=row["model"],
                effort=row["effort"],
                attempt=row["attempt"],
                round=row["round"],
                agent=row["agent"],
                messages=[_strip_nulls(m) for m in row["messages"] or []],
                tools=json.loads(row["tools_json"] or "[]"),
                usage=row["usage"] or [],
                thinking_tokens=row["thinking_tokens"],
                turns=row["turns"],
                reward=row["reward"],
                rewards=json.loads(row["rewards_json"]) if row["rewards_json"] else None,
                full_reward=row["full_reward"],
                exit_status=row["exit_status"],
                stop_reason=row["stop_reason"] or "",
                error=row["error"],
                verifier_output=row["verifier_output"] or "",
                side_calls=row["side_calls"] or [],
                timings=json.loads(row["timings_json"] or "{}"),
                backend=row["backend"] or "",
                run_id=row["run_id"] or "",
                created_at=row["created_at"],
                meta=json.loads(row["meta_json"] or "{}"),
            )
        )
    return records


def write_shard(records: Sequence[RolloutRecord], folder: Path, *, prefix: str = "rollouts") -> Path | None:
    """Write `records` as one new parquet shard in `folder` (atomic rename); None when empty."""
    if not records:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{prefix}-{uuid.uuid4().hex[:12]}.parquet"
    tmp = folder / f".{name}.tmp"
    records_to_frame(records).write_parquet(tmp)
    final = folder / name
    tmp.replace(final)
    return final


class RolloutsError(PathError):
    """A file or folder that should hold rollouts cannot be read as rollouts."""


def read_rollouts(path: Path) -> pl.DataFrame:
    """Rollouts from a parquet file or a folder of shards (recursively), cast to ROLLOUT_SCHEMA.

    A row present in several shards (same rollout_id) is kept once: the newest by created_at.

    Raises:
        RolloutsError: no such path, a file that is not parquet, or a parquet without the rollout columns.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.parquet") if not p.name.startswith("."))
    elif path.is_file():
        files = [path]
    else:
        raise RolloutsError(path, "no such rollout file or folder")
    if not files:
        return empty_frame()
    frames = []
    for file in files:
        try:
            frame = pl.read_parquet(file)
        except (OSError, pl.exceptions.PolarsError) as e:
            raise RolloutsError(file, f"cannot read rollouts: {type(e).__name__}: {str(e).splitlines()[0]}") from e
        missing = [c for c in ROLLOUT_SCHEMA if c not in frame.columns]
        if missing:
            shown = ", ".join(missing[:6]) + (f" (+{len(missing) - 6} more)" if len(missing) > 6 else "")
            raise RolloutsError(file, f"not rollouts: missing columns {shown}")
        try:
            frames.append(frame.select([pl.col(c).cast(t) for c, t in ROLLOUT_SCHEMA.items()]))
        except pl.exceptions.PolarsError as e:
            raise RolloutsError(file, f"not rollouts: {str(e).splitlines()[0]}") from e
    frame = pl.concat(frames)
    return frame.sort("created_at").unique("rollout_id", keep="last", maintain_order=True)
