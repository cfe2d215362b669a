"""Multi-step tasks without a sandbox: each step as a task, the min_reward gate, the reward roll-up,
and the audit's per-step judging."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.probes.multi_step import judge_step
from qaflow.audit.probes.step_views import step_views
from qaflow.errors import TaskError
from qaflow.models.records import FindingCode
from qaflow.models.trial import StepResult
from qaflow.task import MultiStepRewardStrategy, Task, VerifierEnvironmentMode
from qaflow.task_steps import step_tasks
from qaflow.trial.step_rewards import min_reward_failure, roll_up
from tests.stepfactory import write_stock_task


def test_each_step_is_a_task_with_its_own_instruction_solution_and_timeouts(tmp_path: Path) -> None:
    folder = write_stock_task(tmp_path, timeouts={"total": (30.0, 600.0)})
    toml = folder / "task.toml"
    toml.write_text(
        toml.read_text()
        .replace("[agent]\ntimeout_sec = 60.0\n", '[agent]\ntimeout_sec = 60.0\nuser = "nobody"\n')
        .replace("[verifier]\ntimeout_sec = 60.0\n", '[verifier]\ntimeout_sec = 60.0\n[verifier.env]\nMODE = "task"\n')
        .replace(
            'name = "counter"\nmin_reward = 1.0\n\n[steps.agent]\n',
            'name = "counter"\nmin_reward = 1.0\n\n[steps.agent]\nuser = "root"\n',
        )
    )
    task = Task.load(folder)
    counter, restock, total = step_tasks(task)
    assert [s.step_name for s in (counter, restock, total)] == ["counter", "restock", "total"]
    assert counter.instruction.startswith("Write an executable bash script `/app/counter.sh`")
    assert counter.solution_dir == folder.resolve() / "steps" / "counter" / "solution"
    assert (counter.agent_timeout_sec, restock.agent_timeout_sec) == (30.0, 40.0)
    assert (counter.verifier_timeout_sec, restock.verifier_timeout_sec, total.verifier_timeout_sec) == (
        20.0,
        25.0,
        600.0,
    )
    assert (counter.config.agent.user, restock.config.agent.user) == ("root", "nobody")
    assert restock.config.verifier.env == {"MODE": "task", "ZERO_ROWS": "2"}
    assert counter.config.verifier.env == {"MODE": "task"}
    assert [p.name for p in restock.test_folders] == ["tests", "tests"]
    assert restock.test_folders[1].parent.name == "restock"
    assert restock.verifier_mode is VerifierEnvironmentMode.SHARED
    assert (restock.index, restock.count, total.is_last) == (1, 3, True)
    assert step_tasks(Task.load(write_stock_task(tmp_path / "other"))) and not counter.config.steps


def test_an_unset_step_verifier_timeout_falls_back_to_the_task_level_one(tmp_path: Path) -> None:
    folder = write_stock_task(tmp_path)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("[steps.verifier]\ntimeout_sec = 20.0\n", "[steps.verifier]\n"))
    counter, _, total = step_tasks(Task.load(folder))
    assert (counter.verifier_timeout_sec, total.verifier_timeout_sec) == (60.0, 60.0)


def test_an_unknown_reward_strategy_is_an_invalid_task(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="multi_step_reward_strategy"):
        Task.load(write_stock_task(tmp_path, strategy="median"))
    assert Task.load(write_stock_task(tmp_path / "ok", strategy="final")).config.multi_step_reward_strategy == "final"


@pytest.mark.parametrize(
    ("rewards", "gate", "fails"),
    [
        ({"reward": 1.0}, 1.0, False),
        ({"reward": 0.5}, 1.0, True),
        ({"score": 0.7}, 0.5, False),  # one key: it is the reward
        ({"a": 1.0, "b": 1.0}, 1.0, True),  # several keys, none named reward: -inf
        (None, 0.0, True),  # no reward at all: -inf
        ({"correct": 0.9, "style": 0.4}, {"correct": 0.8, "style": 0.5}, True),
        ({"correct": 0.9, "style": 0.6}, {"correct": 0.8, "style": 0.5}, False),
        ({"correct": 0.9}, {"correct": 0.8, "style": 0.5}, True),
        ({"reward": 0.0}, None, False),
    ],
)
def test_min_reward_gates_like_harbor(rewards: dict | None, gate: float | dict | None, fails: bool) -> None:
    assert (min_reward_failure(rewards, gate) is not None) == fails


def test_min_reward_failure_says_which_key_and_value() -> None:
    assert min_reward_failure({"reward": 0.0}, 1.0) == "reward=0 below min_reward 1"
    assert min_reward_failure({"a": 1.0}, {"b": 0.5}) == "b=-inf below min_reward 0.5"


def _step(name: str, rewards: dict[str, float] | None, source: str = "reward.json") -> StepResult:
    reward = None if rewards is None else rewards.get("reward", sum(rewards.values()) / len(rewards))
    return StepResult(name=name, rewards=rewards, reward=reward, reward_source=None if rewards is None else source)


def test_mean_roll_up_is_per_key_over_steps_that_gave_a_reward() -> None:
    steps = [_step("a", {"x": 1.0, "y": 0.5}), _step("b", None), _step("c", {"x": 0.0})]
    reward = roll_up(steps, None)
    assert reward is not None
    assert reward.values == {"x": 0.5, "y": 0.25}  # y missing in c counts 0; b has no reward and is not counted
    assert math.isclose(reward.value, 0.375) and not reward.full
    full = roll_up([_step("a", {"reward": 1.0}, "reward.txt"), _step("b", {"reward": 1.0}, "reward.txt")], None)
    assert full is not None and full.full and full.source == "reward.txt"


def test_final_roll_up_is_the_last_step_that_ran() -> None:
    steps = [_step("a", {"reward": 0.0}), _step("b", {"reward": 1.0, "style": 1.0})]
    reward = roll_up(steps, MultiStepRewardStrategy.FINAL)
    assert reward is not None and reward.values == {"reward": 1.0, "style": 1.0} and reward.full
    assert roll_up([_step("a", {"reward": 1.0}), _step("b", None)], MultiStepRewardStrategy.FINAL) is None
    assert roll_up([], None) is None and roll_up([_step("a", None)], None) is None


def _run(probe: str, steps: list[dict], **fields: object) -> ProbeRun:
    parts = [ProbeRun(probe=probe, **s).model_dump(mode="json") for s in steps]
    return ProbeRun(probe=probe, extra={"steps": parts}, **fields)


def test_step_views_name_runs_as_single_step_probes_and_skip_runs_that_never_reached_the_step() -> None:
    reached = _run(
        "b/nop", [{"reward": 1.0, "full": True, "extra": {"step": "a"}}, {"reward": 0.0, "extra": {"step": "b"}}]
    )
    stopped = _run("b/nop", [{"reward": 0.0, "extra": {"step": "a", "aborted": "min_reward"}}])
    never = ProbeRun(probe="b/nop", error="the sandbox did not start", error_kind="sandbox")
    views = step_views([reached, stopped, never], "b")
    assert [(v.probe, v.reward) for v in views] == [("nop", 0.0)]
    assert [v.error_kind for v in step_views([never], "a", first=True)] == ["sandbox"]


def test_judged_step_findings_name_the_step() -> None:
    oracle = [ProbeRun(probe="oracle", reward=1.0, full=True, agent_exit=0) for _ in range(2)]
    nop = [ProbeRun(probe="nop", reward=1.0, full=True) for _ in range(2)]
    (finding,) = judge_step("restock", oracle, nop, [], [])
    assert finding.code is FindingCode.FALSE_PASS
    assert finding.evidence["step"] == "restock" and finding.message.startswith("step 'restock': ")
    broken = [ProbeRun(probe="oracle", reward=0.0, agent_exit=2, agent_output="boom") for _ in range(2)]
    (finding,) = judge_step("total", broken, [], [], [])
    assert finding.code is FindingCode.BROKEN_SOLUTION and "steps/total/solution/solve.sh exited 2" in finding.message


def test_a_step_whose_setup_always_fails_is_build_failed() -> None:
    runs = [
        ProbeRun(probe="oracle", error_kind="setup_failed", error="setup.sh exited 3", extra={"setup_output": "no"})
        for _ in range(2)
    ]
    (finding,) = judge_step("restock", runs, [], [], [])
    assert finding.code is FindingCode.BUILD_FAILED and finding.evidence["step"] == "restock"
    assert "steps/restock/workdir/setup.sh" in finding.message and finding.evidence["setup_output"] == "no"
