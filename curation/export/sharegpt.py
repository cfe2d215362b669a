"""The ShareGPT variant of an SFT export, in the convention LLaMA-Factory reads (`formatting: sharegpt`).

Mapping from OpenAI messages to `conversations` turns `{from, value}`:

- system -> `system`: the content;
- user -> `human`: the content;
- assistant without tool calls -> `gpt`: `<think>\\nreasoning\\n</think>\\n\\n` (when there is
  reasoning) + the content;
- assistant with tool calls -> `function_call`: the same think block, then the calls as JSON: one
  call as `{"name": ..., "arguments": {...}}`, several as a list of them (arguments as JSON objects);
- a run of consecutive tool results -> one `observation`: the result, or a JSON list of the results.

ShareGPT alternates human/observation with gpt/function_call, so the text an assistant writes
*beside* its tool calls has no place: it is dropped, and the export counts how many turns lost it.
Tool definitions go into a `tools` column as a JSON string. The `messages` dataset is the lossless one.
"""

from __future__ import annotations

from typing import Any

from datasets import Features, List, Value

from curation.export.common import dumps
from qaflow.models.rollout import arguments_object

SHAREGPT_DIR = "sharegpt"
SHAREGPT_MAPPING = (__doc__ or "").split("\n\n", 1)[1].strip()
"""The mapping above, for dataset cards."""
SHAREGPT_META = ("rollout_id", "task", "task_version", "source", "licence", "model", "effort", "reward")


def sharegpt_features(meta: Features) -> Features:
    return Features(
        {
            "conversations": List({"from": Value("string"), "value": Value("string")}),
            "tools": Value("string"),
            **{key: meta[key] for key in SHAREGPT_META},
        }
    )


def _think(message: dict[str, Any]) -> str:
    reasoning = message.get("reasoning_content")
    return f"<think>\n{reasoning}\n</think>\n\n" if reasoning else ""


def _call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {"name": function.get("name"), "arguments": arguments_object(function.get("arguments") or {})}


def to_sharegpt(messages: list[dict[str, Any]]) -> tuple[list[dict[str, str]], int]:
    """(conversations, number of tool-calling assistant turns whose text was dropped) of guarded messages."""
    turns: list[dict[str, str]] = []
    dropped = 0
    results: list[str] = []

    def flush() -> None:
        if results:
            value = results[0] if len(results) == 1 else dumps(results)
            turns.append({"from": "observation", "value": value})
            results.clear()

    for message in messages:
        role = message.get("role")
        if role == "tool":
            results.append(message.get("content") or "")
            continue
        flush()
        content = message.get("content") or ""
        if role == "system":
            turns.append({"from": "system", "value": content})
        elif role == "user":
            turns.append({"from": "human", "value": content})
        elif message.get("tool_calls"):
            calls = [_call(c) for c in message["tool_calls"]]
            dropped += bool(content.strip())
            value = dumps(calls[0] if len(calls) == 1 else calls)
            turns.append({"from": "function_call", "value": _think(message) + value})
        else:
            turns.append({"from": "gpt", "value": _think(message) + content})
    flush()
    return turns, dropped


def sharegpt_row(row: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The ShareGPT row of an exported SFT row, and how many assistant texts it dropped."""
    conversations, dropped = to_sharegpt(row["messages"])
    out = {"conversations": conversations, "tools": dumps(row["tools"]), **{k: row[k] for k in SHAREGPT_META}}
    return out, dropped
