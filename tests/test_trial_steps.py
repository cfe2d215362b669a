"""Multi-step trials on real sandboxes: steps in order in one sandbox, setup hooks, gates, roll-ups."""

from __future__ import annotations

from pathlib import Path

from qaflow.agents import NopAgent, OracleAgent
from qaflow.models.trial import ErrorKind, ExitStatus
from qaflow.task import Task
from qaflow.trial import run_trial
from tests.stepfactory import write_stock_task

LENIENT_TOTAL_TEST = "#!/bin/bash\nsource /tests/grade.sh\nsame_as /app/total.txt 13 && grade 1\ngrade 0\n"
WRONG_RESTOCK = "#!/bin/bash\necho plums > /app/restock.txt\n"


def test_the_oracle_solves_every_step_in_one_sandbox(backend: str, tmp_path: Path) -> None:
    task = Task.load(write_stock_task(tmp_path))
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.error is None, result.error
    assert (result.reward, result.full_reward, result.exit_status) == (1.0, True, ExitStatus.OK)
    assert [(s.name, s.reward, s.full_reward, s.aborted) for s in result.steps] == [
        ("counter", 1.0, True, None),
        ("restock", 1.0, True, None),
        ("total", 1.0, True, None),
    ]
    counter, restock, total = result.steps
    assert counter.setup_exec is None and restock.setup_exec is not None and restock.setup_exec.exit_code == 0
    assert all(s.agent_exec is not None and s.agent_exec.exit_code == 0 for s in result.steps)
    assert {"setup", "agent", "verifier", "total"} <= set(restock.timings)
    assert result.verifier_exec == total.verifier_exec
    assert {"setup", "agent", "verifier", "total"} <= set(result.timings)


def test_the_final_strategy_takes_the_last_step_and_mean_averages(backend: str, tmp_path: Path) -> None:
    overrides = {"steps/restock/solution/solve.sh": WRONG_RESTOCK, "steps/total/tests/test.sh": LENIENT_TOTAL_TEST}
    final = Task.load(write_stock_task(tmp_path, "final", strategy="final", min_rewards={}, overrides=overrides))
    mean = Task.load(write_stock_task(tmp_path, "mean", min_rewards={}, overrides=overrides))
    by_final = run_trial(final, OracleAgent(), backend=backend)
    by_mean = run_trial(mean, OracleAgent(), backend=backend)
    for result in (by_final, by_mean):
        assert [s.reward for s in result.steps] == [1.0, 0.0, 1.0], result.steps
        assert result.error is None and result.exit_status is ExitStatus.OK
    assert (by_final.reward, by_final.full_reward) == (1.0, True)
    assert by_mean.reward is not None and abs(by_mean.reward - 2 / 3) < 1e-9 and not by_mean.full_reward


def test_a_missed_min_reward_stops_the_trial(backend: str, tmp_path: Path) -> None:
    task = Task.load(write_stock_task(tmp_path, overrides={"steps/restock/solution/solve.sh": WRONG_RESTOCK}))
    result = run_trial(task, OracleAgent(), backend=backend)
    assert [s.name for s in result.steps] == ["counter", "restock"]
    assert result.steps[1].aborted == "step 'restock': reward=0 below min_reward 1"
    assert (result.reward, result.full_reward, result.error) == (0.5, False, None)


def test_a_failing_setup_sh_aborts_the_step_and_the_rest(backend: str, tmp_path: Path) -> None:
    setup = "#!/bin/bash\necho 'stock.csv is not ready' >&2\nexit 3\n"
    task = Task.load(write_stock_task(tmp_path, overrides={"steps/restock/workdir/setup.sh": setup}))
    result = run_trial(task, OracleAgent(), backend=backend)
    counter, restock = result.steps
    assert counter.reward == 1.0 and counter.aborted is None
    assert restock.error is not None and restock.error.kind is ErrorKind.SETUP
    assert "workdir/setup.sh exited 3: stock.csv is not ready" in restock.error.message
    assert restock.agent_exec is None and restock.verifier_exec is None and restock.reward is None
    assert restock.setup_exec is not None and restock.setup_exec.exit_code == 3
    assert restock.aborted is not None and restock.aborted.startswith("setup_failed")
    assert result.exit_status is ExitStatus.ERROR and result.error is not None
    assert result.error.kind is ErrorKind.SETUP and not result.full_reward


def test_nop_gets_nothing_and_stops_at_the_first_gate(backend: str, tmp_path: Path) -> None:
    task = Task.load(write_stock_task(tmp_path))
    result = run_trial(task, NopAgent(), backend=backend)
    assert (result.reward, result.full_reward, result.error) == (0.0, False, None)
    assert [s.name for s in result.steps] == ["counter"]
    ungated = run_trial(Task.load(write_stock_task(tmp_path / "u", min_rewards={})), NopAgent(), backend=backend)
    assert [s.reward for s in ungated.steps] == [0.0, 0.0, 0.0] and ungated.reward == 0.0, [
        (s.name, s.error) for s in ungated.steps
    ]


def test_each_step_sees_its_own_solution_and_no_earlier_verifier(backend: str, tmp_path: Path) -> None:
    peek = (
        "#!/bin/bash\nls -A /solution /tests /logs/verifier 2>&1\n"
        + "awk -F, '$2 == 0 {print $1}' /app/stock.csv > /app/restock.txt\n"
    )
    overrides = {"steps/counter/solution/notes.txt": "scratch\n", "steps/restock/solution/solve.sh": peek}
    task = Task.load(write_stock_task(tmp_path, overrides=overrides))
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.full_reward, result.steps
    seen = result.steps[1].agent_exec
    assert seen is not None
    assert "solve.sh" in seen.stdout and "notes.txt" not in seen.stdout
    assert "grade.sh" not in seen.stdout and "reward.txt" not in seen.stdout
    assert "/logs/verifier:" in seen.stdout and "'/logs/verifier'" not in seen.stdout  # there and empty, as in Harbor


def test_a_step_timeout_overrides_the_task_timeout(backend: str, tmp_path: Path) -> None:
    slow = "#!/bin/bash\nsleep 30\n"
    folder = write_stock_task(
        tmp_path, timeouts={"counter": (1.0, 20.0)}, overrides={"steps/counter/solution/solve.sh": slow}
    )
    result = run_trial(Task.load(folder), OracleAgent(), backend=backend)
    (counter,) = result.steps
    assert counter.exit_status is ExitStatus.AGENT_TIMEOUT and counter.timings["agent"] < 15
    assert result.exit_status is ExitStatus.AGENT_TIMEOUT and counter.reward == 0.0


def test_last_step_ends_the_trial_early(backend: str, tmp_path: Path) -> None:
    task = Task.load(write_stock_task(tmp_path))
    result = run_trial(task, OracleAgent(), backend=backend, last_step="restock")
    assert [s.name for s in result.steps] == ["counter", "restock"] and result.full_reward


def test_a_separate_verifier_runs_each_step_in_its_own_image(backend: str, tmp_path: Path) -> None:
    """`tests/Dockerfile` makes every step's verifier separate: built from it, with the agent's workdir
    copied in (the step verifier is opened on the trial's own backend)."""
    verifier_image = "FROM python:3.11-slim\nWORKDIR /app\nENV IN_VERIFIER_IMAGE=1\n"
    total_test = (
        '#!/bin/bash\nsource /tests/grade.sh\n[ "$IN_VERIFIER_IMAGE" = 1 ] || grade 0\n'
        "same_as /app/total.txt 13 && grade 1\ngrade 0\n"
    )
    task = Task.load(
        write_stock_task(
            tmp_path, overrides={"tests/Dockerfile": verifier_image, "steps/total/tests/test.sh": total_test}
        )
    )
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.error is None, result.error
    assert [(s.name, s.reward, s.verifier_sandbox) for s in result.steps] == [
        ("counter", 1.0, "separate"),
        ("restock", 1.0, "separate"),
        ("total", 1.0, "separate"),
    ]
    assert result.reward == 1.0
