"""Effort as input (the same conditioning in collection, SFT rows and the RL update), nothing cut silently,
no adapter from a round that cannot learn, and old log-probabilities without dropout. Tiny model, CPU only."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
import torch
from transformers import AutoConfig, AutoTokenizer
from typer.testing import CliRunner

from qaflow.models.frame import write_shard
from qaflow.models.rollout import Effort
from rl.round import RoundConfig, run_round
from rl.update import TrainingItem, Trajectory, UpdateConfig, load_policy, old_logprobs, policy_update
from sft.conditioning import Conditioning, effort_conditioning, own_template, template_switch
from sft.config import LoraSettings
from sft.local_llm import LocalSampling, local_efforts, prompt_text
from sft.masking import MaskingConfig, mask_sessions, model_context_length
from sft.templates import training_template
from sft.tiny_model import build_tiny_model
from sft.train import tokenize_dataset
from tests.trajectories import make_record

PLAIN = (
    "{%- for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + (m.content or '') + '<|im_end|>\\n' }}{% endfor -%}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif -%}"
)
"""A chat template with no effort or thinking switch of its own."""

GPT_OSS_STYLE = (
    "{%- if reasoning_effort is not defined %}{%- set reasoning_effort = 'medium' %}{%- endif -%}"
    "{{ '<|im_start|>system\\nReasoning: ' + reasoning_effort + '<|im_end|>\\n' }}" + PLAIN
)
"""A template with GPT-OSS's `reasoning_effort` variable."""

SESSION = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix calc.py."}]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def tokenizer(tiny: Path):
    return AutoTokenizer.from_pretrained(tiny)


def test_the_rule_uses_the_templates_own_switch_and_else_a_system_line(tokenizer) -> None:
    qwen3 = own_template(tokenizer)
    assert template_switch(qwen3) == "enable_thinking"
    assert template_switch(GPT_OSS_STYLE) == "reasoning_effort" and template_switch(PLAIN) is None
    line = "Reasoning effort: {}."
    assert effort_conditioning(qwen3, Effort.OFF) == Conditioning(template_kwargs={"enable_thinking": False})
    for effort in (Effort.LOW, Effort.MEDIUM, Effort.XHIGH):
        assert effort_conditioning(qwen3, effort) == Conditioning(
            template_kwargs={"enable_thinking": True}, system_line=line.format(effort.value)
        )
        assert effort_conditioning(PLAIN, effort) == Conditioning(system_line=line.format(effort.value))
    assert effort_conditioning(PLAIN, Effort.OFF) == Conditioning(system_line="Reasoning effort: off.")
    assert [effort_conditioning(GPT_OSS_STYLE, e).template_kwargs["reasoning_effort"] for e in Effort] == [
        "low",
        "low",
        "medium",
        "high",
    ]
    assert effort_conditioning(GPT_OSS_STYLE, Effort.OFF).system_line == "Reasoning effort: off."
    assert effort_conditioning(GPT_OSS_STYLE, Effort.XHIGH).system_line is None
    assert effort_conditioning(qwen3, None) == Conditioning()


def prompt_ids(tokenizer, effort: Effort) -> list[int]:
    """The token ids the local policy is prompted with at `effort` (the collection path)."""
    sampling = LocalSampling.from_params(local_efforts()[effort])
    return tokenizer(prompt_text(tokenizer, SESSION, None, sampling), add_special_tokens=False)["input_ids"]


def test_the_same_session_prompted_at_low_and_xhigh_gives_different_tokens(tokenizer) -> None:
    # Qwen3's template (enable_thinking): the graded efforts differ by the system line, off by the switch
    low, xhigh, off = (prompt_ids(tokenizer, e) for e in (Effort.LOW, Effort.XHIGH, Effort.OFF))
    assert low != xhigh and off not in (low, xhigh)
    assert tokenizer.decode(low).startswith("<|im_start|>system\nReasoning effort: low.\n\nYou are a coding agent.")
    assert tokenizer.decode(off).endswith("<think>\n\n</think>\n\n") and "Reasoning effort" not in tokenizer.decode(off)
    # a template without a switch: the system line alone
    plain = tokenizer.__class__.from_pretrained(tokenizer.name_or_path)
    plain.chat_template = PLAIN
    plain_low, plain_xhigh = prompt_ids(plain, Effort.LOW), prompt_ids(plain, Effort.XHIGH)
    assert plain_low != plain_xhigh
    assert plain.decode(plain_xhigh).startswith("<|im_start|>system\nReasoning effort: xhigh.\n\n")


def test_collection_sft_rows_and_the_update_render_the_same_conditioned_prompt(tokenizer) -> None:
    template = training_template(tokenizer)
    reply = {"role": "assistant", "content": "Done.", "reasoning_content": "look"}
    rows = datasets.Dataset.from_dict(
        {
            "messages": [[*SESSION, reply]] * 3,
            "tools": [None] * 3,
            "effort": ["low", "xhigh", None],
        }
    )
    data, result = tokenize_dataset(rows, tokenizer, template, MaskingConfig())
    low, xhigh, plain = (tokenizer.decode(ids) for ids in data["input_ids"])
    # the SFT row carries what the policy saw when it generated: the prompt of collection, then its reply
    sampling = LocalSampling.from_params(local_efforts()[Effort.LOW])
    assert low.startswith(prompt_text(tokenizer, SESSION, None, sampling) + "<think>\n")
    assert "Reasoning effort: xhigh." in xhigh and "Reasoning effort" not in plain
    # the line is part of the prompt: no loss on it
    first = result.examples[0]
    line_ids = tokenizer("Reasoning effort: low.", add_special_tokens=False)["input_ids"]
    start = next(i for i in range(len(first.input_ids)) if first.input_ids[i : i + len(line_ids)] == line_ids)
    assert all(label == -100 for label in first.labels[start : start + len(line_ids)])
    # the update renders each trajectory under its conditioning: the conditioned session is longer
    lengths = [len(ids) for ids in data["input_ids"]]
    assert lengths[0] > lengths[2]


def test_the_update_takes_the_models_context_and_drops_or_cuts_only_when_told(tiny: Path, tokenizer) -> None:
    assert model_context_length(AutoConfig.from_pretrained(tiny), tokenizer) == 8192
    assert model_context_length(None, tokenizer) is None  # the tokenizer's 1e30 placeholder is no length
    template = training_template(tokenizer)
    long = make_record(task="t", tool_steps=6, effort="low")
    short = make_record(task="t", tool_steps=1, effort="low", attempt=1)
    full = mask_sessions([long.messages], [None], tokenizer, template).examples[0]
    limit = len(full.input_ids) - 5
    trajectories = [
        Trajectory(messages=long.messages, tools=None, advantage=0.5, key="long"),
        Trajectory(messages=short.messages, tools=None, advantage=-0.5, key="short"),
    ]
    model = load_policy(str(tiny), None, LoraSettings(r=4, alpha=8, dropout=0.0))
    default = policy_update(model, tokenizer, template, trajectories, UpdateConfig(batch_size=2))
    assert default.context_length == 8192 and default.dropped == [] and default.truncated == []

    fitted = policy_update(model, tokenizer, template, trajectories, UpdateConfig(context_length=limit))
    assert fitted.context_length == limit
    assert fitted.dropped == [("long", f"{len(full.input_ids)} tokens > max_length {limit}")]
    assert fitted.truncated == [] and fitted.steps == 1  # the short session alone is learned from

    cut = policy_update(
        model, tokenizer, template, trajectories, UpdateConfig(context_length=limit, allow_truncation=True)
    )
    assert (cut.dropped, cut.truncated, cut.steps) == ([], ["long"], 1)
    assert cut.generated_tokens < default.generated_tokens

    # the conditioning counts against the context: a session that fits bare does not fit with its line
    bare = len(mask_sessions([short.messages], [None], tokenizer, template).examples[0].input_ids)
    line = effort_conditioning(own_template(tokenizer), "low")
    conditioned = [Trajectory(messages=short.messages, tools=None, advantage=0.5, key="s", conditioning=line)]
    stats = policy_update(model, tokenizer, template, conditioned, UpdateConfig(context_length=bare))
    assert [key for key, _ in stats.dropped] == ["s"]


def test_old_logprobs_are_computed_without_dropout(tiny: Path, tokenizer) -> None:
    model = load_policy(str(tiny), None, LoraSettings(r=8, alpha=16, dropout=0.5))
    torch.manual_seed(0)
    for name, param in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(param, std=1.0)  # a fresh LoRA's B is 0: dropout would change nothing
    example = mask_sessions([make_record(tool_steps=1).messages], [None], tokenizer, training_template(tokenizer))
    e = example.examples[0]
    items = [TrainingItem("k", e.input_ids, e.labels, 1.0)]
    model.train()
    with torch.no_grad():
        noisy = [model(input_ids=torch.tensor([e.input_ids])).logits for _ in range(2)]
    assert not torch.equal(noisy[0], noisy[1])  # in train mode the dropout is live
    first, _ = old_logprobs(model, items, kl=False)
    second, _ = old_logprobs(model, items, kl=False)
    assert torch.equal(first[0], second[0])
    assert model.training  # back to train mode for the update


def round_config(tiny: Path, tmp_path: Path, round_: int, rewards: list[float], **extra) -> RoundConfig:
    records = [
        make_record(task="t", effort="low", attempt=i, tool_steps=1, reward=r, round=round_, tools=[])
        for i, r in enumerate(rewards)
    ]
    write_shard(records, tmp_path / f"rollouts-{round_}")
    return RoundConfig.model_validate(
        {
            "policy": str(tiny),
            "output_dir": str(tmp_path / "out"),
            "rollouts": str(tmp_path / f"rollouts-{round_}"),
            "round": round_,
            "efforts": ["low"],
            "update": {"lora": {"r": 4, "alpha": 8, "dropout": 0.0}, "learning_rate": 1e-3},
            **extra,
        }
    )


def test_a_round_without_reward_variance_writes_no_adapter_and_the_next_continues_from_the_last_real_one(
    tiny: Path, tmp_path: Path
) -> None:
    real = run_round(round_config(tiny, tmp_path, 0, [1.0, 0.0]))
    assert real.updated and (tmp_path / "out/round-0/adapter_model.safetensors").is_file()
    low = real.by_effort[0]
    assert low["conditioning"] == {
        "template_kwargs": {"enable_thinking": True},
        "system_line": "Reasoning effort: low.",
    }
    assert (low["truncated"], low["dropped"]) == (0, 0)

    flat = run_round(round_config(tiny, tmp_path, 1, [1.0, 1.0, 1.0], adapter=str(tmp_path / "out/round-0")))
    assert flat.updated is False and flat.checkpoint is None
    assert flat.reason == "no group has reward variance: every advantage is 0 (1 groups)"
    assert flat.update.steps == 0 and flat.start_adapter == tmp_path / "out/round-0"
    folder = tmp_path / "out/round-1"
    assert not (folder / "adapter_model.safetensors").exists() and not (folder / "adapter_config.json").exists()
    saved = json.loads((folder / "round_report.json").read_text())
    assert saved["updated"] is False and saved["start_adapter"] == str(tmp_path / "out/round-0")
    assert flat.next_adapter == tmp_path / "out/round-0"

    # round 2 is pointed at round 1's folder, which has no adapter: it continues from round 0's (even when an
    # earlier run of round 1 left adapter files there: the report decides)
    (folder / "adapter_config.json").write_text("{}")
    after = run_round(round_config(tiny, tmp_path, 2, [1.0, 0.0], adapter=str(folder)))
    assert after.start_adapter == tmp_path / "out/round-0" and "round-1 made no update" in after.start_note
    assert after.updated and (tmp_path / "out/round-2/adapter_model.safetensors").is_file()


def test_the_round_cli_counts_what_it_left_out_and_says_when_it_made_no_update(tiny: Path, tmp_path: Path) -> None:
    from qaflow.cli import app

    config = round_config(tiny, tmp_path, 0, [1.0, 0.0], update={"context_length": 110})
    (tmp_path / "round.json").write_text(config.model_dump_json())
    dropped = CliRunner().invoke(app, ["rl", "round", str(tmp_path / "round.json"), "--json"])
    assert dropped.exit_code == 0, dropped.output
    report = json.loads(dropped.stdout)
    assert report["by_effort"][0]["dropped"] == 2 and report["updated"] is False
    assert report["reason"].startswith(
        "every session with a non-zero advantage was left out of the update (2 dropped, context 110)"
    )
    text = CliRunner().invoke(app, ["rl", "round", str(tmp_path / "round.json"), "--allow-truncation"])
    assert text.exit_code == 0, text.output
    assert "2 truncated at a turn boundary" in text.output and "checkpoint:" in text.output
    assert (
        'conditioning low: {"template_kwargs": {"enable_thinking": true}, "system_line": "Reasoning effort: low."}'
        in (text.output.replace("\n", ""))
    )


def test_the_line_is_merged_into_the_system_message_or_is_one() -> None:
    from sft.conditioning import condition_messages

    line = Conditioning(system_line="Reasoning effort: low.")
    user = {"role": "user", "content": "Fix it."}
    assert condition_messages([{"role": "system", "content": "Be brief."}, user], line)[0] == {
        "role": "system",
        "content": "Reasoning effort: low.\n\nBe brief.",
    }
    assert condition_messages([user], line) == [{"role": "system", "content": "Reasoning effort: low."}, user]
    parts = [{"type": "text", "text": "Be brief."}]
    assert condition_messages([{"role": "system", "content": parts}], line)[0]["content"] == [
        {"type": "text", "text": "Reasoning effort: low.\n\n"},
        *parts,
    ]
    stored = [{"role": "system", "content": "Be brief."}]
    condition_messages(stored, line)
    assert stored == [{"role": "system", "content": "Be brief."}]  # the stored session is never changed
    assert condition_messages(stored, Conditioning(template_kwargs={"enable_thinking": False})) == stored


def test_the_round_counts_timed_out_passes_apart_and_scores_them_0(tiny: Path, tmp_path: Path) -> None:
    records = [
        make_record(task="t", effort="low", attempt=0, tool_steps=1, reward=1.0, tools=[]),
        make_record(task="t", effort="low", attempt=1, tool_steps=1, reward=1.0, tools=[], exit_status="agent_timeout"),
        make_record(task="t", effort="low", attempt=2, tool_steps=1, reward=0.0, tools=[], exit_status="agent_timeout"),
    ]
    write_shard(records, tmp_path / "rollouts")
    config = round_config(tiny, tmp_path, 0, [])
    report = run_round(config.model_copy(update={"rollouts": tmp_path / "rollouts"}))
    assert report.rollouts == 3 and report.timed_out_passed == 1
    low = report.by_effort[0]
    assert (low["timed_out_passed"], low["success_rate"], low["distinct_rewards"]) == (1, pytest.approx(1 / 3), 2)
    saved = json.loads((tmp_path / "out/round-0/round_report.json").read_text())
    assert saved["timed_out_passed"] == 1
