"""Policy-gradient rounds on the tiny model: on scripted rollouts, and collected by the local policy."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from qaflow.agents.tool_specs import TOOLS
from qaflow.models.frame import write_shard
from rl.round import RoundConfig, run_round
from rl.tokens import NO_LOG
from rl.update import IGNORE_INDEX, policy_loss, token_logprobs
from sft.conditioning import effort_conditioning, own_template
from sft.masking import mask_sessions
from sft.templates import training_template
from sft.tiny_model import build_tiny_model
from tests.trajectories import make_record


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def conversation(word: str) -> list[dict]:
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Solve the task."},
        {"role": "assistant", "content": f"{word} {word} {word}", "reasoning_content": f"think {word}"},
    ]


def generated_logprob(model, tokenizer, template: str, messages: list[dict]) -> float:
    example = mask_sessions([messages], [None], tokenizer, template).examples[0]
    ids, labels = torch.tensor([example.input_ids]), torch.tensor([example.labels])
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    logp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return float((logp * (labels[:, 1:] != IGNORE_INDEX)).sum())


def test_round_moves_logprobs_with_the_sign_of_the_advantage(tiny: Path, tmp_path: Path) -> None:
    good, bad = conversation("alpha"), conversation("omega")
    records = [
        make_record(task="t", effort="low", attempt=0, messages=good, reward=1.0, thinking_tokens=10, tools=[]),
        make_record(task="t", effort="low", attempt=1, messages=bad, reward=0.0, thinking_tokens=10, tools=[]),
        make_record(task="t", effort="medium", attempt=0, messages=good, reward=1.0, thinking_tokens=10, tools=[]),
        make_record(task="t", effort="medium", attempt=1, messages=good, reward=1.0, thinking_tokens=10, tools=[]),
    ]
    write_shard(records, tmp_path / "rollouts")
    config = RoundConfig.model_validate(
        {
            "policy": str(tiny),
            "output_dir": str(tmp_path / "out"),
            "rollouts": str(tmp_path / "rollouts"),
            "update": {
                "learning_rate": 0.05,
                "epochs": 4,
                "batch_size": 2,
                "clip": None,
                "lora": {"r": 8, "alpha": 16, "dropout": 0.0},
            },
        }
    )
    report = run_round(config)
    assert report.rollouts == 4
    # medium's two equal successes have advantage 0 and are skipped; low's +-0.5 are learned
    assert report.update.trajectories == 4 and report.update.skipped_zero_advantage == 2
    assert report.update.steps == 4
    # records without sampled tokens (scripted, no sample log) are re-rendered, and counted: the two trained turns
    assert report.retokenized == {NO_LOG: 4}
    assert report.update.retokenized_turns == 2 and report.update.sampled_turns == 0
    assert report.update.ratio_mean is None
    low = next(r for r in report.by_effort if r["effort"] == "low")
    assert low["success_rate"] == 0.5 and low["mean_abs_advantage"] == pytest.approx(0.5)

    from peft import PeftModel

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    template = training_template(tokenizer)
    before = AutoModelForCausalLM.from_pretrained(tiny)
    after = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny), str(report.checkpoint))
    up = generated_logprob(after, tokenizer, template, good) - generated_logprob(before, tokenizer, template, good)
    down = generated_logprob(after, tokenizer, template, bad) - generated_logprob(before, tokenizer, template, bad)
    assert up > 0 > down
    assert (report.checkpoint / "round_report.json").is_file()
    assert (report.checkpoint / "scored_rollouts.parquet").is_file()


def test_attempts_that_were_not_correctly_graded_are_left_out_and_counted(tiny: Path, tmp_path: Path) -> None:
    good, bad = conversation("alpha"), conversation("omega")
    graded = [
        make_record(task="t", effort="low", attempt=0, messages=good, reward=1.0, tools=[]),
        make_record(task="t", effort="low", attempt=1, messages=bad, reward=0.0, tools=[]),
        # a limit stop the verifier still scored is a correctly graded failure
        make_record(task="t", effort="low", attempt=2, messages=bad, reward=0.0, tools=[], exit_status="agent_timeout"),
    ]
    left_out = [
        make_record(task="t", effort="low", attempt=3, messages=bad, reward=0.0, tools=[], stop_reason="llm_error"),
        make_record(task="t", effort="low", attempt=4, messages=bad, reward=None, tools=[], exit_status="error"),
        make_record(task="t", effort="low", attempt=5, messages=bad, reward=None, tools=[], exit_status="error"),
        make_record(
            task="t", effort="low", attempt=6, messages=bad, reward=None, tools=[], exit_status="agent_timeout"
        ),
        make_record(
            task="t", effort="low", attempt=7, messages=bad, reward=None, tools=[], exit_status="verifier_timeout"
        ),
    ]
    write_shard(graded + left_out, tmp_path / "rollouts")
    config = RoundConfig.model_validate(
        {"policy": str(tiny), "output_dir": str(tmp_path / "out"), "rollouts": str(tmp_path / "rollouts")}
    )
    report = run_round(config)
    assert (report.collected, report.rollouts) == (8, 3)
    assert report.excluded == {"llm_error": 1, "error": 2, "verifier_timeout": 1, "no_verifier_result": 1}
    low = report.by_effort[0]
    assert (low["effort"], low["attempts"], low["excluded"]) == ("low", 3, 5)
    scored = pl.read_parquet(report.checkpoint / "scored_rollouts.parquet")
    assert sorted(scored["attempt"].to_list()) == [0, 1, 2]
    # the mean is over graded attempts only: 1/3, so the success gets +2/3 and each graded failure -1/3
    assert sorted(scored["advantage"].to_list()) == pytest.approx([-1 / 3, -1 / 3, 2 / 3])

    write_shard(left_out, tmp_path / "only_errors")
    config = config.model_copy(update={"rollouts": tmp_path / "only_errors"})
    with pytest.raises(ValueError, match="no correctly graded attempt"):
        run_round(config)


def test_observation_tokens_get_no_gradient_and_the_advantage_sign_sets_the_direction(tiny: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    record = make_record(tool_steps=2)
    example = mask_sessions([record.messages], [record.tools], tokenizer, training_template(tokenizer)).examples[0]
    ids, labels = torch.tensor([example.input_ids]), torch.tensor([example.labels])
    model = AutoModelForCausalLM.from_pretrained(tiny)
    for advantage in (0.7, -0.7):
        logits = model(input_ids=ids).logits.detach().requires_grad_(True)
        loss, info = policy_loss(logits, labels, advantage, clip=0.2)
        loss.backward()
        grad = logits.grad[0, :-1]
        masked = labels[0, 1:] == IGNORE_INDEX
        assert torch.all(grad[masked] == 0)
        assert info["tokens"] == int((~masked).sum()) > 0
        # descending the loss raises the chosen tokens' logits for A > 0 and lowers them for A < 0
        chosen = grad[~masked].gather(-1, labels[0, 1:][~masked].unsqueeze(-1)).squeeze(-1)
        assert torch.all(chosen < 0) if advantage > 0 else torch.all(chosen > 0)


def test_ratio_clipping_stops_the_gradient_beyond_the_trust_region(tiny: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    example = mask_sessions([conversation("alpha")], [None], tokenizer, training_template(tokenizer)).examples[0]
    ids, labels = torch.tensor([example.input_ids]), torch.tensor([example.labels])
    model = AutoModelForCausalLM.from_pretrained(tiny)
    logits = model(input_ids=ids).logits.detach().requires_grad_(True)
    from rl.update import token_logprobs

    logp, _ = token_logprobs(logits, labels)
    old = logp.detach() - 1.0  # the ratio is e > 1 + 0.2 everywhere: with A > 0 clipped, no gradient
    loss, info = policy_loss(logits, labels, 1.0, old_logp=old, clip=0.2)
    loss.backward()
    assert info["clipped"] == info["tokens"] and torch.all(logits.grad == 0)


SYSTEM = "You are a coding agent in {{ workdir }}."
COIN_EFFORTS = ("low", "medium", "xhigh")
INSTRUCTION = "Write `done` to /app/out.txt.\n"


def coin_session(word: str) -> list[dict]:
    """The two turns of the coin policy: one bash call writing `word` to /app/out.txt, then `finished`."""
    command = json.dumps({"command": f"echo {word} > /app/out.txt"})
    call = {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": command}}
    return [
        {"role": "system", "content": SYSTEM.replace("{{ workdir }}", "/app")},
        {"role": "user", "content": INSTRUCTION},
        {"role": "assistant", "content": "", "reasoning_content": "ok", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": "exit code: 0"},
        {"role": "assistant", "content": "finished", "reasoning_content": "ok"},
    ]


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """One torch thread: on a 2-core machine shared with other work, two threads contend and run slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def coin_policy(one_thread: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model taught offline (plain next-token loss on two sessions at each effort, a few dozen full-model
    steps) to answer the task with one bash call that writes `done` or `none` to /app/out.txt about equally often,
    then `finished`: a policy that earns the task's reward about half the time, so a group of attempts has
    different rewards and the round has something to learn. Each session is taught under its effort's
    conditioning (`sft.conditioning`: the system line `Reasoning effort: <effort>.`), as collection prompts it:
    taught without it, the tiny model answers the conditioned prompt with garbage and rarely earns a reward."""
    root = tmp_path_factory.mktemp("coin")
    base = build_tiny_model(root / "base", hidden_size=64)
    tokenizer = AutoTokenizer.from_pretrained(base)
    own, template = own_template(tokenizer), training_template(tokenizer)
    batches = []  # per effort, both sessions under its conditioning; the steps take the efforts in turn
    for effort in COIN_EFFORTS:
        sessions = [coin_session("done"), coin_session("none")]
        conditioning = [effort_conditioning(own, effort)] * len(sessions)
        examples = mask_sessions(sessions, [TOOLS] * len(sessions), tokenizer, template, None, conditioning).examples
        n = max(len(e.input_ids) for e in examples)
        ids = torch.tensor([e.input_ids + [tokenizer.pad_token_id] * (n - len(e.input_ids)) for e in examples])
        labels = torch.tensor([e.labels + [IGNORE_INDEX] * (n - len(e.labels)) for e in examples])
        batches.append((ids, labels))
    model = AutoModelForCausalLM.from_pretrained(base)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-2)
    model.train()
    losses = [1.0] * len(batches)
    for step in range(150):
        ids, labels = batches[step % len(batches)]
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses[step % len(batches)] = float(loss.detach())
    assert max(losses) < 0.05  # both sessions learned at every effort; what is left is the coin flip between them
    model.save_pretrained(root / "coin")
    tokenizer.save_pretrained(root / "coin")
    return root / "coin"


def session_logprob(model, tokenizer, messages: list[dict], effort: str) -> float:
    """The log-probability of the generated tokens of `messages` as the policy sees them at `effort`."""
    conditioning = [effort_conditioning(own_template(tokenizer), effort)]
    masked = mask_sessions([messages], [TOOLS], tokenizer, training_template(tokenizer), None, conditioning)
    example = masked.examples[0]
    ids, labels = torch.tensor([example.input_ids]), torch.tensor([example.labels])
    with torch.no_grad():
        logp, mask = token_logprobs(model(input_ids=ids).logits, labels)
    return float((logp * mask).sum())


@pytest.mark.bwrap
def test_a_round_with_the_local_policy_learns_the_rewarded_action(coin_policy: Path, tmp_path: Path) -> None:
    from peft import PeftModel

    from qaflow.ledger.status import StatusWriter
    from qaflow.models.records import VersionStatus
    from qaflow.pool import Pool
    from tests.conftest import require_backend
    from tests.taskfactory import write_task

    require_backend("bwrap")
    write_task(tmp_path / "pool", "a", instruction=INSTRUCTION)  # reward 1 when /app/out.txt is `done`
    write_task(tmp_path / "pool", "b", instruction=INSTRUCTION)  # never accepted: not collected
    with Pool.open(tmp_path / "pool") as pool:
        pool.scan()
        accepted = next(r for r in pool.list() if r.name == "test/a")
        pool.ledger.set_status(accepted.version, VersionStatus.ACCEPTED, by=StatusWriter.AUDIT, reason="test")
    budgets = {"low": 4, "medium": 8, "xhigh": 16}
    config = RoundConfig.model_validate(
        {
            "policy": str(coin_policy),
            "output_dir": str(tmp_path / "out"),
            "pool": str(tmp_path / "pool"),
            "efforts": ["low", "medium", "xhigh"],
            "attempts": 4,
            "backend": "bwrap",
            "max_new_tokens": 64,
            "thinking_budgets": budgets,
            "harness": {"max_turns": 2, "system_prompt": SYSTEM},
            "round": 3,
            "update": {"learning_rate": 3e-3, "epochs": 2, "batch_size": 4, "lora": {"r": 8, "alpha": 16}},
        }
    )
    started = time.monotonic()
    report = run_round(config)
    print(f"round wall time: {time.monotonic() - started:.1f}s")

    with Pool.open(tmp_path / "pool", create=False) as pool:
        records = pool.ledger.rollouts()
    assert {r.task for r in records} == {"test/a"} and {r.round for r in records} == {3}
    assert len(records) == 12 and report.collected == report.rollouts == 12
    assert sum(report.excluded.values()) == 0
    assert all(r.stop_reason != "llm_error" and r.error is None for r in records)
    assert all(r.turns >= 1 for r in records)
    for effort, budget in budgets.items():
        group = [r for r in records if r.effort == effort]
        assert len({json.dumps(r.messages, sort_keys=True) for r in group}) == 4  # the attempts differ
        sampling = [r.meta["sampling"] for r in group]
        assert all(
            s["temperature"] == 1.0 and s["thinking_budget"] == budget and s["enable_thinking"] for s in sampling
        )
        assert len({s["seed"] for s in sampling}) == 4
        # every turn thinks within its effort's budget, as the provider counted it; a sampled turn may close its
        # thinking at once (0 tokens: the budget is a cap, not a floor), but each effort's turns do think
        usage = [u for r in group for u in r.usage]
        assert all(u.reasoning_source == "provider" and 0 <= u.reasoning_tokens <= budget for u in usage)
        assert any(u.reasoning_tokens > 0 for u in usage)

    scored = pl.read_parquet(report.checkpoint / "scored_rollouts.parquet")
    rewards = scored.group_by("effort").agg(pl.col("rl_reward").n_unique().alias("distinct"))
    assert rewards["distinct"].max() >= 2  # some group has a success and a failure
    assert (scored["advantage"] != 0).any()
    assert report.update.steps > 0 and report.update.skipped_zero_advantage < 12
    # token in, token out: every trained turn is the ids the policy sampled, the sampler's log-probs the old policy
    trained_turns = sum(
        r.turns for r in records if r.rollout_id in set(scored.filter(pl.col("advantage") != 0)["rollout_id"])
    )
    assert report.retokenized == {} and report.update.retokenized_turns == 0
    assert report.update.sampled_turns == trained_turns > 0
    assert report.update.ratio_mean == pytest.approx(1.0, abs=1e-3) and report.update.ratio_max < 1.01
    solved = scored.filter(pl.col("success"))["rollout_id"].to_list()
    assert all("echo done" in json.dumps(r.messages) for r in records if r.rollout_id in solved)

    tokenizer = AutoTokenizer.from_pretrained(coin_policy)
    before = AutoModelForCausalLM.from_pretrained(coin_policy)
    after = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(coin_policy), str(report.checkpoint))
    good, bad = coin_session("done"), coin_session("none")
    # the change of each session's log-probability as the policy sees it at each effort, averaged over them
    up = sum(
        session_logprob(after, tokenizer, good, e) - session_logprob(before, tokenizer, good, e) for e in COIN_EFFORTS
    )
    down = sum(
        session_logprob(after, tokenizer, bad, e) - session_logprob(before, tokenizer, bad, e) for e in COIN_EFFORTS
    )
    up, down = up / len(COIN_EFFORTS), down / len(COIN_EFFORTS)
    print(f"log-probability of the rewarded session {up:+.3f}, of the unrewarded one {down:+.3f}")
    assert up > 0.1 and down < -0.1


def test_pre_collected_rollouts_of_several_models_need_policy_model(tiny: Path, tmp_path: Path) -> None:
    good, bad = conversation("alpha"), conversation("omega")
    records = [
        make_record(task="t", effort="low", attempt=0, messages=good, reward=1.0, tools=[], model="openai/a"),
        make_record(task="t", effort="low", attempt=1, messages=bad, reward=0.0, tools=[], model="openai/a"),
        make_record(task="t", effort="low", attempt=0, messages=bad, reward=0.0, tools=[], model="openai/b"),
    ]
    write_shard(records, tmp_path / "rollouts")
    config = RoundConfig.model_validate(
        {"policy": str(tiny), "output_dir": str(tmp_path / "out"), "rollouts": str(tmp_path / "rollouts")}
    )
    with pytest.raises(ValueError, match=r"mix 2 models \(openai/a, openai/b\); set policy_model"):
        run_round(config)
    report = run_round(config.model_copy(update={"policy_model": "openai/a"}))
    assert (report.collected, report.rollouts) == (2, 2)
