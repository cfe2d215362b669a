"""Rollout filters: named, configurable rules applied to a rollout frame as a funnel.

A rule looks at a frame (`ROLLOUT_SCHEMA`) and returns a `Verdict`: a boolean "keep" per row and a
reason for the rows it removes. `apply_filters` runs the rules in the order the config lists them;
each rule sees only the rows that survived the ones before it, so the funnel counts a row once, at
the first rule that removed it, and `rows_in - sum(removed) == rows_out` holds overall and per
(source, effort). A null "keep" counts as a removal: broken or missing data never passes silently.

Config (YAML, TOML or JSON), rules in funnel order; a rule is its name alone, a mapping with a
`rule` key, or a one-key mapping of name to options:

    rules:
      - no_timeout
      - rule: verifier_passed
        full_reward: false
        min_reward: 0.5
      - min_turns: {n: 3}
      - {rule: column, column: effort, op: in, value: [medium, xhigh]}
      - {rule: user, entry_point: "mypackage.rules:short_tasks", options: {max_chars: 20000}}

The structural checks explode the messages into one row per message and per tool call and work
with joins and group-bys; nothing loops over rows in Python.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from curation.filter_structure import field_of, structure_reasons
from qaflow.config_file import load_config
from qaflow.errors import ConfigError
from qaflow.models.frame import ROLLOUT_SCHEMA, empty_frame
from qaflow.models.rollout import is_scripted
from qaflow.rollouts.changes import CHANGES_KEY
from qaflow.rollouts.hacks import rewarded_hack


class FilterConfigError(ConfigError):
    """A filter config file cannot be used. `path` names the file, `reason` says why."""


@dataclass(frozen=True)
class Verdict:
    """What a rule says about each row of the frame it was given (Series are row-aligned)."""

    keep: pl.Expr | pl.Series
    reason: pl.Expr | pl.Series | str


class Rule(BaseModel):
    """Base of the rules: a pydantic config that can judge a frame."""

    model_config = ConfigDict(extra="forbid")

    rule: str
    name: str | None = Field(
        None, description="Funnel step label; defaults to the rule name (set it to use a rule twice)."
    )

    @property
    def step(self) -> str:
        return self.name or self.rule

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        """Judge every row of `frame`. Rows where `alive` is false were removed by an earlier rule:
        their verdict is ignored, and a rule that compares rows must leave them out."""
        raise NotImplementedError


class VerifierPassed(Rule):
    rule: Literal["verifier_passed"] = "verifier_passed"
    full_reward: bool = Field(True, description="Keep only rows with full reward; false: reward >= min_reward.")
    min_reward: float = Field(1.0, description="Lowest reward kept when full_reward is false.")

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        reward = pl.col("reward")
        if self.full_reward:
            keep = pl.col("full_reward")
            failed = pl.format("reward {} is not full", reward)
        else:
            keep = reward >= self.min_reward
            failed = pl.format("reward {} < {}", reward, pl.lit(self.min_reward))
        return Verdict(keep, pl.when(reward.is_null()).then(pl.lit("no reward")).otherwise(failed))


class NoTimeout(Rule):
    rule: Literal["no_timeout"] = "no_timeout"
    drop_errors: bool = Field(True, description="Also remove rows whose exit status is error.")

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        status = pl.col("exit_status")
        dropped = ["agent_timeout", "verifier_timeout"] + (["error"] if self.drop_errors else [])
        reason = (
            pl.when(status.is_null())
            .then(pl.lit("exit status missing"))
            .when(status == "error")
            .then(pl.format("error: {}", pl.col("error").fill_null("(no message)").str.slice(0, 200)))
            .otherwise(status.str.replace("_", " "))
        )
        return Verdict(status.is_not_null() & ~status.is_in(dropped), reason)


class NotScripted(Rule):
    """Rollouts of scripted policies (replays of reference solutions, test scripts) are not model behaviour."""

    rule: Literal["not_scripted"] = "not_scripted"

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        scripted = pl.Series(
            [is_scripted(m, j) for m, j in zip(frame["model"], frame["meta_json"], strict=True)], dtype=pl.Boolean
        )
        return Verdict(~scripted, pl.format("scripted policy, not a model ({})", pl.col("model")))


class NoSideCalls(Rule):
    rule: Literal["no_side_calls"] = "no_side_calls"
    kinds: list[str] = Field(["subagent", "summarisation"], description="Side-call kinds that remove a row.")

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        kinds = pl.col("side_calls").list.eval(field_of("kind").filter(field_of("kind").is_in(self.kinds)))
        n = kinds.list.len().fill_null(0)
        reason = pl.format("{} side calls ({})", n, kinds.list.unique(maintain_order=True).list.join(", "))
        return Verdict(n == 0, reason)


class CleanText(Rule):
    rule: Literal["clean_text"] = "clean_text"

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        return Verdict(~pl.col("text_repaired").fill_null(False), "text had bytes that are not UTF-8 (replaced)")


def assistant_turns() -> pl.Expr:
    """Assistant messages per row (the turns `min_turns` counts)."""
    return pl.col("messages").list.eval(field_of("role") == "assistant").list.sum().fill_null(0)


class MinTurns(Rule):
    rule: Literal["min_turns"] = "min_turns"
    n: int = Field(5, ge=0, description="Fewest assistant turns kept.")

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        turns = assistant_turns()
        return Verdict(turns >= self.n, pl.format("{} turns < {}", turns, pl.lit(self.n)))


def message_chars() -> pl.Expr:
    """Per row, the list of each message's size: content + reasoning + tool-call arguments, in characters."""
    arguments = field_of("tool_calls").list.eval(field_of("function").struct.field("arguments").str.len_chars())
    size = (
        field_of("content").str.len_chars().fill_null(0)
        + field_of("reasoning_content").str.len_chars().fill_null(0)
        + arguments.list.sum().fill_null(0)
    )
    return pl.col("messages").list.eval(size)


class TokenBudget(Rule):
    rule: Literal["token_budget"] = "token_budget"
    max_thinking_tokens: int | None = Field(None, ge=0, description="Most reasoning tokens over the rollout.")
    max_completion_tokens: int | None = Field(None, ge=0, description="Most completion tokens over all turns.")
    max_message_chars: int | None = Field(
        200_000, ge=0, description="Most characters in any one message (content, reasoning and arguments)."
    )

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        checks: list[tuple[pl.Expr, pl.Expr]] = []
        if self.max_thinking_tokens is not None:
            thinking = pl.col("thinking_tokens").fill_null(0)
            checks.append(
                (
                    thinking > self.max_thinking_tokens,
                    pl.format("{} thinking tokens > {}", thinking, pl.lit(self.max_thinking_tokens)),
                )
            )
        if self.max_completion_tokens is not None:
            completion = pl.col("usage").list.eval(field_of("completion_tokens")).list.sum().fill_null(0)
            limit = pl.lit(self.max_completion_tokens)
            checks.append((completion > limit, pl.format("{} completion tokens > {}", completion, limit)))
        if self.max_message_chars is not None:
            chars = message_chars()
            longest = chars.list.max().fill_null(0)
            limit = pl.lit(self.max_message_chars)
            checks.append(
                (longest > limit, pl.format("message {} has {} chars > {}", chars.list.arg_max(), longest, limit))
            )
        if not checks:
            return Verdict(pl.lit(True), "")
        reason = pl.coalesce(pl.when(over).then(text) for over, text in checks)  # the first check that fails
        return Verdict(~pl.any_horizontal(over for over, _ in checks), reason)


_SCALAR_COLUMNS = sorted(c for c, t in ROLLOUT_SCHEMA.items() if not isinstance(t, pl.List))


def _scalar_column(column: str) -> str:
    if column not in _SCALAR_COLUMNS:
        raise ValueError(f"unknown or non-scalar column {column!r}; one of {', '.join(_SCALAR_COLUMNS)}")
    return column


class Dedup(Rule):
    rule: Literal["dedup"] = "dedup"
    order_by: list[str] = Field(
        ["created_at", "rollout_id"], description="Order in which the first of identical trajectories is kept."
    )
    descending: bool = Field(False, description="Keep the last by order_by instead of the first.")

    @field_validator("order_by")
    @classmethod
    def _columns(cls, value: list[str]) -> list[str]:
        return [_scalar_column(c) for c in value]

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        # A cheap key (a hash of the message texts) finds the candidates; identity is then decided on
        # the full messages, only among rows whose key occurs more than once.
        texts = pl.col("messages").list.eval(field_of("content").hash() ^ field_of("tool_call_id").hash()).hash()
        ordered = frame.select(*dict.fromkeys(["rollout_id", *self.order_by]), texts.alias("key")).with_row_index("_i")
        if alive is not None:
            ordered = ordered.filter(alive)
        shared = ordered.filter(pl.col("key").is_duplicated())
        in_shared = pl.repeat(False, frame.height, eager=True).scatter(shared["_i"], True)
        candidates = shared.with_columns(messages=frame["messages"].filter(in_shared))
        if self.order_by:
            candidates = candidates.sort(
                self.order_by, descending=self.descending, nulls_last=True, maintain_order=True
            )
        candidates = candidates.with_columns(
            first=pl.col("messages").is_first_distinct(), order=pl.int_range(pl.len()), full=pl.col("messages").hash()
        )
        # the copy names the first row with the same messages hash (among rows of the same text key)
        originals = candidates.filter("first").select("key", "full", "order", pl.col("rollout_id").alias("original"))
        copies = (
            candidates.filter(~pl.col("first"))
            .join(originals, on=["key", "full"], how="left", suffix="_first")
            .sort("order_first")
            .unique("_i", keep="first")
        )
        keep = pl.repeat(True, frame.height, eager=True).scatter(copies["_i"], False)
        reason = pl.repeat(None, frame.height, dtype=pl.String, eager=True).scatter(
            copies["_i"], copies.select(pl.format("duplicate of {}", pl.col("original").fill_null("?"))).to_series()
        )
        return Verdict(keep, reason)


_OPS: dict[str, Callable[[pl.Expr, Any], pl.Expr]] = {
    "==": lambda c, v: c == v,
    "!=": lambda c, v: c != v,
    "<": lambda c, v: c < v,
    "<=": lambda c, v: c <= v,
    ">": lambda c, v: c > v,
    ">=": lambda c, v: c >= v,
    "in": lambda c, v: c.is_in(v),
    "not_in": lambda c, v: ~c.is_in(v),
}


def _boolean_on_schema(build: Callable[[], pl.Expr], what: str) -> pl.Expr:
    """The expression `build` returns, checked to be a boolean over a rollout frame."""
    try:
        expr = build()
        dtype = empty_frame().select(expr).to_series().dtype
    except (pl.exceptions.PolarsError, TypeError, ValueError) as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{what} does not apply to a rollout frame: {first_line}") from e
    if dtype != pl.Boolean:
        raise ValueError(f"{what} must be boolean, got {dtype}")
    return expr


class ColumnRule(Rule):
    """Declarative rule on one column: keep rows where `column op value` is true (null never passes)."""

    rule: Literal["column"] = "column"
    column: str
    op: Literal["==", "!=", "<", "<=", ">", ">=", "in", "not_in"]
    value: Any

    @property
    def step(self) -> str:
        return self.name or f"{self.column} {self.op} {self.value}"

    @model_validator(mode="after")
    def _valid(self) -> ColumnRule:
        _scalar_column(self.column)
        if self.op in ("in", "not_in") and not isinstance(self.value, list):
            raise ValueError(f"op {self.op} needs a list value, got {self.value!r}")
        _boolean_on_schema(self.keep, f"column rule {self.step!r}")
        return self

    def keep(self) -> pl.Expr:
        return _OPS[self.op](pl.col(self.column), self.value)

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        actual = pl.col(self.column).cast(pl.String).fill_null("null")
        prefix = f"{self.column} {self.op} {self.value!r} is false ({self.column} = "
        return Verdict(self.keep(), pl.concat_str(pl.lit(prefix), actual, pl.lit(")")))


class UserRule(Rule):
    """A rule written in Python: `entry_point` names `module:function`; `function(**options)` returns a
    boolean polars expression over the rollout frame that is true for rows to keep."""

    rule: Literal["user"] = "user"
    entry_point: str = Field(pattern=r"^[\w.]+:\w+$")
    options: dict[str, Any] = Field(default_factory=dict)
    _expr: pl.Expr | None = PrivateAttr(None)

    @property
    def step(self) -> str:
        return self.name or self.entry_point

    @model_validator(mode="after")
    def _resolve(self) -> UserRule:
        module_name, func_name = self.entry_point.split(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as e:  # user code: any failure to import is a config error naming it
            raise ValueError(f"cannot import {module_name}: {type(e).__name__}: {e}") from e
        func = getattr(module, func_name, None)
        if not callable(func):
            raise ValueError(f"{self.entry_point} is not a function")
        try:
            expr = func(**self.options)
        except Exception as e:  # user code, called with the options from the config file
            raise ValueError(f"{self.entry_point}(**{self.options}) failed: {type(e).__name__}: {e}") from e
        if not isinstance(expr, pl.Expr):
            raise ValueError(f"{self.entry_point} returned {type(expr).__name__}, not a polars expression")
        self._expr = _boolean_on_schema(lambda: expr, self.entry_point)
        return self

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        assert self._expr is not None
        reason = f"{self.entry_point} is false"
        if alive is None or alive.all():
            return Verdict(self._expr, reason)
        # the expression may compare rows (a mean, a rank), so it only sees the rows still in the funnel
        survivors = frame.filter(alive).select(self._expr.fill_null(False)).to_series()
        return Verdict(pl.repeat(True, frame.height, eager=True).scatter(alive.arg_true(), survivors), reason)


class StructureValid(Rule):
    rule: Literal["structure_valid"] = "structure_valid"

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        reasons = structure_reasons(frame)
        return Verdict(reasons.is_null(), reasons)


EDGE_HINTS = (
    r'/tests|/logs/verifier|conftest\.py|pytest\.ini|customize\.py|\.pth"|/\.bash|/\.profile|/\.zsh|/etc/'
    r'|"error": ?"|"task_edges": ?\["'
)
"""A substring of every meta_json holding a trust-edge path (`qaflow.audit.trust_edges`) or a listing error."""
CHANGES_HINT = f'"{CHANGES_KEY}":'


class RewardHack(Rule):
    """A rewarded attempt that changed a trust edge of the verifier (its files, its reward, a pytest or
    Python start-up hook, a shell start-up file) outside what the instruction names is removed, with the path."""

    rule: Literal["reward_hack"] = "reward_hack"
    allow: list[str] = Field(default_factory=list, description="Globs of paths never counted (e.g. /root/.profile).")
    unrecorded: bool = Field(True, description="Remove a rewarded attempt whose change listing failed.")

    def check(self, frame: pl.DataFrame, alive: pl.Series | None = None) -> Verdict:
        # a vectorised pass keeps the rows whose meta could hold an edge path or a listing error; only
        # those are judged path by path
        meta = pl.col("meta_json").fill_null("")
        candidates = frame.select(
            (pl.col("reward").fill_null(0.0) > 0)
            & meta.str.contains(CHANGES_HINT, literal=True)
            & meta.str.contains(EDGE_HINTS)
        ).to_series()
        reasons: list[str | None] = [None] * frame.height
        for i in candidates.arg_true().to_list():
            if alive is not None and not alive[i]:
                continue
            messages = frame["messages"][i].to_list()
            reasons[i] = rewarded_hack(frame["reward"][i], frame["meta_json"][i], messages, self.allow, self.unrecorded)
        reason = pl.Series(reasons, dtype=pl.String)
        return Verdict(reason.is_null(), reason)


AnyRule = Annotated[
    NotScripted
    | VerifierPassed
    | NoTimeout
    | NoSideCalls
    | CleanText
    | MinTurns
    | TokenBudget
    | StructureValid
    | RewardHack
    | Dedup
    | ColumnRule
    | UserRule,
    Field(discriminator="rule"),
]
BUILTIN_RULES: tuple[type[Rule], ...] = (
    NotScripted,
    NoTimeout,
    VerifierPassed,
    NoSideCalls,
    CleanText,
    MinTurns,
    TokenBudget,
    StructureValid,
    RewardHack,
    Dedup,
)
_RULE_CLASSES: tuple[type[BaseModel], ...] = (*BUILTIN_RULES, ColumnRule, UserRule)
RULE_NAMES = tuple(r.model_fields["rule"].default for r in _RULE_CLASSES)


def _rule_entry(entry: Any) -> Any:
    if isinstance(entry, str):
        return {"rule": entry}
    if isinstance(entry, dict) and "rule" not in entry and len(entry) == 1:
        ((key, options),) = entry.items()
        if key in RULE_NAMES and isinstance(options, dict | None):
            return {"rule": key, **(options or {})}
    return entry


def builtin_rules() -> list[AnyRule]:
    """A fresh instance of every built-in rule, in funnel order."""
    return cast(list[AnyRule], [rule.model_validate({}) for rule in BUILTIN_RULES])


class FilterConfig(BaseModel):
    """The rules of a filter run, in funnel order (the order they are listed in)."""

    model_config = ConfigDict(extra="forbid")

    rules: list[AnyRule] = Field(default_factory=lambda: builtin_rules())

    @field_validator("rules", mode="before")
    @classmethod
    def _normalise(cls, value: Any) -> Any:
        return [_rule_entry(e) for e in value] if isinstance(value, list) else value

    @model_validator(mode="after")
    def _unique_steps(self) -> FilterConfig:
        steps = [r.step for r in self.rules]
        twice = sorted({s for s in steps if steps.count(s) > 1})
        if twice:
            raise ValueError(f"step names used twice: {', '.join(twice)} (give each a distinct `name`)")
        return self

    @classmethod
    def load(cls, path: Path | str) -> FilterConfig:
        """A config from a YAML, TOML or JSON file (by suffix): a `rules` list, or the list itself.

        Raises:
            FilterConfigError: unreadable or invalid, naming the file and every problem.
        """
        return load_config(path, cls, what="filter config", list_key="rules", error=FilterConfigError)


GROUP_KEYS = ("source", "effort")
REMOVED_SCHEMA = {
    "rollout_id": pl.String,
    "rule": pl.String,
    "reason": pl.String,
    "source": pl.String,
    "effort": pl.String,
}


@dataclass
class FilterResult:
    """Kept rows (ROLLOUT_SCHEMA), removed rows with their rule and reason, and the funnel overall and by group."""

    kept: pl.DataFrame
    removed: pl.DataFrame
    funnel: pl.DataFrame
    funnel_by_group: pl.DataFrame

    def summary(self) -> dict[str, Any]:
        rows_in = int(self.funnel["rows_in"][0]) if self.funnel.height else self.kept.height
        return {
            "rows_in": rows_in,
            "rows_out": self.kept.height,
            "steps": self.funnel.to_dicts(),
            "by_group": self.funnel_by_group.to_dicts(),
        }


def _group_cols() -> list[pl.Expr]:
    return [pl.col(k).fill_null("") for k in GROUP_KEYS]


def apply_filters(frame: pl.DataFrame, config: FilterConfig | None = None) -> FilterResult:
    """Run the config's rules over `frame` in order and account for every row removed."""
    config = config or FilterConfig()
    frame = frame.select([pl.col(c).cast(t) for c, t in ROLLOUT_SCHEMA.items()])
    # Every rule judges the whole frame; `alive` marks the rows still in the funnel, and only their
    # verdicts count (rules that compare rows, dedup and user rules, look at those rows alone).
    alive = pl.repeat(True, frame.height, eager=True)
    removed: list[pl.DataFrame] = []
    for rule in config.rules:
        verdict = rule.check(frame, alive)
        keep = frame.with_columns(verdict.keep.alias("_keep"))["_keep"].fill_null(False)
        gone = alive & ~keep
        reason = verdict.reason
        tagged = frame.lazy().with_columns(_gone=gone)
        if isinstance(reason, pl.Series):
            tagged, reason = tagged.with_columns(_reason=reason), pl.col("_reason")
        elif isinstance(reason, str):
            reason = pl.lit(reason)
        removed.append(
            tagged.filter("_gone")
            .select(
                "rollout_id",
                pl.lit(rule.step).alias("rule"),
                reason.cast(pl.String).fill_null(f"removed by {rule.step}").alias("reason"),
                *_group_cols(),
            )
            .collect()
        )
        alive = alive & keep
    removed_frame = pl.concat(removed) if removed else pl.DataFrame(schema=REMOVED_SCHEMA)
    funnel, by_group = funnel_tables(frame, removed_frame, [r.step for r in config.rules])
    return FilterResult(frame.filter(alive), removed_frame, funnel, by_group)


def funnel_tables(frame: pl.DataFrame, removed: pl.DataFrame, steps: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The funnel (step, rule, rows_in, removed, rows_out) overall and by (source, effort)."""
    step_frame = pl.DataFrame(
        {"step": list(range(1, len(steps) + 1)), "rule": steps}, schema={"step": pl.Int64, "rule": pl.String}
    )
    counts = removed.group_by("rule", *GROUP_KEYS).len("removed")
    groups = frame.select(_group_cols()).group_by(*GROUP_KEYS).len("rows")

    def walk(grid: pl.DataFrame, start: pl.Expr, by: list[str]) -> pl.DataFrame:
        gone = pl.col("removed").cum_sum()
        gone = gone.over(partition_by=by, order_by="step") if by else gone
        grid = grid.sort(*by, "step").with_columns(pl.col("removed").fill_null(0).cast(pl.Int64))
        return grid.with_columns(rows_out=(start - gone).cast(pl.Int64)).select(
            *by, "step", "rule", (pl.col("rows_out") + pl.col("removed")).alias("rows_in"), "removed", "rows_out"
        )

    overall = step_frame.join(
        counts.group_by("rule").agg(pl.col("removed").sum()), on="rule", how="left", maintain_order="left"
    )
    funnel = walk(overall, pl.lit(frame.height), [])
    grid = step_frame.join(groups, how="cross").join(counts, on=["rule", *GROUP_KEYS], how="left")
    by_group = walk(grid, pl.col("rows"), list(GROUP_KEYS))
    return funnel, by_group
