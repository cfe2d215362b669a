"""The ledger's rollouts table: one row per attempt, keyed by `rollout_id`, the whole record zlib-compressed.

Scalar columns (task, model, effort, reward, turns, thinking tokens...) are there for SQL and
polars views; the full trajectory lives in `record_zlib` and comes back through `rollouts()`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from qaflow.ledger.db import LedgerDB, ts, where
from qaflow.models.rollout import RolloutRecord, RolloutTally

_CHUNK = 500
SETTLED = " AND exit_status != 'error' AND COALESCE(stop_reason, '') != 'llm_error'"


class RolloutLedger(LedgerDB):
    def put_rollout(self, record: RolloutRecord, *, force: bool = False) -> bool:
        """Record one attempt. Returns False (and writes nothing) when its id is already recorded, unless
        `force`, which replaces it."""
        verb = "INSERT OR REPLACE" if force else "INSERT OR IGNORE"
        blob = zlib.compress(record.model_dump_json().encode("utf-8", "surrogatepass"), 6)
        with self.transaction() as conn:
            cursor = conn.execute(
                f"{verb} INTO rollouts(rollout_id, task_version, task, source, model, effort, attempt, round, agent,"
                " run_id, exit_status, stop_reason, reward, full_reward, turns, thinking_tokens, duration_s,"
                " record_zlib, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.rollout_id,
                    record.task_version,
                    record.task,
                    record.source,
                    record.model,
                    record.effort.value,
                    record.attempt,
                    record.round,
                    record.agent,
                    record.run_id,
                    record.exit_status.value,
                    record.stop_reason,
                    record.reward,
                    int(record.full_reward),
                    record.turns,
                    record.thinking_tokens,
                    float(record.timings.get("total", 0.0)),
                    blob,
                    ts(record.created_at),
                ),
            )
            return cursor.rowcount > 0

    def rollout_ids(self, ids: Iterable[str] | None = None, *, settled: bool = False) -> set[str]:
        """The recorded rollout ids (all, or those among `ids`). `settled`: only attempts that are results,
        not those that ended in an infrastructure error (exit status `error`) or a failed model call
        (stop reason `llm_error`), which a rerun tries again."""
        conn = self._reader()
        only = SETTLED if settled else ""
        if ids is None:
            return {r[0] for r in conn.execute("SELECT rollout_id FROM rollouts WHERE 1" + only)}
        wanted = list(dict.fromkeys(ids))
        found: set[str] = set()
        for i in range(0, len(wanted), _CHUNK):
            chunk = wanted[i : i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT rollout_id FROM rollouts WHERE rollout_id IN ({marks})" + only
            found.update(r[0] for r in conn.execute(sql, chunk))
        return found

    def rollout_tallies(self, task_versions: Iterable[str]) -> list[RolloutTally]:
        """Per (task version, model, effort, round): graded attempts, those that passed (full reward, ended ok,
        as `qaflow.rollouts.stats.passed_expr`), and those that ended in an infrastructure or model error (no
        result, counted apart)."""
        wanted = list(dict.fromkeys(task_versions))
        tallies: list[RolloutTally] = []
        settled = f"(1{SETTLED})"
        for i in range(0, len(wanted), _CHUNK):
            chunk = wanted[i : i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._reader().execute(
                f"SELECT task_version, model, effort, round, SUM({settled}),"
                f" SUM({settled} AND full_reward = 1 AND exit_status = 'ok'), SUM(NOT {settled})"
                f" FROM rollouts WHERE task_version IN ({marks}) GROUP BY task_version, model, effort, round"
                " ORDER BY task_version, model, round, effort",
                chunk,
            )
            for version, model, effort, round_, graded, passed, errors in rows:
                tallies.append(
                    RolloutTally(
                        task_version=version,
                        model=model,
                        effort=effort,
                        round=round_,
                        graded=graded,
                        passed=passed,
                        errors=errors,
                    )
                )
        return tallies

    def rollout_stamps(self) -> dict[str, str]:
        """rollout_id -> when the recorded attempt was made (a retried attempt replaces the record and its stamp)."""
        return {r[0]: r[1] for r in self._reader().execute("SELECT rollout_id, created_at FROM rollouts")}

    def rollouts(
        self, *, ids: Iterable[str] | None = None, run_id: str | None = None, task_version: str | None = None
    ) -> list[RolloutRecord]:
        """Full records, oldest first, optionally only those of `ids`, a run or a task version."""
        conn = self._reader()
        clause, args = where(run_id=run_id, task_version=task_version)
        sql = "SELECT rollout_id, record_zlib FROM rollouts" + clause
        wanted = set(ids) if ids is not None else None
        records = []
        for rid, blob in conn.execute(sql + " ORDER BY rowid", args):
            if wanted is None or rid in wanted:
                records.append(RolloutRecord.model_validate_json(zlib.decompress(blob)))
        return records
