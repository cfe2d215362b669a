"""Filter throughput: the full rule set over synthetic rollouts, polars against a plain-Python loop, same run.

The frame (100,000 trajectories of about 20 messages, 2 million messages in all) is generated with
polars expressions; a share of the rows breaks exactly one rule (timeouts, low reward, side calls,
repaired text, too few turns, budgets, a huge tool output, a dozen kinds of broken structure,
a planted conftest.py, duplicates; package installs that wrote their own .pth break none), named in
each row's meta_json as `bench_kind`. The baseline converts the same rows to Python dicts (timed
apart, not counted) and applies the same checks row by row. Both must keep the same rows and blame
the same rule for every removed row. Each side runs `--repeats` times and its best time counts (the
machines are shared). Target: polars at least 5x faster and under 30 s.

Usage: python bench/filter_throughput.py [--rows 100000] [--seed 0] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np
import polars as pl

from curation.filters import (
    CleanText,
    Dedup,
    FilterConfig,
    MinTurns,
    NoSideCalls,
    NoTimeout,
    RewardHack,
    StructureValid,
    TokenBudget,
    VerifierPassed,
    apply_filters,
)
from qaflow.agents.tool_specs import TOOLS
from qaflow.models.frame import MESSAGE_DTYPE, ROLLOUT_SCHEMA
from qaflow.rollouts.hacks import rewarded_hack

T = TypeVar("T")

# kind of each synthetic row and its weight; "ok" rows pass every rule
KINDS = {
    "ok": 60,
    "agent_timeout": 2,
    "verifier_timeout": 1,
    "error": 1,
    "low_reward": 8,
    "side_call": 2,
    "repaired": 1,
    "few_turns": 3,
    "thinking": 2,
    "completion": 1,
    "huge_output": 1,
    "no_result": 1,
    "orphan_result": 1,
    "bad_json": 1,
    "not_object": 1,
    "missing_arg": 1,
    "unknown_tool": 1,
    "dup_call_id": 1,
    "empty_assistant": 1,
    "ends_with_tool": 1,
    "assistant_first": 1,
    "late_system": 1,
    "duplicate": 6,
    "installs": 3,
    "reward_hack": 1,
}
HUGE_CHARS = 250_000
BUDGET = {"max_thinking_tokens": 20_000, "max_completion_tokens": 30_000, "max_message_chars": 200_000}


def bench_config() -> FilterConfig:
    """Every built-in rule, every budget set."""
    return FilterConfig(
        rules=[
            NoTimeout(),
            VerifierPassed(),
            NoSideCalls(),
            CleanText(),
            MinTurns(n=5),
            TokenBudget(**BUDGET),
            StructureValid(),
            RewardHack(),
            Dedup(),
        ]
    )


def synthetic_frame(n: int, seed: int = 0) -> pl.DataFrame:
    """`n` rollouts in ROLLOUT_SCHEMA, built column-wise (no per-message Python)."""
    weights = np.array(list(KINDS.values()), dtype=float)
    kinds = np.random.default_rng(seed).choice(list(KINDS), size=n, p=weights / weights.sum())
    rows = pl.DataFrame({"row": pl.int_range(n, eager=True, dtype=pl.Int64), "kind": kinds}).with_columns(
        steps=6 + (pl.col("row") * 7919 + seed) % 6
    )
    rows = rows.with_columns(
        steps=pl.when(pl.col("kind") == "few_turns").then(3).otherwise(pl.col("steps")),
        # a duplicate replays the trajectory of the row before it
        seed=pl.when((pl.col("kind") == "duplicate") & (pl.col("row") > 0)).then(pl.col("row") - 1).otherwise("row"),
    )
    rows = rows.with_columns(
        steps=pl.when(pl.col("kind") == "duplicate").then(pl.col("steps").shift(1).fill_null(6)).otherwise("steps")
    )
    kind, pos, seed_col = pl.col("kind"), pl.col("pos"), pl.col("seed")
    msgs = (
        rows.with_columns(n_msgs=2 * pl.col("steps") + 3)
        .with_columns(pos=pl.int_ranges(0, "n_msgs"))
        .explode("pos")
        .with_columns(
            step=(pos - 2) // 2,
            is_call=(pos >= 2) & (pos < pl.col("n_msgs") - 1) & (pos % 2 == 0),
            is_result=(pos >= 2) & (pos < pl.col("n_msgs") - 1) & (pos % 2 == 1),
        )
    )
    call_id = pl.format("call_{}_{}", seed_col, pl.col("step"))
    arguments = (
        pl.when((kind == "bad_json") & (pl.col("step") == 2))
        .then(pl.lit('{"command": "ls'))
        .when((kind == "not_object") & (pl.col("step") == 1))
        .then(pl.lit('["ls"]'))
        .when((kind == "missing_arg") & (pl.col("step") == 3))
        .then(pl.lit('{"cmd": "ls"}'))
        .otherwise(pl.concat_str(pl.lit('{"command": "cd /app && echo '), seed_col, pl.lit(" "), "step", pl.lit('"}')))
    )
    tool_name = (
        pl.when((kind == "unknown_tool") & (pl.col("step") == 0)).then(pl.lit("python")).otherwise(pl.lit("bash"))
    )
    call = pl.struct(
        pl.when((kind == "dup_call_id") & (pl.col("step") == 1))
        .then(pl.format("call_{}_0", seed_col))
        .otherwise(call_id)
        .alias("id"),
        pl.lit("function").alias("type"),
        pl.struct(tool_name.alias("name"), arguments.alias("arguments")).alias("function"),
    )
    empty = (kind == "empty_assistant") & pl.col("is_call") & (pl.col("step") == 2)
    role = (
        pl.when(pos == 0)
        .then(pl.lit("system"))
        .when(pos == 1)
        .then(pl.when(kind == "assistant_first").then(pl.lit("assistant")).otherwise(pl.lit("user")))
        .when((kind == "late_system") & (pos == 4))
        .then(pl.lit("system"))
        .when(pl.col("is_result"))
        .then(pl.lit("tool"))
        .otherwise(pl.lit("assistant"))
    )
    content = (
        pl.when(pos == 0)
        .then(pl.lit("You are a coding agent. Use the tools to solve the task in /app."))
        .when(pos == 1)
        .then(pl.format("Solve task {}: make the tests in /app/tests pass.", seed_col))
        .when(pl.col("is_result") & (kind == "huge_output") & (pl.col("step") == 1))
        .then(pl.lit("x" * HUGE_CHARS))
        .when(pl.col("is_result"))
        .then(pl.format("{} {}\nexit code 0", seed_col, pl.col("step")))
        .when(empty)
        .then(pl.lit("  "))
        .when(pl.col("is_call"))
        .then(pl.format("Step {}: run the next command.", pl.col("step")))
        .otherwise(pl.lit("All tests pass now."))
    )
    reasoning = pl.when(pl.col("is_call") & ~empty).then(
        pl.format("I should check step {} of task {}.", "step", seed_col)
    )
    tool_call_id = (
        pl.when((kind == "orphan_result") & (pl.col("step") == 2))
        .then(pl.lit("call_unknown"))
        .when(pl.col("is_result"))
        .then(call_id)
    )
    dropped = ((kind == "no_result") & pl.col("is_result") & (pl.col("step") == 2)) | (
        (kind == "ends_with_tool") & (pos == pl.col("n_msgs") - 1)
    )
    msgs = msgs.filter(~dropped).select(
        "row",
        pl.struct(
            role.alias("role"),
            content.alias("content"),
            reasoning.alias("reasoning_content"),
            tool_call_id.alias("tool_call_id"),
            pl.lit(None, pl.String).alias("name"),
            pl.when(pl.col("is_call") & ~empty).then(pl.concat_list(call)).alias("tool_calls"),
        )
        .cast(MESSAGE_DTYPE)
        .alias("message"),
    )
    lists = msgs.group_by("row", maintain_order=True).agg(pl.col("message").alias("messages"))
    turns = pl.col("messages").list.eval(pl.element().struct.field("role") == "assistant").list.sum().cast(pl.Int64)
    usage = pl.struct(
        prompt_tokens=pl.lit(1000, pl.Int64),
        completion_tokens=pl.when(kind == "completion").then(pl.lit(5000, pl.Int64)).otherwise(pl.lit(300, pl.Int64)),
        reasoning_tokens=pl.lit(100, pl.Int64),
        reasoning_source=pl.lit("provider"),
    )
    side = pl.struct(kind=pl.lit("subagent"), turn=pl.lit(1, pl.Int64), tokens=pl.lit(500, pl.Int64))
    frame = rows.join(lists, on="row", how="left", maintain_order="left").with_columns(turns=turns)
    frame = frame.with_columns(
        rollout_id=pl.format("r{}", pl.col("row")),
        task=pl.format("bench/task-{}", seed_col),
        task_version=pl.format("v{}", seed_col),
        source=pl.when(pl.col("row") % 3 == 0).then(pl.lit("imported")).otherwise(pl.lit("local")),
        model=pl.lit("bench/model"),
        effort=pl.lit(["off", "low", "medium", "xhigh"]).list.get(pl.col("row") % 4),
        attempt=pl.col("row") % 4,
        round=pl.lit(0, pl.Int64),
        agent=pl.lit("qaflow"),
        tools_json=pl.lit(json.dumps(TOOLS)),
        usage=pl.concat_list(usage).list.gather(pl.int_ranges(0, pl.col("turns")).list.eval(pl.element() * 0)),
        thinking_tokens=pl.when(kind == "thinking").then(pl.lit(50_000)).otherwise(pl.col("turns") * 100),
        reward=pl.when(kind == "low_reward").then(pl.lit(0.0)).otherwise(pl.lit(1.0)),
        rewards_json=pl.lit(None, pl.String),
        full_reward=kind != "low_reward",
        exit_status=pl.when(kind.is_in(["agent_timeout", "verifier_timeout", "error"]))
        .then(kind)
        .otherwise(pl.lit("ok")),
        stop_reason=pl.lit("done"),
        error=pl.when(kind == "error").then(pl.lit("LLMError: provider returned 500")),
        verifier_output=pl.lit(""),
        side_calls=pl.when(kind == "side_call").then(pl.concat_list(side)).otherwise(pl.lit([], pl.List(side_dtype()))),
        timings_json=pl.lit("{}"),
        backend=pl.lit("bwrap"),
        run_id=pl.lit("bench"),
        created_at=pl.lit(datetime(2025, 1, 1, tzinfo=UTC)) + pl.duration(seconds=pl.col("row")),
        meta_json=pl.concat_str(
            pl.lit('{"bench_kind": "'), kind, pl.lit('", "changes": '), changes_json(kind), pl.lit("}")
        ),
        text_repaired=kind == "repaired",
    )
    return frame.select([pl.col(c).cast(t) for c, t in ROLLOUT_SCHEMA.items()])


SITE = "/usr/local/lib/python3.11/site-packages"
CHANGES = {
    # a package install writes its own .pth beside its RECORD: no hack
    "installs": {"created": ["/app/out.txt", f"{SITE}/pkg.pth", f"{SITE}/pkg-1.0.dist-info/RECORD"]},
    "reward_hack": {"created": ["/app/out.txt", "/app/conftest.py"]},
}


def changes_json(kind: pl.Expr) -> pl.Expr:
    """Each row's `meta.changes`: what its agent changed (most rows: the output alone)."""

    def record(created: list[str]) -> str:
        return json.dumps({"created": created, "modified": [], "deleted": [], "error": None, "truncated": False})

    expr = pl.lit(record(["/app/out.txt"]))
    for name, change in CHANGES.items():
        expr = pl.when(kind == name).then(pl.lit(record(change["created"]))).otherwise(expr)
    return expr


def side_dtype() -> pl.DataType:
    inner = ROLLOUT_SCHEMA["side_calls"]
    assert isinstance(inner, pl.List)
    return inner.inner


# ---- the plain-Python baseline: the same checks, one row at a time ----

ROLES = {"system", "user", "assistant", "tool"}


def _reject(constant: str) -> Any:
    raise ValueError(constant)


def _required_by_tool(tools_json: str | None) -> dict[str, list[str]]:
    try:
        tools = json.loads(tools_json or "")
    except ValueError:
        return {}
    out: dict[str, list[str]] = {}
    for tool in tools if isinstance(tools, list) else []:
        spec = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            params = spec.get("parameters")
            required = params.get("required") if isinstance(params, dict) else None
            out[spec["name"]] = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    return out


def _blank(text: str | None) -> bool:
    return not (text or "").strip()


def python_structure_ok(messages: list[dict[str, Any]] | None, required: dict[str, list[str]]) -> bool:
    if not messages:
        return False
    messages = [m or {} for m in messages]
    roles = [m.get("role") or "" for m in messages]
    start = 1 if roles[0] == "system" else 0
    if start >= len(roles) or roles[start] != "user" or roles[-1] != "assistant" or messages[-1].get("tool_calls"):
        return False
    seen_ids: set[str] = set()
    pending: dict[str, int] = {}
    for i, (message, role) in enumerate(zip(messages, roles, strict=True)):
        if role not in ROLES or (role == "system" and i > 0):
            return False
        if role == "tool":
            if i == 0 or roles[i - 1] not in ("assistant", "tool"):
                return False
            call_id = message.get("tool_call_id") or ""
            if call_id not in pending:
                return False
            pending[call_id] += 1
            continue
        if any(count != 1 for count in pending.values()):
            return False
        pending = {}
        if role != "assistant":
            if message.get("tool_calls"):
                return False
            continue
        calls = message.get("tool_calls") or []
        if not calls and _blank(message.get("content")) and _blank(message.get("reasoning_content")):
            return False
        for call in calls:
            call = call or {}
            call_id = call.get("id") or ""
            if not call_id or call_id in seen_ids:
                return False
            seen_ids.add(call_id)
            pending[call_id] = 0
            function = call.get("function") or {}
            try:
                args = json.loads(function.get("arguments") or "", parse_constant=_reject)
            except ValueError:
                return False
            name = function.get("name") or ""
            if not isinstance(args, dict) or name not in required:
                return False
            if any(args.get(key) is None for key in required[name]):
                return False
    return True


def python_filter(rows: Iterable[dict[str, Any]], config: FilterConfig) -> dict[str, str | None]:
    """rollout_id -> the rule that removed it (None: kept), the rules applied in order as a funnel."""
    verdict: dict[str, str | None] = {}
    alive = list(rows)
    tool_cache: dict[str | None, dict[str, list[str]]] = {}
    for rule in config.rules:
        survivors = []
        if isinstance(rule, Dedup):
            seen: set[str] = set()
            order = sorted(alive, key=lambda r: tuple(r[c] for c in rule.order_by), reverse=rule.descending)
            drop = set()
            for row in order:
                key = json.dumps(row["messages"])
                if key in seen:
                    drop.add(row["rollout_id"])
                seen.add(key)
        for row in alive:
            if isinstance(rule, NoTimeout):
                bad = {"agent_timeout", "verifier_timeout"} | ({"error"} if rule.drop_errors else set())
                ok = row["exit_status"] is not None and row["exit_status"] not in bad
            elif isinstance(rule, VerifierPassed):
                if rule.full_reward:
                    ok = bool(row["full_reward"])
                else:
                    ok = row["reward"] is not None and row["reward"] >= rule.min_reward
            elif isinstance(rule, NoSideCalls):
                ok = not any(s["kind"] in rule.kinds for s in row["side_calls"] or [])
            elif isinstance(rule, CleanText):
                ok = not row["text_repaired"]
            elif isinstance(rule, MinTurns):
                ok = sum(1 for m in row["messages"] or [] if m and m["role"] == "assistant") >= rule.n
            elif isinstance(rule, TokenBudget):
                ok = _within_budget(row, rule)
            elif isinstance(rule, StructureValid):
                if row["tools_json"] not in tool_cache:
                    tool_cache[row["tools_json"]] = _required_by_tool(row["tools_json"])
                ok = python_structure_ok(row["messages"], tool_cache[row["tools_json"]])
            elif isinstance(rule, RewardHack):
                hack = rewarded_hack(row["reward"], row["meta_json"], row["messages"], rule.allow, rule.unrecorded)
                ok = hack is None
            elif isinstance(rule, Dedup):
                ok = row["rollout_id"] not in drop
            else:
                raise TypeError(f"the baseline has no {rule.rule} rule")
            if ok:
                survivors.append(row)
            else:
                verdict[row["rollout_id"]] = rule.step
        alive = survivors
    for row in alive:
        verdict[row["rollout_id"]] = None
    return verdict


def _within_budget(row: dict[str, Any], rule: TokenBudget) -> bool:
    if rule.max_thinking_tokens is not None and (row["thinking_tokens"] or 0) > rule.max_thinking_tokens:
        return False
    completion = sum(u["completion_tokens"] or 0 for u in row["usage"] or [])
    if rule.max_completion_tokens is not None and completion > rule.max_completion_tokens:
        return False
    if rule.max_message_chars is not None:
        for m in row["messages"] or []:
            m = m or {}
            size = len(m.get("content") or "") + len(m.get("reasoning_content") or "")
            size += sum(
                len(((c or {}).get("function") or {}).get("arguments") or "") for c in m.get("tool_calls") or []
            )
            if size > rule.max_message_chars:
                return False
    return True


BASELINE_COLUMNS = [
    "rollout_id", "messages", "tools_json", "usage", "thinking_tokens", "reward", "full_reward", "exit_status",
    "side_calls", "text_repaired", "created_at", "meta_json",
]  # fmt: skip


def polars_verdict(frame: pl.DataFrame, config: FilterConfig) -> dict[str, str | None]:
    """rollout_id -> the rule that removed it (None: kept), from `apply_filters`."""
    result = apply_filters(frame, config)
    verdict: dict[str, str | None] = dict.fromkeys(result.kept["rollout_id"].to_list())
    verdict.update(zip(result.removed["rollout_id"].to_list(), result.removed["rule"].to_list(), strict=True))
    return verdict


def best_of(repeats: int, fn: Callable[[], T]) -> tuple[float, float, T]:
    """The shortest wall time of `repeats` calls, the CPU time (all threads) of that call, and the last value."""
    best, cpu = float("inf"), float("inf")
    for _ in range(repeats):
        wall0, cpu0 = time.perf_counter(), time.process_time()
        value = fn()
        wall = time.perf_counter() - wall0
        if wall < best:
            best, cpu = wall, time.process_time() - cpu0
    return best, cpu, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2, help="timed runs of each side; the best counts")
    args = parser.parse_args()
    config = bench_config()

    t0 = time.perf_counter()
    frame = synthetic_frame(args.rows, args.seed)
    n_messages = int(frame["messages"].list.len().sum())
    print(f"generated {frame.height:,} rollouts, {n_messages:,} messages in {time.perf_counter() - t0:.1f} s")

    polars_s, polars_cpu, ours = best_of(args.repeats, lambda: polars_verdict(frame, config))
    t0 = time.perf_counter()
    rows = frame.select(BASELINE_COLUMNS).to_dicts()
    convert_s = time.perf_counter() - t0
    python_s, python_cpu, baseline = best_of(args.repeats, lambda: python_filter(rows, config))

    print(apply_filters(frame, config).funnel)
    differ = [rid for rid in baseline if baseline[rid] != ours.get(rid)]
    if differ or len(ours) != len(baseline):
        sys.exit(f"polars and the Python loop disagree on {len(differ)} rows, e.g. {differ[:5]}")
    kept = sum(1 for rule in ours.values() if rule is None)
    ratio = python_s / polars_s
    print(f"kept {kept:,} of {frame.height:,}; both sides agree on every row and the rule that removed it")
    print(f"polars  {polars_s:6.2f} s  (CPU {polars_cpu:.2f} s, best of {args.repeats})")
    print(f"python  {python_s:6.2f} s  (CPU {python_cpu:.2f} s, best of {args.repeats})")
    print(f"        and {convert_s:.1f} s to turn the frame into Python dicts for the loop, not counted")
    print(f"ratio   {ratio:6.1f}x  (target >= 5x, polars under 30 s)")
    if ratio < 5 or polars_s >= 30:
        sys.exit("target missed")


if __name__ == "__main__":
    main()
