"""The learning test of the effort-ordered stage: after a few rounds on a task designed for it, the same weights
think shorter when prompted at low than at xhigh, because they were told which effort they run at.

The task: a short check (5 tokens of thought) finds the answer three times in four, a long check (12 tokens)
always. The policy is the tiny model warm-started offline to think either check about equally often at every
effort (and, asked which effort it runs at, to say so: it reads its system line, as an instruction-tuned model
does). Each round is `rl.round.run_round` on pre-collected rollouts of that policy (graded attempts, references
from the round's xhigh successes, `0.5 + 0.5 * phi`, group-mean advantages, the clipped update of every session
under its effort's conditioning with a small KL penalty to the warm start, the adapter carried to the next round).
Per effort a group of six attempts:
four short checks (one wrong), two long ones. At xhigh the reward is correctness only, so the long check wins;
at low the reference is xhigh's median success (the short check's 5 tokens; no floor here) and the
long check, over twice as long, is paid about 0.5 (k = 4), so the short check wins. The reward differs by effort
only, so the policy can follow it only by reading its effort from the prompt (`sft.conditioning`; Qwen3's
template: the system line `Reasoning effort: <effort>.`).

Measured on the same weights: the probability of each check after the prompt of collection at each effort (exact,
one forward pass each) and the thinking tokens of turns sampled at the same budget. The control trains the same
rounds without the conditioning (every session rendered bare, as when the effort is not input): low and xhigh are
then the same tokens, get opposite pushes, and the weights cannot tell them apart.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from qaflow.models.frame import records_to_frame, write_shard
from qaflow.models.rollout import Effort, RolloutRecord
from rl.advantage import advantages, score
from rl.reward import RewardConfig
from rl.round import RoundConfig, run_round
from rl.update import Trajectory, UpdateConfig, load_policy, policy_update
from sft.conditioning import effort_conditioning, own_template
from sft.config import LoraSettings
from sft.local_llm import THINK_CLOSE, THINK_OPEN, LocalSampling, prompt_text
from sft.masking import IGNORE_INDEX, mask_sessions
from sft.templates import training_template
from sft.tiny_model import build_tiny_model
from tests.trajectories import make_record

SESSION = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Is the task done?"}]
SHORT, LONG = "run the tests", "read the file, run the tests, check the output"
THOUGHTS = (SHORT, LONG)
EFFORTS = (Effort.LOW, Effort.XHIGH)
GROUP = ((SHORT, 1.0), (SHORT, 1.0), (SHORT, 1.0), (SHORT, 0.0), (LONG, 1.0), (LONG, 1.0))
"""One group of attempts (thought, verifier reward), the same at each effort and in each round."""
ROUNDS = 8
REWARD = {"floor": 0, "k": 4.0}
LORA = {"r": 8, "alpha": 16, "dropout": 0.0}
UPDATE = {"learning_rate": 1e-3, "epochs": 4, "batch_size": 6, "kl_coef": 0.02, "lora": LORA}
"""Small steps and a KL anchor, so that every seed of the fresh LoRA learns the same thing (seeds 0-15 pass). The
long check's tokens after its first are pushed down at low and up at xhigh; where the tiny model predicts one from
the words before it rather than from the effort line (" file" after "read the", whose rival is " tests" of the
short check), the push down wins (near p = 1 the push up has almost no gradient) and it sinks at both efforts: the
mass goes to neither check, and the fixed rollouts never show the policy that drift. Each round's AdamW is new, so
its first steps move every LoRA weight by about the learning rate whatever the gradient: at 3e-3 one step took that
token at xhigh from 0.96 to 0.20, far past the clip's 0.2 (the clip only stops the gradient of a token already out
of range). At 3e-3 and 4 rounds, without the KL, 7 seeds of 16 lost the long check at xhigh; at 1e-3 without the
KL the long check's tokens still sank to 1e-5..1e-7 at low on some seeds. The KL to the warm start (the adapter
disabled) holds the tokens no effort consistently pays to move; 8 rounds at 1e-3 leave room to learn under it."""


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def turn(thought: str, user: str = "Is the task done?", answer: str = "done") -> list[dict]:
    return [
        SESSION[0],
        {"role": "user", "content": user},
        {"role": "assistant", "content": answer, "reasoning_content": thought},
    ]


@pytest.fixture(scope="module")
def warm(one_thread: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model taught offline (plain next-token loss, each session under its effort's conditioning): on
    the task, either check about equally often at both efforts; asked "Which effort?", its effort."""
    started = time.monotonic()
    root = tmp_path_factory.mktemp("warm")
    base = build_tiny_model(root / "base")
    tokenizer = AutoTokenizer.from_pretrained(base)
    own = own_template(tokenizer)
    sessions = [turn(t) for _ in EFFORTS for t in THOUGHTS]
    sessions += [turn(e.value, "Which effort?", e.value) for e in EFFORTS] * 2
    efforts = [e for e in EFFORTS for _ in THOUGHTS] + list(EFFORTS) * 2
    conditioning = [effort_conditioning(own, e) for e in efforts]
    examples = mask_sessions(
        sessions, [None] * len(sessions), tokenizer, training_template(tokenizer), None, conditioning
    ).examples
    n = max(len(e.input_ids) for e in examples)
    ids = torch.tensor([e.input_ids + [tokenizer.pad_token_id] * (n - len(e.input_ids)) for e in examples])
    labels = torch.tensor([e.labels + [IGNORE_INDEX] * (n - len(e.labels)) for e in examples])
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(base)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-2)
    model.train()
    for _ in range(150):
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.save_pretrained(root / "warm")
    tokenizer.save_pretrained(root / "warm")
    print(f"\nwarm start wall time: {time.monotonic() - started:.1f}s")
    return root / "warm"


def prompt(tokenizer, effort: Effort | None) -> str:
    """The prompt of collection at `effort` (None: without its conditioning), thinking opened."""
    sampling = LocalSampling(enable_thinking=True, thinking_budget=32, effort=effort)
    return prompt_text(tokenizer, SESSION, None, sampling) + THINK_OPEN + "\n"


def thought_probs(model, tokenizer, effort: Effort | None) -> list[float]:
    """P(the thought, then the end of thinking) for each of THOUGHTS after the prompt at `effort`."""
    head = prompt(tokenizer, effort)
    start = len(tokenizer(head, add_special_tokens=False)["input_ids"])
    probs = []
    with torch.no_grad():
        for thought in THOUGHTS:
            ids = tokenizer(head + thought + "\n" + THINK_CLOSE, add_special_tokens=False)["input_ids"]
            logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), -1)
            probs.append(float(sum(logp[t - 1, ids[t]] for t in range(start, len(ids))).exp()))
    return probs


def thinking_tokens(tokenizer, thought: str) -> int:
    return len(tokenizer(thought + "\n", add_special_tokens=False)["input_ids"])


def expected_thinking(probs: list[float], lengths: list[int]) -> float:
    """Mean thinking tokens of the policy over the checks (their probabilities renormalised)."""
    return sum(p * n for p, n in zip(probs, lengths, strict=True)) / sum(probs)


def sampled_thinking(model, tokenizer, effort: Effort, k: int = 32, budget: int = 32) -> float:
    """Mean thinking tokens of `k` turns sampled (temperature 1, seed 0) at `effort`, at the same budget."""
    close = tokenizer.convert_tokens_to_ids(THINK_CLOSE)
    inputs = tokenizer(prompt(tokenizer, effort), add_special_tokens=False, return_tensors="pt")
    torch.manual_seed(0)
    with torch.no_grad():
        out = model.generate(
            **inputs,
            do_sample=True,
            temperature=1.0,
            top_k=0,
            max_new_tokens=budget,
            num_return_sequences=k,
            pad_token_id=tokenizer.pad_token_id,
        )
    rows = out[:, inputs["input_ids"].shape[1] :].tolist()
    return sum(row.index(close) if close in row else budget for row in rows) / k


def round_records(tokenizer, round_: int) -> list[RolloutRecord]:
    return [
        make_record(
            task="t",
            effort=e.value,
            attempt=i,
            round=round_,
            messages=turn(thought),
            tools=[],
            reward=reward,
            thinking_tokens=thinking_tokens(tokenizer, thought),
        )
        for e in EFFORTS
        for i, (thought, reward) in enumerate(GROUP)
    ]


def test_low_learns_to_think_shorter_than_xhigh_because_it_is_told_its_effort(warm: Path, tmp_path: Path) -> None:
    from peft import PeftModel

    started = time.monotonic()
    torch.manual_seed(0)  # the fresh LoRA's initialisation, whatever ran before (seeds 0-15 pass)
    tokenizer = AutoTokenizer.from_pretrained(warm)
    lengths = [thinking_tokens(tokenizer, t) for t in THOUGHTS]
    assert lengths == [5, 12]
    base = AutoModelForCausalLM.from_pretrained(warm).eval()
    before = {e: thought_probs(base, tokenizer, e) for e in EFFORTS}
    # the warm policy thinks alike at both efforts: either check about half the time
    assert all(abs(p - 0.5) < 0.1 for probs in before.values() for p in probs)
    gap_before = expected_thinking(before[Effort.XHIGH], lengths) - expected_thinking(before[Effort.LOW], lengths)
    assert abs(gap_before) < 0.5

    adapter = None
    reports = []
    for round_ in range(ROUNDS):
        write_shard(round_records(tokenizer, round_), tmp_path / f"rollouts-{round_}")
        config = RoundConfig.model_validate(
            {
                "policy": str(warm),
                "adapter": adapter,
                "round": round_,
                "output_dir": str(tmp_path / "out"),
                "rollouts": str(tmp_path / f"rollouts-{round_}"),
                "efforts": [e.value for e in EFFORTS],
                "reward": REWARD,
                "update": UPDATE,
            }
        )
        report = run_round(config)
        assert report.updated, report.reason
        reports.append(report)
        adapter = str(report.checkpoint)
    rounds_s = time.monotonic() - started

    first = {row["effort"]: row for row in reports[0].by_effort}
    # rewards differ within each group: at xhigh 1 and 0; at low also ~0.5 for the long check over the reference
    assert first["xhigh"]["distinct_rewards"] == 2 and first["low"]["distinct_rewards"] == 3
    assert first["low"]["mean_reference"] == lengths[0]  # xhigh's median success: the short check
    paid = 0.5 + 0.5 * math.exp(-REWARD["k"] * (lengths[1] / lengths[0] - 1))  # the long check at low
    assert first["low"]["mean_reward"] == pytest.approx((3 + 2 * paid) / 6)
    assert first["low"]["conditioning"]["system_line"] == "Reasoning effort: low."

    policy = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(warm), adapter).eval()
    after = {e: thought_probs(policy, tokenizer, e) for e in EFFORTS}
    low, xhigh = (expected_thinking(after[e], lengths) for e in EFFORTS)
    sampled = {e.value: sampled_thinking(policy, tokenizer, e) for e in EFFORTS}
    print(f"\nP(short, long) before: low {before[Effort.LOW]}, xhigh {before[Effort.XHIGH]}")
    print(f"P(short, long) after {ROUNDS} rounds: low {after[Effort.LOW]}, xhigh {after[Effort.XHIGH]}")
    print(f"thinking tokens after: expected low {low:.2f}, xhigh {xhigh:.2f}; sampled {sampled}")
    # the move toward each effort's rewarded behaviour, on the same weights
    assert after[Effort.LOW][0] > after[Effort.LOW][1] * 2  # low: the short check
    assert after[Effort.XHIGH][1] > after[Effort.XHIGH][0] * 2  # xhigh: the long check
    assert xhigh - low > 3.0
    assert sampled["xhigh"] - sampled["low"] > 3.0

    # the control: the same rounds with every session rendered without its conditioning (the effort not input)
    control = load_policy(str(warm), None, LoraSettings(**LORA))
    for round_ in range(ROUNDS):
        scored = advantages(score(records_to_frame(round_records(tokenizer, round_)), RewardConfig(**REWARD)))
        trajectories = [
            Trajectory(messages=row["messages"], tools=None, advantage=row["advantage"], key=row["rollout_id"])
            for row in scored.iter_rows(named=True)
        ]
        stats = policy_update(control, tokenizer, training_template(tokenizer), trajectories, UpdateConfig(**UPDATE))
        assert stats.steps == reports[round_].update.steps  # the same steps, on bare sessions
    control.eval()
    blind = {e: thought_probs(control, tokenizer, e) for e in EFFORTS}
    gap = expected_thinking(blind[Effort.XHIGH], lengths) - expected_thinking(blind[Effort.LOW], lengths)
    print(f"control without conditioning: P(short, long) low {blind[Effort.LOW]}, xhigh {blind[Effort.XHIGH]}")
    assert abs(gap) < 0.5
    print(f"learning test wall time: {time.monotonic() - started:.1f}s (the {ROUNDS} rounds {rounds_s:.1f}s)")
