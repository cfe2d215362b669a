"""Single-turn GRPO: the reward function on hand-computed completions, and one GRPOTrainer step on CPU."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer

from qaflow.models.rollout import Effort
from rl.grpo import (
    answer_matches,
    condition_prompts,
    effort_reward_function,
    grpo_config,
    grpo_trainer,
    split_thinking,
)
from rl.reward import RewardConfig
from sft.local_llm import LocalSampling, local_efforts, prompt_text
from sft.tiny_model import build_tiny_model


class WordTokenizer:
    """One token per whitespace-separated word, so counts can be done by hand."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": list(range(len(text.split())))}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_split_thinking():
    assert split_thinking("<think>a b</think>42") == ("a b", "42")
    assert split_thinking("a b</think>42") == ("a b", "42")
    assert split_thinking("<think>a b") == ("a b", "")
    assert split_thinking("42") == ("", "42")


def test_answer_matches():
    assert answer_matches("  42 ", "42")
    assert answer_matches("so the answer is:\n42\n", 42)
    assert not answer_matches("421", "42")
    assert not answer_matches("42", "")


def _think(n: int, answer: str = "42") -> str:
    return "<think>" + " ".join(["w"] * n) + "</think>" + answer


def test_reward_reproduces_hand_computed_values():
    """References come from this batch's higher-effort successes of the same task and round (floor 2, at least
    two successes): task t1 round 0 has xhigh successes 6, 10 (reference 8), medium 3, 5, 12 (5), low 5, 10 (7.5)."""
    reward = effort_reward_function(WordTokenizer(), config=RewardConfig(min_successes=2, floor=2.0))
    e = math.exp
    cases = [  # (task, round, effort, completion, expected)
        ("t1", 0, "xhigh", _think(6), 1.0),  # xhigh: no reference, correctness only
        ("t1", 0, "xhigh", _think(10), 1.0),
        ("t1", 0, "xhigh", _think(1, "41"), 0.0),  # wrong: never a success, never in a reference
        ("t1", 0, "medium", _think(3), 1.0),  # reference xhigh's 8
        ("t1", 0, "medium", _think(5), 1.0),
        ("t1", 0, "medium", _think(12), 0.5 + 0.5 * e(-0.5)),  # 12 / 8 - 1
        ("t1", 0, "low", _think(5), 1.0),  # reference min(medium 5, xhigh 8) = 5
        ("t1", 0, "low", _think(10), 0.5 + 0.5 * e(-1.0)),  # 10 / 5 - 1
        ("t1", 0, "low", _think(2, "7"), 0.0),
        ("t1", 0, "off", _think(10), 0.5 + 0.5 * e(-1.0)),  # min(low 7.5, medium 5, xhigh 8) = 5
        ("t1", 1, "low", _think(40), 1.0),  # round 1 has no higher effort in this batch: no reference
        ("t2", 0, "medium", _think(1), 1.0),  # t2: one medium success < min_successes: no reference for low
        ("t2", 0, "low", _think(40), 1.0),
        ("t3", 0, "xhigh", _think(1), 1.0),  # median 1 raised to the floor 2
        ("t3", 0, "xhigh", "<think>a</think>\nSo the answer is:\n42", 1.0),
        ("t3", 0, "low", _think(4), 0.5 + 0.5 * e(-1.0)),  # 4 / 2 - 1
        ("t3", 0, "low", "<think>a b c d e f", 0.0),  # never closed: no reply, failure
    ]
    metrics: dict[str, float] = {}
    extra: dict[str, list] = {}
    values = reward(
        prompts=["q"] * len(cases),
        completions=[c[3] for c in cases],
        task=[c[0] for c in cases],
        round=[c[1] for c in cases],
        effort=[c[2] for c in cases],
        answer=["42"] * len(cases),
        trainer_state=None,
        log_metric=metrics.__setitem__,
        log_extra=extra.__setitem__,
    )
    assert values == pytest.approx([c[4] for c in cases])
    assert extra["thinking_tokens"] == [6, 10, 1, 3, 5, 12, 5, 10, 2, 10, 40, 1, 40, 1, 1, 4, 6]
    refs = [None if math.isnan(r) else r for r in extra["reference_thinking_tokens"]]
    n = None
    assert refs == [n, n, n, 8.0, 8.0, 8.0, 5.0, 5.0, 5.0, 5.0, n, n, n, n, n, 2.0, 2.0]
    by_effort: dict[str, list[float]] = {}
    for case in cases:
        by_effort.setdefault(case[2], []).append(case[4])
    assert metrics == pytest.approx({f"effort_reward/{k}": sum(v) / len(v) for k, v in by_effort.items()})
    # the same completions split across two calls: t1's low no longer sees its higher efforts
    alone = reward(completions=[_think(10)], task=["t1"], effort=["low"], answer=["42"])
    assert alone == [1.0]


def test_reward_config_and_correctness_callable():
    linear = effort_reward_function(WordTokenizer(), config=RewardConfig(phi="linear", k=0.5, floor=0.0))
    assert linear(
        completions=[_think(8), _think(12), _think(4), _think(4)],
        task=["t"] * 4,
        effort=["low", "low", "medium", "medium"],
        answer=["42"] * 4,
    ) == pytest.approx([0.75, 0.5, 1.0, 1.0])  # reference medium's 4: over 1 -> 1 - 0.5, over 2 -> 0

    seen = []

    def correct(reply, row):
        seen.append((reply, row["effort"]))
        return reply.strip() == "yes"

    custom = effort_reward_function(WordTokenizer(), correct=correct)
    assert custom(
        completions=["<think>a</think>yes", "<think>a</think>no"], task=["t", "t"], effort=["low", "low"]
    ) == [
        1.0,
        0.0,
    ]
    assert seen == [("yes", "low"), ("no", "low")]


def test_reward_errors():
    reward = effort_reward_function(WordTokenizer())
    with pytest.raises(ValueError, match="answer"):
        reward(completions=["42"], task=["t"], effort=["low"])
    with pytest.raises(ValueError, match="2 values for 1 completions"):
        reward(completions=["42"], task=["t"], effort=["low"], answer=["42", "43"])
    with pytest.raises(ValueError, match="drop the fixed `reference_thinking_tokens`"):
        reward(completions=["42"], task=["t"], effort=["low"], answer=["42"], reference_thinking_tokens=[4.0])
    with pytest.raises(ValueError, match="`task`"):
        reward(completions=["42"], effort=["low"], answer=["42"])
    with pytest.raises(ValueError, match="unknown effort"):
        reward(completions=["42"], task=["t"], effort=["high"], answer=["42"])


def test_thinking_counted_on_generated_ids(tiny: Path):
    tok = AutoTokenizer.from_pretrained(tiny)
    open_id, close_id = tok.convert_tokens_to_ids(["<think>", "</think>"])
    thought = tok("run the tests and check the output", add_special_tokens=False)["input_ids"]
    answer = tok("42", add_special_tokens=False)["input_ids"]
    ids = [open_id, *thought, close_id, *answer, tok.eos_token_id]
    # the tiny tokenizer's markers are special tokens: decoding drops them, the ids keep them
    text = tok.decode(ids, skip_special_tokens=True)
    assert "</think>" not in text
    reward = effort_reward_function(tok, config=RewardConfig(floor=0.0))
    n = len(thought)
    assert reward.thinking_and_reply(text, ids) == (n, "42")
    k = n // 2
    short = [open_id, *thought[:k], close_id, *answer, tok.eos_token_id]
    message = [{"role": "assistant", "content": text}]
    # medium's two successes think k tokens (reference k); low thinks n; a low cut off inside thinking fails
    values = reward(
        completions=[message, message, message, message],
        completion_ids=[short, short, ids, ids[: k + 1]],
        task=["t"] * 4,
        effort=["medium", "medium", "low", "low"],
        answer=["42"] * 4,
    )
    assert values == pytest.approx([1.0, 1.0, 0.5 + 0.5 * math.exp(-(n / k - 1)), 0.0])


def test_grpo_config_defaults():
    args = grpo_config(output_dir="unused", use_cpu=True)
    assert (args.scale_rewards, args.loss_type, args.beta, args.mask_truncated_completions) == (
        "none",
        "dapo",
        0.0,
        False,
    )
    assert grpo_config(output_dir="unused", use_cpu=True, loss_type="dr_grpo").loss_type == "dr_grpo"


def test_one_grpo_step_on_cpu(tiny: Path, tmp_path: Path):
    tok = AutoTokenizer.from_pretrained(tiny)
    model = AutoModelForCausalLM.from_pretrained(tiny)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    rows = [("t1", "low", "1"), ("t1", "medium", "2"), ("t2", "low", "3"), ("t1", "xhigh", "4")]
    dataset = Dataset.from_list(
        [
            {
                "prompt": [{"role": "user", "content": f"What is {int(a) - 1} + 1?"}],
                "task": task,
                "effort": effort,
                "answer": a,
            }
            for task, effort, a in rows
        ]
    )
    # Random weights never answer: alternate success so each group of 2 has one of each and a gradient.
    flips = itertools.cycle([True, False])
    args = grpo_config(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=16,
        max_steps=1,
        learning_rate=1e-2,
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
        seed=0,
    )
    trainer = grpo_trainer(model, dataset, tokenizer=tok, args=args, correct=lambda reply, row: next(flips))
    result = trainer.train()
    assert result.global_step == 1
    log = trainer.state.log_history[0]
    # no thinking markers in random text: success 1 (thinking 0 <= any reference), failure 0
    assert log["rewards/effort_reward/mean"] == pytest.approx(0.5)
    assert log["reward_std"] > 0
    assert log["grad_norm"] > 0
    assert any(k.startswith("effort_reward/") for k in log)
    changed = max(float((p.detach() - before[n]).abs().max()) for n, p in model.named_parameters())
    assert changed > 0
    assert torch.isfinite(torch.tensor(log["loss"]))


def test_prompts_are_conditioned_on_their_effort(tiny: Path):
    tok = AutoTokenizer.from_pretrained(tiny)
    messages = [{"role": "system", "content": "Answer."}, {"role": "user", "content": "What is 1 + 1?"}]
    rows = Dataset.from_list([{"prompt": messages, "task": "t", "effort": e, "answer": "2"} for e in ("low", "xhigh")])
    low, xhigh = condition_prompts(rows, tok)["prompt"]
    ids = [tok(p, add_special_tokens=False)["input_ids"] for p in (low, xhigh)]
    assert ids[0] != ids[1]  # two rows that differ only in effort are different prompt tokens
    assert low.startswith("<|im_start|>system\nReasoning effort: low.\n\nAnswer.<|im_end|>")
    assert "Reasoning effort: xhigh." in xhigh
    # the prompt the local policy is collected with at that effort, token for token
    sampling = LocalSampling.from_params(local_efforts()[Effort.LOW])
    assert low == prompt_text(tok, messages, None, sampling)
    with pytest.raises(ValueError, match="text `prompt` cannot be conditioned"):
        condition_prompts(Dataset.from_list([{"prompt": "What is 1 + 1?", "effort": "low"}]), tok)
