"""Single-turn GRPO: the reward function on hand-computed completions, and one GRPOTrainer step on CPU."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer

from rl.grpo import answer_matches, effort_reward_function, grpo_config, grpo_trainer, split_thinking
from rl.reward import RewardConfig
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


def test_reward_reproduces_hand_computed_values():
    reward = effort_reward_function(WordTokenizer())
    completions = [
        "<think>a b c d</think>42",  # 4 thinking = reference: 1
        "<think>a b c d e f g h</think>42",  # 8 = 2x reference: 0.5 + 0.5 e^-1
        "<think>a b</think>41",  # wrong: 0
        "<think>a b c d e f g h</think>\nSo the answer is:\n42",  # no reference: 1
        "a b c</think> 42",  # thinking opened by the prompt, 3 vs 2: 0.5 + 0.5 e^-0.5
        "<think>a b c d e f",  # never closed: no reply, failure
        [{"role": "assistant", "content": "42", "reasoning_content": "a b c d e f"}],  # 6 vs 3: 0.5 + 0.5 e^-1
        "<think>a b c d e f g h i j</think>42",  # NaN reference = none: 1
    ]
    references = [4.0, 4.0, 4.0, None, 2.0, 2.0, 3.0, float("nan")]
    efforts = ["low", "low", "low", "xhigh", "medium", "medium", "low", "xhigh"]
    metrics: dict[str, float] = {}
    extra: dict[str, list] = {}
    values = reward(
        prompts=["q"] * 8,
        completions=completions,
        effort=efforts,
        reference_thinking_tokens=references,
        answer=["42"] * 8,
        trainer_state=None,
        log_metric=metrics.__setitem__,
        log_extra=extra.__setitem__,
    )
    expected = [1.0, 0.5 + 0.5 * math.exp(-1), 0.0, 1.0, 0.5 + 0.5 * math.exp(-0.5), 0.0, 0.5 + 0.5 * math.exp(-1), 1.0]
    assert values == pytest.approx(expected)
    assert extra["thinking_tokens"] == [4, 8, 2, 8, 3, 6, 6, 10]
    assert metrics == pytest.approx(
        {
            "effort_reward/low": (1.0 + 0.5 + 0.5 * math.exp(-1) + 0.0 + 0.5 + 0.5 * math.exp(-1)) / 4,
            "effort_reward/medium": (0.5 + 0.5 * math.exp(-0.5)) / 2,
            "effort_reward/xhigh": 1.0,
        }
    )


def test_reward_config_and_correctness_callable():
    linear = effort_reward_function(WordTokenizer(), config=RewardConfig(phi="linear", k=0.5))
    assert linear(
        completions=["<think>a b c d e f g h</think>42", "<think>a b c d e f g h i j k l</think>42"],
        reference_thinking_tokens=[4.0, 4.0],
        answer=["42", "42"],
    ) == pytest.approx([0.75, 0.5])  # over 1: 1 - 0.5; over 2: 1 - 1

    seen = []

    def correct(reply, row):
        seen.append((reply, row["effort"]))
        return reply.strip() == "yes"

    custom = effort_reward_function(WordTokenizer(), correct=correct)
    assert custom(completions=["<think>a</think>yes", "<think>a</think>no"], effort=["low", "low"]) == [1.0, 0.0]
    assert seen == [("yes", "low"), ("no", "low")]


def test_reward_errors():
    reward = effort_reward_function(WordTokenizer())
    with pytest.raises(ValueError, match="answer"):
        reward(completions=["42"], effort=["low"])
    with pytest.raises(ValueError, match="2 values for 1 completions"):
        reward(completions=["42"], answer=["42", "43"])


def test_thinking_counted_on_generated_ids(tiny: Path):
    tok = AutoTokenizer.from_pretrained(tiny)
    open_id, close_id = tok.convert_tokens_to_ids(["<think>", "</think>"])
    thought = tok("run the tests and check the output", add_special_tokens=False)["input_ids"]
    answer = tok("42", add_special_tokens=False)["input_ids"]
    ids = [open_id, *thought, close_id, *answer, tok.eos_token_id]
    # the tiny tokenizer's markers are special tokens: decoding drops them, the ids keep them
    text = tok.decode(ids, skip_special_tokens=True)
    assert "</think>" not in text
    reward = effort_reward_function(tok)
    n = len(thought)
    assert reward.thinking_and_reply(text, ids) == (n, "42")
    values = reward(
        completions=[[{"role": "assistant", "content": text}]] * 3,
        completion_ids=[ids, ids, ids[: n // 2 + 1]],
        reference_thinking_tokens=[float(n), n / 2, float(n)],
        answer=["42"] * 3,
    )
    assert values == pytest.approx([1.0, 0.5 + 0.5 * math.exp(-1), 0.0])


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
    rows = [("low", 8.0, "1"), ("medium", None, "2"), ("low", 4.0, "3"), ("xhigh", None, "4")]
    dataset = Dataset.from_list(
        [
            {
                "prompt": [{"role": "user", "content": f"What is {int(a) - 1} + 1?"}],
                "effort": effort,
                "reference_thinking_tokens": ref,
                "answer": a,
            }
            for effort, ref, a in rows
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
