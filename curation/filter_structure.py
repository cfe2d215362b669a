"""The session-structure rules, vectorised, shared by the `structure_valid` filter rule and the export's
guard (one rule set: a row the filter calls sound exports, and the reverse): every tool call answered
exactly once by id, arguments valid JSON objects with the offered tool's required keys, legal role
order, no empty assistant turn, ends with an assistant turn whose calls (if any) have results.
Messages are exploded into one row per message and per tool call and checked with joins and
group-bys; nothing loops over rows in Python.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from curation.removal_reasons import RemovalReason


def field_of(name: str) -> pl.Expr:
    return pl.element().struct.field(name)


def _offered_tools(tools_json: pl.Series) -> tuple[pl.Series, pl.DataFrame]:
    """A small key per row for its tools_json, and (key, tool name, required argument names) of each
    distinct tools_json value; each distinct value is parsed once."""
    distinct = tools_json.drop_nulls().unique(maintain_order=True)
    keys = pl.DataFrame({"tools_json": distinct}).with_row_index("tk")
    per_row = tools_json.to_frame("tools_json").join(keys, on="tools_json", how="left", maintain_order="left")["tk"]
    rows: list[dict[str, Any]] = []
    for key, text in enumerate(distinct.to_list()):
        try:
            tools = json.loads(text)
        except ValueError:
            continue
        for tool in tools if isinstance(tools, list) else []:
            spec = tool.get("function", tool) if isinstance(tool, dict) else None
            if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
                continue
            params = spec.get("parameters")
            required = params.get("required") if isinstance(params, dict) else None
            names = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
            rows.append({"tk": key, "tool": spec["name"], "required": names})
    table = pl.DataFrame(rows, schema={"tk": pl.UInt32, "tool": pl.String, "required": pl.List(pl.String)})
    return per_row, table


ROLES = ("system", "user", "assistant", "tool")
ROLE_ORDER_HELP = "optional system, then user, then assistant/tool/user"

# message-level problems, by code; the code also orders problems found at the same position
_UNKNOWN_ROLE, _LATE_SYSTEM, _CALLS_OFF_TURN, _STRAY_RESULT, _RESULT_WITHOUT_ID = 1, 2, 3, 4, 5


def _role_name(role: pl.Expr) -> pl.Expr:
    return pl.when(role.is_null()).then(pl.lit("(missing)")).when(role == "").then(pl.lit("''")).otherwise(role)


def structure_reasons(frame: pl.DataFrame) -> pl.Series:
    """Per row, the first structural problem of its messages (by position), or null when the row is sound."""
    return structure_problems(frame)["reason"]


def structure_problems(frame: pl.DataFrame) -> pl.DataFrame:
    """Per row, the first structural problem of its messages (by position) as `reason` (the words) and
    `kind` (a `RemovalReason` value), both null when the row is sound.

    Long on purpose: one flat list of structural checks over a session, each a few lines, read top to bottom.
    """
    lengths = frame["messages"].list.len().fill_null(0)
    roles = pl.col("messages").list.eval(field_of("role"))
    rows = frame.select(
        pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"),
        lengths.alias("n"),
        roles.list.first().alias("first"),
        roles.list.get(1, null_on_oob=True).alias("second"),
        roles.list.last().alias("last"),
        roles.list.contains("assistant").fill_null(False).alias("assistant"),
        pl.col("messages").list.last().struct.field("tool_calls").list.len().fill_null(0).alias("last_calls"),
    )
    n, last_role = pl.col("n"), _role_name(pl.col("last"))
    start_pos = pl.when(pl.col("first") == "system").then(1).otherwise(0)
    start_role = _role_name(pl.when(pl.col("first") == "system").then(pl.col("second")).otherwise(pl.col("first")))
    found = [
        _violations(rows, n == 0, -1, 0, pl.lit("no messages"), RemovalReason.NO_MESSAGES),
        _violations(
            rows,
            (n > 0) & (start_role.fill_null("") != "user"),
            start_pos,
            1,
            pl.format("message {} is {}, not user ({})", start_pos, start_role, pl.lit(ROLE_ORDER_HELP)),
            RemovalReason.BAD_ORDER,
        ),
        _violations(
            rows,
            (n > 0) & (pl.col("last").fill_null("") != "assistant"),
            n - 1,
            0,
            pl.format("ends with a {} message, not an assistant turn", last_role),
            pl.when(pl.col("assistant"))
            .then(pl.lit(RemovalReason.UNFINISHED.value))
            .otherwise(pl.lit(RemovalReason.NO_ASSISTANT_TURN.value)),
        ),
        _violations(
            rows,
            (pl.col("last") == "assistant") & (pl.col("last_calls") > 0),
            n - 1,
            0,
            pl.lit("ends with an assistant turn whose tool calls have no results"),
            RemovalReason.UNANSWERED_TOOL_CALL,
        ),
    ]

    starts = (lengths.cum_sum() - lengths).cast(pl.Int64)
    message = pl.col("messages")
    msgs = (
        frame.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"), "messages")
        .explode("messages", keep_nulls=False)
        .select(
            "row",
            pl.int_range(pl.len(), dtype=pl.Int64).alias("g"),
            message.struct.field("role").fill_null("").alias("role"),
            message.struct.field("content"),
            message.struct.field("reasoning_content"),
            message.struct.field("tool_call_id").fill_null("").alias("tool_call_id"),
            message.struct.field("tool_calls"),
        )
        .with_columns(
            pos=pl.col("g") - pl.lit(starts).gather(pl.col("row")), n_calls=pl.col("tool_calls").list.len().fill_null(0)
        )
    )
    role, pos = pl.col("role"), pl.col("pos")
    turn_start = (role != "tool") | (pos == 0)
    msgs = msgs.with_columns(
        # the assistant turn a tool result belongs to: the last assistant message at or before it
        block=pl.when(role == "assistant").then(pl.col("g")).when(pos == 0).then(-1).forward_fill(),
        # the message that starts the run of tool messages this one is in (itself when not a tool)
        run=pl.when(turn_start).then(pl.col("g")).forward_fill(),
        # an assistant turn whose calls are as many as the tool messages right after it
        even=pl.col("n_calls")
        == pl.when(role == "assistant")
        .then(pl.when(turn_start).then(pl.col("g")).shift(-1).backward_fill().fill_null(pl.len()) - pl.col("g") - 1)
        .otherwise(0),
    )
    answers = (role == "tool") & (pl.col("block") == pl.col("run"))
    code = (
        pl.when(~role.is_in(ROLES))
        .then(_UNKNOWN_ROLE)
        .when((role == "system") & (pos > 0))
        .then(_LATE_SYSTEM)
        .when((role != "assistant") & (pl.col("n_calls") > 0))
        .then(_CALLS_OFF_TURN)
        .when((role == "tool") & ~answers)
        .then(_STRAY_RESULT)
        .when(answers & (pl.col("tool_call_id") == ""))
        .then(_RESULT_WITHOUT_ID)
    )
    flagged = msgs.select("row", "pos", "role", code.alias("code")).filter(pl.col("code").is_not_null())
    reason = (
        pl.when(pl.col("code") == _UNKNOWN_ROLE)
        .then(pl.format("message {} has unknown role '{}'", pos, role))
        .when(pl.col("code") == _LATE_SYSTEM)
        .then(pl.format("system message at position {} (only the first message may be system)", pos))
        .when(pl.col("code") == _CALLS_OFF_TURN)
        .then(pl.format("message {} has tool calls but is a {} message", pos, role))
        .when(pl.col("code") == _STRAY_RESULT)
        .then(pl.format("tool result at message {} does not follow an assistant turn", pos))
        .otherwise(pl.format("tool result at message {} has no tool_call_id", pos))
    )
    kind = (
        pl.when(pl.col("code") == _UNKNOWN_ROLE)
        .then(pl.lit(RemovalReason.BAD_ROLE.value))
        .when(pl.col("code") == _LATE_SYSTEM)
        .then(pl.lit(RemovalReason.BAD_ORDER.value))
        .when(pl.col("code") == _CALLS_OFF_TURN)
        .then(pl.lit(RemovalReason.BAD_TOOL_CALL.value))
        .otherwise(pl.lit(RemovalReason.ORPHAN_TOOL_RESULT.value))
    )
    found.append(_violations(flagged, pl.lit(True), pos, pl.col("code"), reason, kind))
    silent = msgs.select("row", "pos", "role", "n_calls", "content", "reasoning_content").filter(
        (role == "assistant") & (pl.col("n_calls") == 0)
    )
    blank = [pl.col(c).fill_null("").str.strip_chars() == "" for c in ("content", "reasoning_content")]
    empty = pl.format("empty assistant turn at message {}", pos)
    found.append(_violations(silent, blank[0] & blank[1], pos, 6, empty, RemovalReason.EMPTY_TURN))

    calls = (
        msgs.select("row", "g", "pos", "even", "tool_calls")
        .explode("tool_calls", keep_nulls=False)
        .select(
            "row",
            "g",
            "pos",
            "even",
            pl.col("tool_calls").struct.field("id").fill_null("").alias("id"),
            pl.col("tool_calls").struct.field("function").struct.field("name").fill_null("").alias("tool"),
            pl.col("tool_calls").struct.field("function").struct.field("arguments"),
        )
    )
    call_id = pl.col("id")
    found += [
        _violations(
            calls,
            call_id == "",
            pos,
            6,
            pl.format("tool call at message {} has no id", pos),
            RemovalReason.BAD_TOOL_CALL,
        ),
        _violations(
            # a hash of (row, id) narrows the search; the ids are then compared themselves
            calls.filter((call_id != "") & (pl.col("row").hash() ^ call_id.hash()).is_duplicated()),
            ~pl.struct("row", "id").is_first_distinct(),
            pos,
            7,
            pl.format("duplicate tool call id {}", call_id),
            RemovalReason.BAD_TOOL_CALL,
        ),
        _pairing_violations(
            calls,
            msgs.select("row", "block", "pos", pl.col("tool_call_id").alias("id"), answers.alias("answers"))
            .filter("answers")
            .with_columns(even=pl.lit(msgs["even"]).gather(pl.col("block"))),
        ),
        _argument_violations(calls, frame["tools_json"]),
    ]
    # ties go by the check's place in `found`, then (two calls of one turn) by the words: a row always gets
    # the same reason
    parts = [part.with_columns(part=pl.lit(i, pl.Int32)) for i, part in enumerate(found)]
    first = (
        pl.concat(parts).sort("row", "pos", "order", "part", "reason").unique("row", keep="first", maintain_order=True)
    )
    return rows.select("row").join(first, on="row", how="left", maintain_order="left").select("reason", "kind")


def _violations(
    frame: pl.DataFrame,
    when: pl.Expr,
    pos: pl.Expr | int,
    order: pl.Expr | int,
    reason: pl.Expr,
    kind: pl.Expr | RemovalReason,
) -> pl.DataFrame:
    """The rows of `frame` where `when` holds, as (row, pos, order, reason, kind)."""
    return frame.filter(when).select(
        pl.col("row").cast(pl.UInt32),
        (pos if isinstance(pos, pl.Expr) else pl.lit(pos)).cast(pl.Int64).alias("pos"),
        (order if isinstance(order, pl.Expr) else pl.lit(order)).cast(pl.Int32).alias("order"),
        reason.cast(pl.String).alias("reason"),
        (kind if isinstance(kind, pl.Expr) else pl.lit(kind.value)).cast(pl.String).alias("kind"),
    )


def _pairing_violations(calls: pl.DataFrame, results: pl.DataFrame) -> pl.DataFrame:
    """Every call answered exactly once inside its assistant turn, every result answering a call of it.

    Calls and results are both in message order, so in the turns with as many results as calls
    (`even`) the i-th result should answer the i-th call; only the turns where that fails (other
    counts, other ids, or another order) are paired up by id.
    """
    even_calls, even_results = calls.filter("even"), results.filter("even")
    differ = even_calls.filter(even_calls["id"] != even_results["id"])["g"]
    uneven = pl.concat([calls.filter(~pl.col("even"))["g"], results.filter(~pl.col("even"))["block"]])
    suspect = pl.concat([differ, uneven]).unique().implode()
    links = pl.concat(
        [
            calls.filter(pl.col("g").is_in(suspect) & (pl.col("id") != "")).select(
                "row", pl.col("g").alias("block"), "id", "pos", pl.lit(1, pl.Int32).alias("call")
            ),
            results.filter(pl.col("block").is_in(suspect) & (pl.col("id") != "")).select(
                "row", "block", "id", "pos", pl.lit(0, pl.Int32).alias("call")
            ),
        ]
    )
    pairs = links.group_by("block", "id").agg(
        pl.col("row").first(), pl.col("pos").min(), pl.col("call").sum().alias("calls"), pl.len().alias("links")
    )
    answered = pl.col("links") - pl.col("calls")
    id_, pos = pl.col("id"), pl.col("pos")
    return pl.concat(
        [
            _violations(
                pairs,
                pl.col("calls") == 0,
                pos,
                8,
                pl.format("tool result at message {} answers no call of its assistant turn ('{}')", pos, id_),
                RemovalReason.ORPHAN_TOOL_RESULT,
            ),
            _violations(
                pairs,
                (pl.col("calls") > 0) & (answered == 0),
                pos,
                9,
                pl.format("tool call {} has no result", id_),
                RemovalReason.UNANSWERED_TOOL_CALL,
            ),
            _violations(
                pairs,
                (pl.col("calls") == 1) & (answered > 1),
                pos,
                9,
                pl.format("tool call {} has {} results", id_, answered),
                RemovalReason.ORPHAN_TOOL_RESULT,
            ),
        ]
    )


def _lacks(key: str) -> pl.Expr:
    """True where `arguments` is not a JSON object with a non-null `key`."""
    if "\\" not in key:
        return pl.col("arguments").str.json_path_match("$['" + key.replace("'", "\\'") + "']").is_null()
    # JSONPath cannot name a key that holds a backslash; such keys are checked in Python
    return pl.col("arguments").map_elements(lambda text: not _has_key(text, key), pl.Boolean, skip_nulls=False)


def _has_key(text: str | None, key: str) -> bool:
    try:
        value = json.loads(text or "")
    except ValueError:
        return False
    return isinstance(value, dict) and value.get(key) is not None


def _argument_violations(calls: pl.DataFrame, tools_json: pl.Series) -> pl.DataFrame:
    """Calls whose arguments are not a JSON object, name a tool not offered, or lack a required argument.

    `str.json_path_match` returns null for text that is not JSON (as `json.loads` would refuse it,
    except that escaped lone surrogates also count as not JSON), so validity, object-ness (a key can
    only match in an object) and required keys are one pass over the arguments, one partition per
    distinct required key; `$` (the whole document) is only matched for calls that failed a key or
    have none to check.
    """
    row_key, offered = _offered_tools(tools_json)
    calls = (
        calls.with_row_index("call")
        .select("call", "row", "pos", "id", "tool", "arguments", pl.lit(row_key).gather(pl.col("row")).alias("tk"))
        .join(offered, on=["tk", "tool"], how="left")
    )
    keyed = calls.select("call", "arguments", "required").filter(pl.col("required").list.len() > 0).explode("required")
    missing = pl.concat(
        [
            part.filter(_lacks(key)).select("call", "required")
            for (key,), part in keyed.partition_by("required", as_dict=True).items()
        ]
        or [keyed.select("call", "required")]
    )
    unchecked = calls.filter(pl.col("required").list.len().fill_null(0) == 0).select("call")
    suspect = calls.join(pl.concat([missing.select("call"), unchecked]).unique(), on="call", how="semi").with_columns(
        json=pl.col("arguments").str.json_path_match("$").is_not_null(),
        obj=pl.col("arguments").str.strip_chars_start().str.starts_with("{"),
    )
    label = (
        pl.when(pl.col("id") != "")
        .then(pl.format("call {}", pl.col("id")))
        .otherwise(pl.format("the call at message {}", "pos"))
    )
    sound = pl.col("json") & pl.col("obj")
    pos = pl.col("pos")
    return pl.concat(
        [
            _violations(
                suspect,
                ~pl.col("json"),
                pos,
                10,
                pl.format("arguments of {} are not valid JSON", label),
                RemovalReason.BAD_TOOL_CALL,
            ),
            _violations(
                suspect,
                pl.col("json") & ~pl.col("obj"),
                pos,
                10,
                pl.format("arguments of {} are not a JSON object", label),
                RemovalReason.BAD_TOOL_CALL,
            ),
            _violations(
                suspect,
                sound & pl.col("required").is_null(),
                pos,
                11,
                pl.format("{} uses tool '{}' that is not offered", label, "tool"),
                RemovalReason.BAD_TOOL_CALL,
            ),
            _violations(
                suspect.filter(sound).drop("required").join(missing, on="call"),
                pl.lit(True),
                pos,
                12,
                pl.format("missing required argument '{}' for {} ({})", "required", "tool", label),
                RemovalReason.BAD_TOOL_CALL,
            ),
        ]
    )
