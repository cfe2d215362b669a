"""Rollouts: the record contract, its polars frame, and (with the harness) rollout jobs."""

from qaflow.rollouts.frame import ROLLOUT_SCHEMA, frame_to_records, read_rollouts, records_to_frame, write_shard
from qaflow.rollouts.record import Effort, RolloutRecord, RolloutStatus, SideCall, SideCallKind, TurnUsage

__all__ = [
    "ROLLOUT_SCHEMA",
    "Effort",
    "RolloutRecord",
    "RolloutStatus",
    "SideCall",
    "SideCallKind",
    "TurnUsage",
    "frame_to_records",
    "read_rollouts",
    "records_to_frame",
    "write_shard",
]
