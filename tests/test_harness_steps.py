"""The coding agent on a multi-step task: a fresh conversation per step, one record for the attempt."""

from __future__ import annotations

from pathlib import Path

from curation.export import GateOptions, sft_rows
from curation.filter_structure import structure_reasons
from qaflow.llm import LLMConfig, ScriptedReply
from qaflow.llm.config import ScriptedToolCall as Call
from qaflow.models.frame import records_to_frame
from qaflow.rollouts.attempt import run_attempt
from qaflow.task import Task
from tests.stepfactory import COUNTER, RESTOCK, TOTAL, write_stock_task

# The same script plays every step (each step is a fresh conversation): one command that does
# whatever the sandbox shows is still missing.
WORK = (
    "if [ ! -x /app/counter.sh ]; then printf '#!/bin/bash\\nwc -l < \"$1\"\\n' > /app/counter.sh; "
    "chmod +x /app/counter.sh; echo counted; "
    "elif [ ! -f /app/restock.txt ]; then awk -F, '$2 == 0 {print $1}' stock.csv > restock.txt; echo listed; "
    "else awk -F, '{s += $2} END {print s}' stock.csv > total.txt; echo summed; fi"
)


def _model() -> LLMConfig:
    return LLMConfig(
        model="openai/scripted",
        script=[
            ScriptedReply(reasoning="Do the next piece.", tool_calls=[Call(name="bash", arguments={"command": WORK})]),
            ScriptedReply(content="Done."),
        ],
    )


def test_each_step_is_a_fresh_conversation_with_the_step_instruction(backend: str, tmp_path: Path) -> None:
    task = Task.load(write_stock_task(tmp_path))
    record = run_attempt(task, _model(), backend=backend)
    assert record.error is None, record.error
    assert (record.reward, record.full_reward, record.exit_status, record.stop_reason) == (1.0, True, "ok", "done")
    roles = [m["role"] for m in record.messages]
    assert roles == ["system"] + ["user", "assistant", "tool", "assistant"] * 3
    users = [m["content"] for m in record.messages if m["role"] == "user"]
    assert users == [COUNTER["instruction.md"], RESTOCK["instruction.md"], TOTAL["instruction.md"]]
    tools = [m["content"] for m in record.messages if m["role"] == "tool"]
    assert ["counted" in tools[0], "listed" in tools[1], "summed" in tools[2]] == [True, True, True]
    assert (record.turns, len(record.usage)) == (6, 6)
    steps = record.meta["steps"]
    assert [(s["name"], s["start"], s["turns"], s["reward"]) for s in steps] == [
        ("counter", 1, 2, 1.0),
        ("restock", 5, 2, 1.0),
        ("total", 9, 2, 1.0),
    ]
    assert "## step counter" in record.verifier_output and "## step total" in record.verifier_output
    frame = records_to_frame([record])
    assert structure_reasons(frame).to_list() == [None]
    rows, removed = sft_rows(frame, gate=GateOptions(include_scripted=True))  # a scripted model drives it
    assert removed == [] and [m["role"] for m in rows[0]["messages"]] == roles
