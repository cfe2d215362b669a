"""Checkpoint selection in two stages (shortlist on a subset at three efforts, then the full set at one),
and the evaluation cache keyed by checkpoint content, task version, effort and attempts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from qaflow.llm import LLMConfig, ScriptedReply
from qaflow.llm.config import ScriptedToolCall as Call
from qaflow.models.frame import read_rollouts
from qaflow.models.rollout import Effort
from qaflow.task import Task
from sft.cli import print_selection
from sft.select import EvalOutcome, HarnessEvaluator, SelectConfig, load_tasks, select_checkpoint, task_subset
from sft.train import CheckpointInfo
from tests.conftest import require_backend
from tests.taskfactory import write_task

L, M, X, OFF = Effort.LOW, Effort.MEDIUM, Effort.XHIGH, Effort.OFF


def _write(content: str) -> list[ScriptedReply]:
    return [
        ScriptedReply(tool_calls=[Call(name="write", arguments={"path": "/app/out.txt", "content": content})]),
        ScriptedReply(content="wrote it"),
    ]


def test_two_stages_shortlist_on_a_subset_then_choose_on_the_full_set(tmp_path: Path, capsys) -> None:
    for i in range(6):
        write_task(tmp_path / "pool", f"t{i}")
    tasks = load_tasks(tmp_path / "pool")
    names = {t.name for t in tasks}
    subset = {t.name for t in task_subset(tasks, 3)}
    assert len(subset) == 3 and subset == {t.name for t in task_subset(list(reversed(tasks)), 3)}  # order-free
    outside = sorted(names - subset)[0]
    infos = {
        "A": CheckpointInfo(path=Path("run/checkpoint-10"), step=10, eval_loss=0.5),
        "B": CheckpointInfo(path=Path("run/checkpoint-20"), step=20, eval_loss=0.9),
        "C": CheckpointInfo(path=Path("run/checkpoint-30"), step=30, eval_loss=0.8),
        "D": CheckpointInfo(path=Path("run/checkpoint-40"), step=40, eval_loss=0.7),
    }
    by_path = {str(i.path): k for k, i in infos.items()}
    # which tasks each checkpoint solves at each effort (not listed: none)
    solves = {
        "A": {OFF: names, M: names},  # good at off and medium only; lowest loss
        "B": {L: names, M: names - {outside}, X: names},  # best across efforts on the subset
        "C": {M: names, X: names},
        "D": {L: names},
    }
    calls: list[tuple[str, Effort, int, int]] = []

    def evaluate(info: CheckpointInfo, run: Sequence[Task], effort: Effort, attempts: int) -> EvalOutcome:
        key = by_path[str(info.path)]
        calls.append((key, effort, len(run), attempts))
        solved = len({t.name for t in run} & solves[key].get(effort, set()))
        return EvalOutcome(solved=solved, attempted=len(run), mean_output_tokens=10.0 * info.step)

    config = SelectConfig(subset_size=3, shortlist_size=2, final_effort=M, shortlist_attempts=2, final_attempts=3)
    selection = select_checkpoint(list(infos.values()), tasks, evaluate, config)
    # stage 1: every checkpoint on the 3 subset tasks at low, medium, xhigh (2 attempts); stage 2: B and C only
    assert calls[:12] == [(k, e, 3, 2) for k in "ABCD" for e in (L, M, X)]
    assert calls[12:] == [("B", M, 6, 3), ("C", M, 6, 3)]
    assert sorted(selection.subset) == sorted(subset)
    stage1 = {
        by_path[r.checkpoint]: (r.solved_by_effort, r.solved, r.attempted, r.shortlisted) for r in selection.shortlist
    }
    assert stage1 == {
        "A": ({"low": 0, "medium": 3, "xhigh": 0}, 3, 9, False),
        "B": ({"low": 3, "medium": 3, "xhigh": 3}, 9, 9, True),
        "C": ({"low": 0, "medium": 3, "xhigh": 3}, 6, 9, True),
        "D": ({"low": 3, "medium": 0, "xhigh": 0}, 3, 9, False),
    }
    # stage 2 decides: B led stage 1, but C solves all 6 at medium and B 5
    assert [(by_path[r.checkpoint], r.solved, r.attempted) for r in selection.rows] == [("B", 5, 6), ("C", 6, 6)]
    assert by_path[selection.chosen] == "C" and by_path[selection.lowest_loss or ""] == "A"
    assert selection.shortlist_frame()["solved_xhigh"].to_list() == [0, 3, 3, 0]
    # a naive single stage (every checkpoint, full set, one effort) chooses differently: A ties C on medium
    # (6 of 6) and wins on loss; at off A alone solves anything
    for effort in (M, OFF):
        naive = select_checkpoint(
            list(infos.values()), tasks, evaluate, SelectConfig(subset_size=0, final_effort=effort)
        )
        assert by_path[naive.chosen] == "A" and naive.shortlist == []
    # both tables printed
    print_selection(selection)
    out = capsys.readouterr().out
    assert "stage 1: 3 tasks at low, medium, xhigh" in out and "stage 2: 6 tasks at medium" in out
    assert out.count("shortlisted") == 2 and "chosen: run/checkpoint-30" in out
    with pytest.raises(ValueError, match="no task"):
        select_checkpoint(list(infos.values()), [], evaluate, config)


@pytest.mark.bwrap
def test_the_cache_follows_checkpoint_content_and_task_versions_not_names(tmp_path: Path) -> None:
    """Pool A then pool B with the same checkpoint: B's counts come from B's tasks (never 'solved 3 of 1');
    a rerun reads the cache; new weights under the same name run again."""
    require_backend("bwrap")
    pool_a, pool_b = tmp_path / "a", tmp_path / "b"
    write_task(pool_a, "a")
    write_task(pool_b, "b1")
    write_task(pool_b, "b2", test_sh=(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        'if [ "$(cat /app/out.txt 2>/dev/null)" = other ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
    ))  # fmt: skip
    write_task(pool_b, "b3")
    checkpoint = tmp_path / "run" / "checkpoint-5"
    checkpoint.mkdir(parents=True)
    (checkpoint / "adapter_model.safetensors").write_bytes(b"weights v1")
    (checkpoint / "optimizer.pt").write_bytes(b"state 1")
    info = CheckpointInfo(path=checkpoint, step=5)
    script = {"replies": _write("done")}
    evaluator = HarnessEvaluator(
        cache_dir=tmp_path / "run" / "eval",
        model_for=lambda _: LLMConfig(model="openai/scripted", script=script["replies"]),
        backend="bwrap",
    )
    a = load_tasks(pool_a)
    b = load_tasks(pool_b)
    on_a = evaluator(info, a, OFF, 1)
    assert (on_a.solved, on_a.attempted, evaluator.runs) == (1, 1, 1), _attempts(evaluator.cache_dir)
    assert on_a.mean_output_tokens > 0
    on_b = evaluator(info, b, OFF, 1)
    assert (on_b.solved, on_b.attempted, evaluator.runs) == (2, 3, 4), _attempts(evaluator.cache_dir)  # b2: other
    # cached: the same checkpoint content, versions, effort and attempts read back, even with a policy that
    # would now write `other`; the optimizer state is not part of the model's content
    script["replies"] = _write("other")
    (checkpoint / "optimizer.pt").write_bytes(b"state 2")
    again = HarnessEvaluator(cache_dir=evaluator.cache_dir, model_for=evaluator.model_for, backend="bwrap")
    assert (again(info, b, OFF, 1).solved, again.runs) == (2, 0)
    # another effort or attempt count is another key; a task already run is not run twice
    assert (again(info, b[:1], OFF, 2).attempted, again.runs) == (1, 2)
    # new weights under the same checkpoint name: everything runs again (b2 alone passes now)
    (checkpoint / "adapter_model.safetensors").write_bytes(b"weights v2")
    fresh = HarnessEvaluator(cache_dir=evaluator.cache_dir, model_for=evaluator.model_for, backend="bwrap")
    assert (fresh(info, b, OFF, 1).solved, fresh.runs) == (1, 3)


def _attempts(cache_dir: Path) -> str:
    """What each cached attempt ended with, for a failure's message."""
    columns = ["task", "reward", "exit_status", "stop_reason", "error", "verifier_output", "timings_json"]
    shards = sorted(cache_dir.rglob("*.parquet"))
    return "\n".join(str(row) for shard in shards for row in read_rollouts(shard).select(columns).to_dicts())


def _rows(*rows: tuple[str, int, float | None, float]) -> list[CheckpointInfo]:
    return [CheckpointInfo(path=Path(f"run/{name}"), step=step, eval_loss=loss) for name, step, loss, _ in rows]


def test_a_tie_on_tasks_solved_is_reported_with_the_criterion_that_chose(tmp_path: Path, capsys) -> None:
    write_task(tmp_path / "pool", "t0")
    tasks = load_tasks(tmp_path / "pool")
    solved = {"checkpoint-1": 1, "checkpoint-2": 1, "checkpoint-3": 0}
    tokens = {"checkpoint-1": 50.0, "checkpoint-2": 20.0, "checkpoint-3": 10.0}

    def evaluate(info: CheckpointInfo, run: Sequence[Task], effort: Effort, attempts: int) -> EvalOutcome:
        return EvalOutcome(solved=solved[info.path.name], attempted=len(run), mean_output_tokens=tokens[info.path.name])

    by_loss = select_checkpoint(
        _rows(("checkpoint-1", 1, 0.4, 0), ("checkpoint-2", 2, 0.6, 0), ("checkpoint-3", 3, 0.1, 0)),
        tasks,
        evaluate,
        SelectConfig(subset_size=0),
    )
    assert by_loss.chosen == "run/checkpoint-1" and by_loss.lowest_loss == "run/checkpoint-3"
    assert (by_loss.tied, by_loss.tie_break) == (["run/checkpoint-1", "run/checkpoint-2"], "lower validation loss")
    print_selection(by_loss)
    out = capsys.readouterr().out.replace("\n", " ")
    assert "tie: 2 checkpoints (checkpoint-1, checkpoint-2) solve 1 tasks" in out
    assert "cannot separate them; chosen by lower validation loss" in out
    same_loss = _rows(("checkpoint-1", 1, 0.5, 0), ("checkpoint-2", 2, 0.5, 0), ("checkpoint-3", 3, 0.5, 0))
    by_tokens = select_checkpoint(same_loss, tasks, evaluate, SelectConfig(subset_size=0))
    assert (by_tokens.chosen, by_tokens.tie_break) == ("run/checkpoint-2", "fewer mean output tokens")
    solved["checkpoint-2"] = 0
    alone = select_checkpoint(same_loss, tasks, evaluate, SelectConfig(subset_size=0))
    assert (alone.chosen, alone.tied, alone.tie_break) == ("run/checkpoint-1", [], None)
    print_selection(alone)
    assert "tie:" not in capsys.readouterr().out


def test_select_evaluates_on_accepted_tasks_and_takes_thinking_budgets_from_the_cli(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from qaflow.cli import app
    from qaflow.ledger.status import StatusWriter
    from qaflow.models.records import VersionStatus
    from qaflow.pool import Pool
    from sft.local_llm import PROVIDER
    from sft.select import accepted_tasks

    pool = tmp_path / "pool"
    write_task(pool, "a")
    write_task(pool, "b")
    (tmp_path / "run" / "checkpoint-1").mkdir(parents=True)
    select = ["sft", "select", str(tmp_path / "run"), "--tasks", str(pool)]
    unaudited = CliRunner().invoke(app, select)
    assert unaudited.exit_code == 2
    assert "no accepted task to evaluate on: the pool has no ledger" in unaudited.output.replace("\n", " ")
    with Pool.open(pool) as opened:
        opened.scan()
    with pytest.raises(ValueError, match=r"pool: no accepted task to evaluate on; audit and accept tasks first"):
        accepted_tasks(pool)
    none = CliRunner().invoke(app, select)
    assert none.exit_code == 2 and "no accepted task" in none.output
    with Pool.open(pool, create=False) as opened:
        row = next(r for r in opened.list() if r.name == "test/a")
        opened.ledger.set_status(row.version, VersionStatus.ACCEPTED, by=StatusWriter.AUDIT, reason="test")
    assert [t.name for t in accepted_tasks(pool)] == ["test/a"]
    assert len(load_tasks(pool)) == 2  # --all-tasks: every folder

    bad = CliRunner().invoke(app, [*select, "--thinking-budget", "low=many"])
    assert bad.exit_code == 2 and "'low=many' is not EFFORT=N" in bad.output
    endpoint = CliRunner().invoke(app, [*select, "--thinking-budget", "low=8", "--endpoint", "http://x"])
    assert endpoint.exit_code == 2 and "not to a model served at --endpoint" in endpoint.output
    evaluator = HarnessEvaluator(cache_dir=tmp_path / "eval", thinking_budgets={L: 8, X: 0})
    table = evaluator.harness_for(LLMConfig(model=f"{PROVIDER}/m")).efforts
    assert table.kwargs(f"{PROVIDER}/m", L) == {"enable_thinking": True, "thinking_budget": 8, "effort": "low"}
    assert table.kwargs(f"{PROVIDER}/m", X)["enable_thinking"] is False
    # another budget is another cache key: counts at one budget are never read back at another
    default = HarnessEvaluator(cache_dir=tmp_path / "eval")
    task = accepted_tasks(pool)[0]
    keys = {e.cache_key(task, L, 1, e.harness_for(LLMConfig(model=f"{PROVIDER}/m"))) for e in (evaluator, default)}
    assert len(keys) == 2
