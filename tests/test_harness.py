"""The coding agent harness in real sandboxes, driven by scripted models through litellm's mock path."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from qaflow.agents.effort import EffortMap
from qaflow.agents.harness import HarnessConfig
from qaflow.agents.tool_specs import TOOL_NAMES
from qaflow.llm import LLM, LLMConfig, ScriptedReply
from qaflow.llm.config import ScriptedToolCall as Call
from qaflow.models.rollout import Effort
from qaflow.models.trial import ExitStatus
from qaflow.rollouts.attempt import run_attempt
from qaflow.task import Task
from tests.conftest import TASKS_REPO
from tests.taskfactory import write_task

FIX_MEAN = {"old_string": "return sum(xs) // len(xs)", "new_string": "return sum(xs) / len(xs)"}
FIX_MEDIAN = {
    "old_string": "    return s[len(s) // 2]\n",
    "new_string": "    mid = len(s) // 2\n    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2\n",
}


def scripted(*replies: ScriptedReply) -> LLMConfig:
    return LLMConfig(model="openai/scripted", script=list(replies))


def solve_fix_calc() -> LLMConfig:
    return scripted(
        ScriptedReply(
            reasoning="Read the module first.", tool_calls=[Call(name="read", arguments={"path": "calc.py"})]
        ),
        ScriptedReply(
            content="Fix mean.", tool_calls=[Call(name="edit", arguments={"path": "/app/calc.py", **FIX_MEAN})]
        ),
        ScriptedReply(tool_calls=[Call(name="edit", arguments={"path": "calc.py", **FIX_MEDIAN})]),
        ScriptedReply(
            tool_calls=[
                Call(name="bash", arguments={"command": "python3 -c 'import calc; print(calc.median([1,2,3,4]))'"})
            ]
        ),
        ScriptedReply(content="mean and median are fixed."),
    )


def test_scripted_model_solves_a_task_with_real_tool_calls(backend: str) -> None:
    task = Task.load(TASKS_REPO / "fix-calc")
    record = run_attempt(task, solve_fix_calc(), effort=Effort.MEDIUM, backend=backend)
    assert record.error is None
    assert (record.reward, record.full_reward, record.exit_status, record.stop_reason) == (1.0, True, "ok", "done")
    assert record.turns == 5 and len(record.usage) == 5
    roles = [m["role"] for m in record.messages]
    assert roles == ["system", "user"] + ["assistant", "tool"] * 4 + ["assistant"]
    # tool results are the real sandbox's answers, paired with the call ids
    calls = [m["tool_calls"][0] for m in record.messages if m.get("tool_calls")]
    results = [m for m in record.messages if m["role"] == "tool"]
    assert [c["id"] for c in calls] == [r["tool_call_id"] for r in results]
    assert len({c["id"] for c in calls}) == 4
    assert "return sum(xs) // len(xs)" in results[0]["content"]
    assert results[1]["content"] == "replaced 1 occurrence(s) in /app/calc.py"
    assert results[3]["content"] == "exit code: 0\nstdout:\n2.5\n"
    # reasoning: reported by the (mock) provider for the first turn only
    assert record.messages[2]["reasoning_content"] == "Read the module first."
    assert record.usage[0].reasoning_source == "provider" and record.usage[0].reasoning_tokens == 4
    assert [u.reasoning_source for u in record.usage[1:]] == ["none"] * 4
    assert record.thinking_tokens == 4
    assert [t["function"]["name"] for t in record.tools] == list(TOOL_NAMES)


def test_scripted_wrong_answer_earns_zero(backend: str) -> None:
    task = Task.load(TASKS_REPO / "fix-calc")
    wrong = scripted(
        ScriptedReply(tool_calls=[Call(name="edit", arguments={"path": "calc.py", **FIX_MEAN})]),
        ScriptedReply(content="Done (only mean fixed)."),
    )
    record = run_attempt(task, wrong, backend=backend)
    assert (record.reward, record.full_reward, record.exit_status, record.stop_reason) == (0.0, False, "ok", "done")
    assert record.turns == 2


@pytest.mark.bwrap
def test_runaway_agent_is_stopped_at_the_turn_limit(tmp_path: Path) -> None:
    from tests.conftest import require_backend

    require_backend("bwrap")
    task = Task.load(write_task(tmp_path))
    loop = scripted(*[ScriptedReply(tool_calls=[Call(name="bash", arguments={"command": "true"})])] * 10)
    record = run_attempt(task, loop, harness=HarnessConfig(max_turns=3), backend="bwrap")
    assert record.stop_reason == "max_turns" and record.turns == 3
    assert record.exit_status is ExitStatus.AGENT_TIMEOUT
    assert record.reward == 0.0  # the verifier still ran after the stopped agent


@pytest.mark.bwrap
def test_runaway_agent_is_stopped_at_the_time_limit(tmp_path: Path) -> None:
    from tests.conftest import require_backend

    require_backend("bwrap")
    task = Task.load(write_task(tmp_path))
    sleepy = scripted(*[ScriptedReply(tool_calls=[Call(name="bash", arguments={"command": "sleep 30"})])] * 5)
    started = time.monotonic()
    record = run_attempt(task, sleepy, harness=HarnessConfig(max_wall_s=2.0), backend="bwrap")
    assert time.monotonic() - started < 15
    assert record.stop_reason == "wall_time" and record.exit_status is ExitStatus.AGENT_TIMEOUT
    assert "timed out" in record.messages[3]["content"]
    assert record.reward == 0.0


@pytest.mark.bwrap
def test_token_budget_stops_the_agent(tmp_path: Path) -> None:
    from tests.conftest import require_backend

    require_backend("bwrap")
    task = Task.load(write_task(tmp_path))
    loop = scripted(*[ScriptedReply(tool_calls=[Call(name="bash", arguments={"command": "true"})])] * 10)
    # litellm's mock path reports 20 completion tokens per reply
    record = run_attempt(task, loop, harness=HarnessConfig(max_completion_tokens=50), backend="bwrap")
    assert record.stop_reason == "max_tokens" and record.turns == 3
    assert record.exit_status is ExitStatus.AGENT_TIMEOUT


@pytest.mark.bwrap
def test_tool_errors_go_back_to_the_model_and_the_session_goes_on(tmp_path: Path) -> None:
    from tests.conftest import require_backend

    require_backend("bwrap")
    task = Task.load(
        write_task(
            tmp_path,
            files={"environment/notes.txt": "a\na\n"},
            dockerfile="FROM python:3.11-slim\nWORKDIR /app\nCOPY notes.txt /app/notes.txt\n",
        )
    )
    record = run_attempt(
        task,
        scripted(
            ScriptedReply(tool_calls=[Call(name="read", arguments={"path": "missing.txt"})]),
            ScriptedReply(
                tool_calls=[Call(name="edit", arguments={"path": "notes.txt", "old_string": "a", "new_string": "b"})]
            ),
            ScriptedReply(tool_calls=[Call(name="bash", arguments="{not json")]),
            ScriptedReply(tool_calls=[Call(name="rm", arguments={"path": "/"})]),
            ScriptedReply(tool_calls=[Call(name="read", arguments={"path": "notes.txt", "limit": "two"})]),
            ScriptedReply(tool_calls=[Call(name="write", arguments={"path": "sub/dir/out.txt", "content": "done"})]),
            ScriptedReply(tool_calls=[Call(name="bash", arguments={"command": "cat sub/dir/out.txt > out.txt"})]),
            ScriptedReply(content="ok"),
        ),
        backend="bwrap",
    )
    results = [m["content"] for m in record.messages if m["role"] == "tool"]
    assert results[0] == "error: /app/missing.txt: no such file"
    assert results[1].startswith("error: old_string occurs 2 times in /app/notes.txt")
    assert "not valid JSON" in results[2]
    assert "unknown tool 'rm'" in results[3]
    assert results[4] == "error: argument limit of read must be of type integer, got str"
    assert results[5] == "wrote 4 bytes to /app/sub/dir/out.txt"
    assert record.meta["tool_errors"] == 5
    assert record.full_reward  # the last two calls solved it


@pytest.mark.bwrap
def test_write_keeps_the_mode_of_an_existing_file_and_output_is_capped(tmp_path: Path) -> None:
    from tests.conftest import require_backend

    require_backend("bwrap")
    task = Task.load(write_task(tmp_path))
    record = run_attempt(
        task,
        scripted(
            ScriptedReply(
                tool_calls=[
                    Call(name="bash", arguments={"command": "printf '#!/bin/sh\\n' > run.sh && chmod 755 run.sh"})
                ]
            ),
            ScriptedReply(
                tool_calls=[Call(name="write", arguments={"path": "run.sh", "content": "#!/bin/sh\necho hi\n"})]
            ),
            ScriptedReply(tool_calls=[Call(name="bash", arguments={"command": "stat -c %a run.sh && ./run.sh"})]),
            ScriptedReply(
                tool_calls=[Call(name="bash", arguments={"command": "head -c 100000 /dev/zero | tr '\\0' x"})]
            ),
            ScriptedReply(content="ok"),
        ),
        harness=HarnessConfig(tool_output_chars=1000),
        backend="bwrap",
    )
    results = [m["content"] for m in record.messages if m["role"] == "tool"]
    assert results[2] == "exit code: 0\nstdout:\n755\nhi\n"
    assert len(results[3]) <= 1000 + 64 and "characters truncated" in results[3]


def test_effort_levels_map_to_provider_settings_per_model() -> None:
    efforts = EffortMap(
        per_model={"anthropic/*": {Effort.XHIGH: {"thinking": {"type": "enabled", "budget_tokens": 32000}}}}
    )
    base = LLMConfig(model="openai/o4-mini", extra={"seed": 1})
    assert efforts.apply(base, Effort.OFF).reasoning_effort is None
    assert efforts.apply(base, Effort.LOW).reasoning_effort == "low"
    assert efforts.apply(base, Effort.XHIGH).reasoning_effort == "high"
    claude = efforts.apply(LLMConfig(model="anthropic/claude-x"), Effort.XHIGH)
    assert claude.reasoning_effort is None and claude.extra["thinking"]["budget_tokens"] == 32000
    assert efforts.apply(LLMConfig(model="anthropic/claude-x"), Effort.LOW).reasoning_effort == "low"
    # the setting reaches litellm's keyword arguments
    kwargs = LLM(efforts.apply(base, Effort.MEDIUM))._litellm_kwargs(
        {"messages": [], "tools": None, "tool_choice": None}
    )
    assert kwargs["reasoning_effort"] == "medium" and kwargs["seed"] == 1


@pytest.mark.bwrap
def test_reasoning_tokens_are_counted_when_the_provider_does_not_report_them(tmp_path: Path) -> None:
    """A reply whose usage has no reasoning details but whose message carries reasoning text is counted."""
    from tests.conftest import require_backend

    require_backend("bwrap")
    import litellm

    task = Task.load(write_task(tmp_path))
    unreported = {
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "done", "reasoning_content": "x" * 40},
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 30, "total_tokens": 40},
    }
    original = litellm.completion

    def completion(**kwargs: object) -> object:
        return original(**{**kwargs, "mock_response": unreported})

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(litellm, "completion", completion)
        record = run_attempt(task, scripted(ScriptedReply(content="done")), backend="bwrap")
    assert record.usage[0].reasoning_source == "approx" and record.usage[0].reasoning_tokens == 10
    assert record.thinking_tokens == 10
    assert json.loads(json.dumps(record.model_dump(mode="json")))["usage"][0]["reasoning_tokens"] == 10
