"""A policy-gradient round on the tiny model with scripted rollouts."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from qaflow.models.frame import write_shard
from rl.round import RoundConfig, run_round
from rl.update import IGNORE_INDEX, policy_loss
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


@pytest.mark.bwrap
def test_round_collects_with_the_local_policy_through_the_harness(tiny: Path, tmp_path: Path) -> None:
    from tests.conftest import require_backend
    from tests.taskfactory import write_task

    require_backend("bwrap")
    write_task(tmp_path / "pool", "a")
    config = RoundConfig.model_validate(
        {
            "policy": str(tiny),
            "output_dir": str(tmp_path / "out"),
            "pool": str(tmp_path / "pool"),
            "efforts": ["low", "xhigh"],
            "attempts": 1,
            "backend": "bwrap",
            "max_new_tokens": 16,
            "harness": {"max_turns": 2},
            "round": 3,
        }
    )
    report = run_round(config)
    assert report.rollouts == 2 and {r["effort"] for r in report.by_effort} == {"low", "xhigh"}
    # a random tiny policy solves nothing: equal rewards, zero advantages, no update step
    assert report.update.skipped_zero_advantage == 2 and report.update.steps == 0
    from qaflow.ledger import Ledger

    with Ledger(tmp_path / "pool" / ".qaflow" / "ledger.sqlite") as ledger:
        records = ledger.rollouts()
    assert {r.round for r in records} == {3} and all(r.model.startswith("qaflow-local/") for r in records)
    assert (report.checkpoint / "adapter_config.json").is_file()
