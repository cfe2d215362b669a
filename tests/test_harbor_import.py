"""Harbor import: trials of a Harbor job (result.json + ATIF trajectory) become rollout records whose
messages are valid OpenAI chat, with usage, reward, exit status and side calls mapped; bad trials
are reported with the file at fault; the CLI writes a shard that loads back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.importers.atif import AtifError, atif_to_messages, atif_tools
from qaflow.importers.harbor_jobs import (
    HarborImportError,
    find_trials,
    import_job,
    import_trial,
    map_effort,
    reward_of,
)
from qaflow.models.frame import frame_to_records, read_rollouts
from qaflow.models.rollout import Effort, RolloutRecord, SideCallKind
from qaflow.models.trial import ExitStatus

runner = CliRunner()

DATA = Path(__file__).parent / "data" / "harbor_job"
JOB = DATA / "2026-01-05__10-00-00"
PASS, FAIL = "hello-world__Qw3rTy1", "hello-world__Zx9cVb2"
TIMEOUT, COMPACT = "fix-git__Tm0uT3s", "log-summary__Cmp4ct1"
BROKEN, NO_TRAJ = "fix-git__Br0k3n5", "log-summary__N0trj06"
HELLO_SUM = "sha256:3f5a0c1d9e2b7a46c8d1e0f9a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5"


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def by_trial(records: list[RolloutRecord]) -> dict[str, RolloutRecord]:
    return {r.meta["harbor"]["trial_name"]: r for r in records}


def copy_trial(name: str, dst: Path) -> Path:
    trial = dst / name
    shutil.copytree(JOB / name, trial)
    return trial


def edit_result(trial: Path, **fields: Any) -> None:
    result = load(trial / "result.json")
    result.update(fields)
    (trial / "result.json").write_text(json.dumps(result))


def agent(step_id: int, message: str = "", **fields: Any) -> dict[str, Any]:
    return {"step_id": step_id, "source": "agent", "message": message, **fields}


def traj(*steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"schema_version": "ATIF-v1.7", "agent": {"name": "a", "version": "1"}, "steps": list(steps), **fields}


def assert_calls_answered(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool call is answered by the tool messages right after it, in call order."""
    for i, m in enumerate(messages):
        ids = [c["id"] for c in m.get("tool_calls", [])]
        if ids:
            following = messages[i + 1 : i + 1 + len(ids)]
            assert [(f["role"], f["tool_call_id"]) for f in following] == [("tool", x) for x in ids]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    called = [c["id"] for m in messages for c in m.get("tool_calls", [])]
    assert answered == called


# --- ATIF -> messages ------------------------------------------------------------------------------


def test_agent_steps_become_assistant_turns_with_paired_tool_messages() -> None:
    trajectory = load(JOB / FAIL / "agent" / "trajectory.json")
    messages, usage, _, meta = atif_to_messages(trajectory)
    assert [(m["role"], m.get("tool_call_id")) for m in messages] == [
        ("system", None),
        ("user", None),
        ("assistant", None),
        ("tool", "toolu_01"),
        ("tool", "toolu_02"),
        ("assistant", None),
        ("tool", "toolu_03"),
        ("assistant", None),
        ("tool", "toolu_04"),
        ("assistant", None),
    ]
    assert_calls_answered(messages)
    first = messages[2]
    assert first["content"] == "Let me look around first."
    assert first["reasoning_content"] == "I should check what is in /app before writing."
    # the observation listed toolu_02's result first; tool messages follow the call order
    assert messages[3]["content"] == "total 8\ndrwxr-xr-x 2 root root 4096 .\n"
    assert messages[4]["content"] == "# Demo app\n"
    original = {tc["tool_call_id"]: tc["arguments"] for s in trajectory["steps"] for tc in s.get("tool_calls", [])}
    for m in messages:
        for call in m.get("tool_calls", []):
            assert call["type"] == "function"
            assert isinstance(call["function"]["arguments"], str)
            assert json.loads(call["function"]["arguments"]) == original[call["id"]]
    assert messages[2]["tool_calls"][1]["function"]["name"] == "Read"
    assert [(u.prompt_tokens, u.completion_tokens) for u in usage] == [
        (12000, 150),
        (12400, 90),
        (12700, 60),
        (12800, 12),
    ]
    assert {u.reasoning_source for u in usage} == {"none"}
    assert meta["steps"] == 8 and meta["unanswered_tool_calls"] == 0 and meta["agent_name"] == "claude-code"


def test_sidechain_steps_are_one_subagent_side_call_not_messages() -> None:
    messages, usage, side_calls, _ = atif_to_messages(load(JOB / FAIL / "agent" / "trajectory.json"))
    assert [(s.kind, s.turn, s.tokens) for s in side_calls] == [(SideCallKind.SUBAGENT, 1, 3000 + 40)]
    assert not any(m["role"] == "user" and m["content"] == "What format does hello.txt need?" for m in messages)
    assert len(usage) == sum(m["role"] == "assistant" for m in messages) == 4


def test_observation_without_call_id_goes_to_the_call_left_without_result() -> None:
    trajectory = load(JOB / COMPACT / "agent" / "trajectory.json")
    messages, *_ = atif_to_messages(trajectory)
    assert messages[-2:] == [
        {"role": "tool", "tool_call_id": "call_1_1", "content": "1 200\n1 404\n"},
        {
            "role": "tool",
            "tool_call_id": "call_1_task_complete",
            "content": "Are you sure you want to mark the task as complete?",
        },
    ]


@pytest.mark.parametrize(
    ("calls", "results", "expected"),
    [
        # no tool calls: the observation is one user message
        ([], [{"content": "out1"}, {"content": "out2"}], [("user", None, "out1\nout2")]),
        # more loose results than calls waiting: the surplus is joined onto the last waiting call
        (
            ["a", "b"],
            [{"source_call_id": "a", "content": "A"}, {"content": "x"}, {"content": "y"}],
            [("tool", "a", "A"), ("tool", "b", "x\ny")],
        ),
        # every call answered: a loose result is a user message after the tool messages
        (
            ["a"],
            [{"source_call_id": "a", "content": "A"}, {"content": "note"}],
            [("tool", "a", "A"), ("user", None, "note")],
        ),
        # a call with no result at all is still answered, with empty content
        (["a", "b"], [{"source_call_id": "b", "content": "B"}], [("tool", "a", ""), ("tool", "b", "B")]),
        # an unknown source_call_id counts as loose; several results for one call are joined
        (
            ["a"],
            [{"source_call_id": "a", "content": "1"}, {"source_call_id": "a", "content": "2"}],
            [("tool", "a", "1\n2")],
        ),
        (["a"], [{"source_call_id": "zzz", "content": "Z"}], [("tool", "a", "Z")]),
    ],
)
def test_observation_rules(calls: list[str], results: list[dict[str, Any]], expected: list[tuple]) -> None:
    step = agent(2, "act", observation={"results": results})
    if calls:
        step["tool_calls"] = [{"tool_call_id": c, "function_name": "bash", "arguments": {"cmd": c}} for c in calls]
    messages, _, _, meta = atif_to_messages(traj({"step_id": 1, "source": "user", "message": "go"}, step))
    assert [(m["role"], m.get("tool_call_id"), m["content"]) for m in messages[2:]] == expected
    assert_calls_answered(messages)
    assert meta["unanswered_tool_calls"] == sum(1 for e in expected if e[0] == "tool" and e[2] == "")


@pytest.mark.parametrize(
    ("extra", "reasoning", "source"),
    [
        ({"reasoning_tokens": 12}, 12, "provider"),
        ({"reasoning_output_tokens": 30}, 30, "provider"),
        ({"thoughts_tokens": 7}, 7, "provider"),
        ({"completion_tokens_details": {"reasoning_tokens": 9}}, 9, "provider"),
        ({"reasoning_tokens": 0}, 0, "provider"),
        ({"cache_creation_input_tokens": 5}, 0, "none"),
        (None, 0, "none"),
    ],
)
def test_usage_reasoning_tokens(extra: dict[str, Any] | None, reasoning: int, source: str) -> None:
    metrics: dict[str, Any] = {"prompt_tokens": 100, "completion_tokens": 40}
    if extra is not None:
        metrics["extra"] = extra
    _, usage, _, _ = atif_to_messages(traj(agent(1, "hi", metrics=metrics), agent(2, "no metrics")))
    assert [u.model_dump() for u in usage] == [
        {"prompt_tokens": 100, "completion_tokens": 40, "reasoning_tokens": reasoning, "reasoning_source": source},
        {"prompt_tokens": 0, "completion_tokens": 0, "reasoning_tokens": 0, "reasoning_source": "none"},
    ]


def test_system_steps_leading_are_system_later_are_user() -> None:
    messages, *_ = atif_to_messages(
        traj(
            {"step_id": 1, "source": "system", "message": "rules"},
            {"step_id": 2, "source": "system", "message": "more rules"},
            {"step_id": 3, "source": "user", "message": "task"},
            agent(4, "working"),
            {"step_id": 5, "source": "system", "message": "environment was reset"},
        )
    )
    assert [(m["role"], m["content"]) for m in messages] == [
        ("system", "rules"),
        ("system", "more rules"),
        ("user", "task"),
        ("assistant", "working"),
        ("user", "environment was reset"),
    ]


def test_compaction_is_marked_as_summarisation_side_calls_not_inlined() -> None:
    trial_agent = JOB / COMPACT / "agent"
    messages, _, side_calls, meta = atif_to_messages(load(trial_agent / "trajectory.json"), base_dir=trial_agent)
    assert not any("context summarization" in (m["content"] or "") for m in messages)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user", "assistant", "tool", "tool"]
    # summary: step metrics 500+200 (the copied step has none); questions: no step metrics, final 300+50;
    # answers: the file is missing, so 0 tokens and listed as unresolved
    assert [(s.kind, s.turn, s.tokens) for s in side_calls] == [
        (SideCallKind.SUMMARISATION, 1, 700),
        (SideCallKind.SUMMARISATION, 1, 350),
        (SideCallKind.SUMMARISATION, 1, 0),
    ]
    assert meta["compactions"] == 1
    assert meta["unresolved_subagents"] == ["trajectory.summarization-1-answers.json"]
    # without base_dir nothing resolves, but the side calls are still marked
    _, _, unresolved, _ = atif_to_messages(load(trial_agent / "trajectory.json"))
    assert [s.tokens for s in unresolved] == [0, 0, 0]


def test_compaction_summary_content_is_a_user_message_and_embedded_subagents_resolve() -> None:
    sub = traj(agent(1, "sub answer", metrics={"prompt_tokens": 50, "completion_tokens": 5}), trajectory_id="sub-1")
    trajectory = traj(
        {"step_id": 1, "source": "user", "message": "task"},
        agent(
            2,
            "delegate",
            tool_calls=[{"tool_call_id": "t1", "function_name": "delegate", "arguments": {"q": "x"}}],
            observation={
                "results": [
                    {"source_call_id": "t1", "content": "done", "subagent_trajectory_ref": [{"trajectory_id": "sub-1"}]}
                ]
            },
        ),
        {
            "step_id": 3,
            "source": "system",
            "message": "Context compaction performed",
            "observation": {"results": [{"content": "Summary: prior work did X"}]},
            "extra": {"context_management": {"type": "compaction", "boundary": "replace"}},
        },
        agent(4, "continue"),
        subagent_trajectories=[sub],
    )
    messages, _, side_calls, _ = atif_to_messages(trajectory)
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "task"),
        ("assistant", "delegate"),
        ("tool", "done"),
        ("user", "Summary: prior work did X"),
        ("assistant", "continue"),
    ]
    assert [(s.kind, s.turn, s.tokens) for s in side_calls] == [
        (SideCallKind.SUBAGENT, 0, 55),
        (SideCallKind.SUMMARISATION, 1, 0),
    ]


def test_copied_context_steps_are_not_repeated() -> None:
    messages, usage, _, meta = atif_to_messages(
        traj(
            {"step_id": 1, "source": "user", "message": "task"},
            agent(2, "old turn"),
            {"step_id": 3, "source": "user", "message": "task", "is_copied_context": True},
            {"step_id": 4, "source": "user", "message": "handoff", "is_copied_context": True},
            agent(5, "old turn copied", is_copied_context=True),
            agent(6, "new turn"),
        )
    )
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "task"),
        ("assistant", "old turn"),
        ("user", "handoff"),
        ("assistant", "new turn"),
    ]
    assert len(usage) == 2 and meta["copied_steps"] == 3


def test_multimodal_content_parts_are_joined() -> None:
    messages, *_ = atif_to_messages(
        traj(
            {
                "step_id": 1,
                "source": "user",
                "message": [
                    {"type": "text", "text": "look:"},
                    {"type": "image", "source": {"media_type": "image/png", "path": "shot.png"}},
                ],
            }
        )
    )
    assert messages == [{"role": "user", "content": "look:\n[image: shot.png]"}]


def test_not_atif_raises() -> None:
    with pytest.raises(AtifError, match="schema_version"):
        atif_to_messages({"schema_version": "OTHER-v2", "steps": []})
    with pytest.raises(AtifError, match="steps"):
        atif_to_messages({"schema_version": "ATIF-v1.7"})
    with pytest.raises(AtifError, match="unknown source 'robot'"):
        atif_to_messages(traj({"step_id": 1, "source": "robot", "message": "x"}))


def test_tools_from_definitions_or_derived_from_calls() -> None:
    definition = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
    tools, derived = atif_tools(
        traj(agent(1)) | {"agent": {"name": "a", "version": "1", "tool_definitions": [definition]}}
    )
    assert (tools, derived) == ([definition], False)
    tools, derived = atif_tools(load(JOB / FAIL / "agent" / "trajectory.json"))
    assert derived is True
    assert [t["function"]["name"] for t in tools] == ["Bash", "Read", "Task", "Write"]
    read = tools[1]["function"]["parameters"]
    assert read == {"type": "object", "properties": {"file_path": {"type": "string"}, "limit": {"type": "integer"}}}


def test_harbor_example_trajectory_converts_without_losing_steps() -> None:
    """Harbor's own example (examples/tasks/hello-load-atif-trajectory-task-level, Apache-2.0)."""
    trajectory = load(JOB / PASS / "agent" / "trajectory.json")
    steps = trajectory["steps"]
    messages, usage, side_calls, meta = atif_to_messages(trajectory)
    assert meta["steps"] == len(steps) == 3 and not side_calls
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[0]["content"] == steps[0]["message"]
    call = steps[1]["tool_calls"][0]
    assert messages[1]["content"] == "" and messages[1]["tool_calls"][0]["id"] == call["tool_call_id"]
    assert json.loads(messages[1]["tool_calls"][0]["function"]["arguments"]) == call["arguments"]
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": call["tool_call_id"],
        "content": steps[1]["observation"]["results"][0]["content"],
    }
    assert messages[3]["content"] == steps[2]["message"]
    assert [(u.prompt_tokens, u.completion_tokens) for u in usage] == [(18907, 82), (19026, 25)]
    assert sum(u.prompt_tokens for u in usage) == trajectory["final_metrics"]["total_prompt_tokens"]
    assert sum(u.completion_tokens for u in usage) == trajectory["final_metrics"]["total_completion_tokens"]


# --- trials and jobs -------------------------------------------------------------------------------


def test_import_job_maps_each_trial() -> None:
    report = import_job(JOB)
    assert (report.trials, report.imported, len(report.errors)) == (6, 5, 1)
    records = by_trial(report.records)
    assert set(records) == {PASS, FAIL, TIMEOUT, COMPACT, NO_TRAJ}

    passing, failing = records[PASS], records[FAIL]
    assert (passing.task, passing.task_version, passing.model, passing.agent) == (
        "hello-world",
        HELLO_SUM,
        "anthropic/claude-opus-5",
        "claude-code",
    )
    assert (passing.reward, passing.rewards, passing.full_reward, passing.passed) == (1.0, {"reward": 1.0}, True, True)
    assert (failing.reward, failing.full_reward, failing.exit_status) == (0.0, False, ExitStatus.OK)
    assert (passing.attempt, failing.attempt) == (0, 1)
    assert passing.effort is Effort.XHIGH  # kwargs reasoning_effort "high"
    assert passing.source == "harbor:2026-01-05__10-00-00"
    assert passing.turns == 2 and passing.usage[0].prompt_tokens == 18907
    assert passing.timings == {"total": 74.0, "setup": 39.0, "agent": 30.0, "verifier": 5.0}
    assert passing.verifier_output.endswith("2 passed\n")
    assert passing.stop_reason == "imported" and passing.error is None and passing.backend == "docker"
    assert passing.meta["harbor"]["trial_dir"] == str((JOB / PASS).resolve())
    assert passing.meta["harbor"]["job_dir"] == str(JOB.resolve())
    assert passing.meta["atif"]["tools_derived"] is True and passing.tools[0]["function"]["name"] == "Write"
    assert passing.created_at.isoformat() == "2026-01-05T10:01:15+00:00"

    timeout = records[TIMEOUT]
    assert (timeout.exit_status, timeout.stop_reason) == (ExitStatus.AGENT_TIMEOUT, "wall_time")
    assert timeout.error == "AgentTimeoutError: Agent execution timed out after 900.0 seconds"
    assert timeout.effort is Effort.MEDIUM  # kwargs llm_kwargs.reasoning_effort
    assert [(u.reasoning_tokens, u.reasoning_source) for u in timeout.usage] == [(512, "provider"), (256, "provider")]
    assert timeout.thinking_tokens == 768 and timeout.reward == 0.0

    compact = records[COMPACT]
    assert (compact.reward, compact.full_reward) == (0.75, False)  # mean of accuracy 1.0 and format 0.5
    assert [s.kind for s in compact.side_calls] == [SideCallKind.SUMMARISATION] * 3
    assert [s.tokens for s in compact.side_calls] == [700, 350, 0]
    assert compact.effort is Effort.OFF

    missing = records[NO_TRAJ]
    assert missing.messages == [] and missing.turns == 0 and missing.reward is None
    assert missing.exit_status is ExitStatus.ERROR
    reason = "RuntimeError: Docker compose command failed: image pull timed out; no agent/trajectory.json"
    assert missing.error == reason
    assert (compact.attempt, missing.attempt) == (0, 1)

    for record in report.records:
        assert_calls_answered(record.messages)
        assert len(record.usage) == record.turns == sum(m["role"] == "assistant" for m in record.messages)


def test_bad_trials_are_reported_with_the_file(tmp_path: Path) -> None:
    report = import_job(JOB)
    assert [(e.path, e.reason.split(":")[0]) for e in report.errors] == [
        (JOB / BROKEN / "result.json", "malformed JSON")
    ]
    job = tmp_path / "job"
    copy_trial(PASS, job)
    no_result = job / "x__missing"
    (no_result / "agent").mkdir(parents=True)
    odd = copy_trial(FAIL, job)
    (odd / "result.json").write_text(json.dumps({"trial_name": "x", "agent_info": {"name": "a"}}))
    report = import_job(job)
    assert (report.trials, report.imported) == (3, 1)
    errors = {e.path: e.reason for e in report.errors}
    assert errors[no_result / "result.json"] == "missing"
    assert errors[odd / "result.json"].startswith("not a Harbor trial result (task_name: Field required")


def test_import_trial_raises_for_a_bad_trial() -> None:
    with pytest.raises(HarborImportError) as info:
        import_trial(JOB / BROKEN)
    assert info.value.path == JOB / BROKEN / "result.json"


@pytest.mark.parametrize(
    ("exception_type", "status"),
    [
        ("AgentTimeoutError", ExitStatus.AGENT_TIMEOUT),
        ("VerifierTimeoutError", ExitStatus.VERIFIER_TIMEOUT),
        ("AgentSetupTimeoutError", ExitStatus.ERROR),
        ("RewardFileNotFoundError", ExitStatus.ERROR),
    ],
)
def test_exception_maps_to_exit_status(tmp_path: Path, exception_type: str, status: ExitStatus) -> None:
    trial = copy_trial(PASS, tmp_path)
    edit_result(
        trial,
        exception_info={
            "exception_type": exception_type,
            "exception_message": "boom",
            "exception_traceback": "",
            "occurred_at": "2026-01-05T10:01:00Z",
        },
    )
    record = import_trial(trial)
    assert (record.exit_status, record.error) == (status, f"{exception_type}: boom")
    assert record.passed is False and record.full_reward is True


def test_unreadable_trajectory_gives_a_record_with_the_error(tmp_path: Path) -> None:
    trial = copy_trial(PASS, tmp_path)
    (trial / "agent" / "trajectory.json").write_text("{oops")
    record = import_trial(trial)
    assert record.messages == [] and record.reward == 1.0
    assert record.error is not None and record.error.startswith("agent/trajectory.json: malformed JSON")
    (trial / "agent" / "trajectory.json").write_text(json.dumps({"schema_version": "ATIF-v2.0", "steps": []}))
    assert "unsupported schema_version 'ATIF-v2.0'" in (import_trial(trial).error or "")


def test_reward_falls_back_to_verifier_files(tmp_path: Path) -> None:
    trial = copy_trial(FAIL, tmp_path)
    edit_result(trial, verifier_result=None)
    assert (import_trial(trial).reward, import_trial(trial).full_reward) == (0.0, False)
    (trial / "verifier" / "reward.json").write_text(json.dumps({"a": 1, "b": 1.0}))
    record = import_trial(trial)
    assert (record.reward, record.rewards, record.full_reward) == (1.0, {"a": 1.0, "b": 1.0}, True)


@pytest.mark.parametrize(
    ("rewards", "expected"),
    [
        ({"reward": 0.5, "style": 1.0}, (0.5, False)),
        ({"reward": 1.0, "style": 1.0}, (1.0, True)),
        ({"a": 1.0, "b": 0.0}, (0.5, False)),
        ({"a": 2.0, "b": 1.0}, (1.5, True)),
        ({}, (None, False)),
        (None, (None, False)),
    ],
)
def test_reward_of(rewards: dict[str, float] | None, expected: tuple) -> None:
    assert reward_of(rewards) == expected


@pytest.mark.parametrize(
    ("raw", "effort"),
    [
        ("none", Effort.OFF),
        ("minimal", Effort.OFF),
        ("low", Effort.LOW),
        ("Medium", Effort.MEDIUM),
        ("high", Effort.XHIGH),
        ("xhigh", Effort.XHIGH),
        ("max", Effort.XHIGH),
        ("default", None),
        (0.7, None),
        (None, None),
    ],
)
def test_map_effort(raw: Any, effort: Effort | None) -> None:
    assert map_effort(raw) is effort


def test_effort_override_and_trajectory_fallback(tmp_path: Path) -> None:
    assert import_trial(JOB / PASS, effort="low").effort is Effort.LOW
    trial = copy_trial(TIMEOUT, tmp_path)
    config = load(trial / "result.json")["config"]
    config["agent"]["kwargs"] = {}
    edit_result(trial, config=config)
    record = import_trial(trial)
    assert record.effort is Effort.MEDIUM  # the steps' reasoning_effort
    assert record.meta["harbor"]["reasoning_effort"] == "medium"


def test_task_version_without_checksum_hashes_the_task_id(tmp_path: Path) -> None:
    a, b = copy_trial(PASS, tmp_path / "a"), copy_trial(FAIL, tmp_path / "b")
    edit_result(a, task_checksum=None)
    edit_result(b, task_checksum=None)
    va, vb = import_trial(a).task_version, import_trial(b).task_version
    assert va == vb and len(va) == 64 and va != HELLO_SUM
    edit_result(b, task_id={"path": "tasks/other"})
    assert import_trial(b).task_version != va


def test_linear_history_continuation_is_appended(tmp_path: Path) -> None:
    trial = copy_trial(TIMEOUT, tmp_path)
    path = trial / "agent" / "trajectory.json"
    main = load(path)
    main["continued_trajectory_ref"] = "trajectory.cont-1.json"
    path.write_text(json.dumps(main))
    cont = traj(
        {"step_id": 1, "source": "user", "message": main["steps"][0]["message"], "is_copied_context": True},
        {"step_id": 2, "source": "user", "message": "You are picking up work.", "is_copied_context": True},
        agent(3, "Resolved the conflict.", metrics={"prompt_tokens": 900, "completion_tokens": 30}),
    )
    (path.parent / "trajectory.cont-1.json").write_text(json.dumps(cont))
    record = import_trial(trial)
    assert [m["role"] for m in record.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    assert record.messages[-2:] == [
        {"role": "user", "content": "You are picking up work."},
        {"role": "assistant", "content": "Resolved the conflict."},
    ]
    assert record.turns == 3 and record.usage[-1].prompt_tokens == 900
    assert record.meta["atif"]["continuations"] == ["trajectory.cont-1.json"]


def test_sources_a_trial_a_job_or_a_folder_of_jobs(tmp_path: Path) -> None:
    assert len(list(find_trials(DATA))) == len(list(find_trials(JOB))) == 6
    assert list(find_trials(JOB / PASS)) == [JOB / PASS]
    single = import_job(JOB / PASS, source="mine")
    assert (single.trials, single.imported, single.records[0].source) == (1, 1, "mine")
    with pytest.raises(HarborImportError, match="no Harbor trial folders"):
        import_job(tmp_path)
    with pytest.raises(HarborImportError, match="no such folder"):
        import_job(tmp_path / "nope")


def test_attempts_never_collide_across_jobs(tmp_path: Path) -> None:
    for name in ("job-a", "job-b"):
        shutil.copytree(JOB, tmp_path / name)
    report = import_job(tmp_path)
    assert (report.trials, report.imported) == (12, 10)
    assert len({r.rollout_id for r in report.records}) == 10
    hello = sorted((r.source, r.attempt) for r in report.records if r.task == "hello-world")
    assert hello == [("harbor:job-a", 0), ("harbor:job-a", 1), ("harbor:job-b", 2), ("harbor:job-b", 3)]


# --- CLI -------------------------------------------------------------------------------------------


def test_cli_writes_a_shard_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "rollouts"
    result = runner.invoke(app, ["import", "harbor-jobs", str(DATA), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["trials"], summary["imported"]) == (6, 5)
    assert summary["errors"] == [{"path": str(JOB / BROKEN / "result.json"), "reason": summary["errors"][0]["reason"]}]
    assert summary["errors"][0]["reason"].startswith("malformed JSON")
    assert Path(summary["shard"]).parent == out
    frame = read_rollouts(out)
    assert frame.height == 5
    assert sorted(frame["exit_status"].to_list()) == ["agent_timeout", "error", "ok", "ok", "ok"]
    loaded = by_trial(frame_to_records(frame))
    assert loaded[FAIL].messages == import_trial(JOB / FAIL, attempt=1).messages
    assert [(s.kind, s.tokens) for s in loaded[COMPACT].side_calls] == [
        (SideCallKind.SUMMARISATION, 700),
        (SideCallKind.SUMMARISATION, 350),
        (SideCallKind.SUMMARISATION, 0),
    ]


def test_cli_overrides_and_human_output(tmp_path: Path) -> None:
    out = tmp_path / "rollouts"
    result = runner.invoke(
        app, ["import", "harbor-jobs", str(JOB), "--out", str(out), "--source", "lab", "--effort", "low"]
    )
    assert result.exit_code == 0, result.output
    assert "6 trials: 5 imported, 1 errors" in result.output
    assert "failed" in result.output and "malformed JSON" in result.output
    frame = read_rollouts(out)
    assert set(frame["source"]) == {"lab"} and set(frame["effort"]) == {"low"}


def test_cli_usage_errors(tmp_path: Path) -> None:
    result = runner.invoke(app, ["import", "harbor-jobs", str(tmp_path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert not (tmp_path / "o").exists()
    result = runner.invoke(app, ["import", "harbor-jobs", str(JOB), "--out", str(tmp_path / "o"), "--effort", "huge"])
    assert result.exit_code == 2
