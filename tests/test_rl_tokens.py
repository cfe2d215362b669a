"""Token in, token out: the update trains on exactly the ids the local policy sampled.

Ground truth is what `transformers` generated (each `generate` call's prompt and new ids, recorded around
the library's own method), not our log: the test holds the sample log, the join and the update to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoTokenizer, GenerationMixin

from qaflow.agents.tool_specs import TOOLS
from qaflow.llm import LLM, LLMConfig
from qaflow.models.rollout import Effort
from rl.tokens import sequence_of
from rl.update import TrainingItem, Trajectory, UpdateConfig, UpdateStats, load_policy, policy_update, training_items
from sft.conditioning import effort_conditioning, own_template
from sft.config import LoraSettings
from sft.local_llm import PROVIDER, THINK_CLOSE, local_efforts, register_local_provider
from sft.masking import IGNORE_INDEX, MaskingConfig
from sft.sampled import SAMPLE_LOG_PARAM, SampleLog
from sft.templates import training_template
from sft.tiny_model import build_tiny_model

BUDGETS = {Effort.LOW: 3, Effort.XHIGH: 5}
TURNS = 3


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    register_local_provider()
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture
def generated(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[list[int], list[int]]]]:
    """Every `generate` call's (prompt ids, new ids up to and including the end of turn)."""
    calls: list[tuple[list[int], list[int]]] = []
    original = GenerationMixin.generate

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        prompt = kwargs["input_ids"][0].tolist()
        new = out.sequences[0, len(prompt) :].tolist()
        eos = self.generation_config.eos_token_id
        calls.append((prompt, new[: new.index(eos) + 1] if eos in new else new))
        return out

    monkeypatch.setattr(GenerationMixin, "generate", recording)
    yield calls


def conversation(tiny: Path, effort: Effort, seed: int, log: Path) -> tuple[list[dict], dict]:
    """Three turns of the tiny policy, each answered by an observation (as the harness appends them)."""
    extra = {**local_efforts(BUDGETS)[effort], "seed": seed, SAMPLE_LOG_PARAM: str(log)}
    llm = LLM(LLMConfig(model=f"{PROVIDER}/{tiny}", max_tokens=6, temperature=1.0, max_retries=0, extra=extra))
    messages: list[dict] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix calc.py"},
    ]
    for t in range(TURNS):
        reply = llm.complete(messages, tools=TOOLS)
        messages.append(reply.message)
        if t < TURNS - 1:
            messages.append({"role": "user", "content": f"exit code: {t}\n  stdout: 1.5  "})
    return messages, {"sampling": {"seed": seed, SAMPLE_LOG_PARAM: str(log)}}


def test_the_update_trains_on_the_sampled_ids_observations_masked_nothing_after_a_cut(
    tiny: Path, tmp_path: Path, generated: list[tuple[list[int], list[int]]]
) -> None:
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    template = training_template(tokenizer)
    close = tokenizer.convert_tokens_to_ids(THINK_CLOSE)
    log_path = tmp_path / "samples.jsonl"
    trajectories = []
    truths = []
    for i, effort in enumerate(BUDGETS):
        start = len(generated)
        messages, meta = conversation(tiny, effort, seed=10 + i, log=log_path)
        truths.append(generated[start:])
        seq = sequence_of(messages, meta, SampleLog.read([log_path]))
        assert not isinstance(seq, str), seq
        conditioning = effort_conditioning(own_template(tokenizer), effort)
        trajectories.append(
            Trajectory(messages, TOOLS, advantage=1.0, key=effort.value, conditioning=conditioning, tokens=seq)
        )
    stats = UpdateStats()
    items = training_items(tokenizer, template, trajectories, MaskingConfig(), stats)
    assert stats.sampled_turns == 2 * TURNS and stats.retokenized_turns == 0
    cut = 0
    for item, truth in zip(items, truths, strict=True):
        assert len(truth) == TURNS
        expected_labels = [IGNORE_INDEX] * len(item.input_ids)
        for prompt, new in truth:
            # each turn's prompt is exactly the tokens before it in what the update trains on
            assert item.input_ids[: len(prompt)] == prompt
            assert item.input_ids[len(prompt) : len(prompt) + len(new)] == new
            for p, token in enumerate(new, start=len(prompt)):
                forced = token == close and p - len(prompt) == BUDGETS[Effort(item.key)]
                expected_labels[p] = IGNORE_INDEX if forced else token
            # a turn cut by the length limit sampled no end of turn, and none is trained after it
            if new[-1] != tokenizer.eos_token_id:
                cut += 1
                after = len(prompt) + len(new)
                assert after == len(item.input_ids) or item.labels[after] == IGNORE_INDEX
        # observations, prompts, glue and the prefilled <think> carry no loss; forced </think> neither
        assert item.labels == expected_labels
        assert item.input_ids[: len(truth[-1][0])] == truth[-1][0]
    assert cut > 0  # the tiny model's turns run into the 6-token answer limit

    # re-rendered through the chat template (no sampled tokens), the same turns are other ids, and counted
    rerendered_stats = UpdateStats()
    bare = [Trajectory(t.messages, TOOLS, 1.0, t.key, t.conditioning) for t in trajectories]
    rerendered = training_items(tokenizer, template, bare, MaskingConfig(), rerendered_stats)
    assert rerendered_stats.retokenized_turns == 2 * TURNS
    assert all(trained(r) != trained(i) for r, i in zip(rerendered, items, strict=True))

    # the sampling log-probabilities are the old policy: the trainer agrees with the sampler (ratio 1)
    model = load_policy(str(tiny), None, LoraSettings(r=4, alpha=8, dropout=0.0))
    update = policy_update(model, tokenizer, template, trajectories, UpdateConfig(batch_size=2))
    assert update.retokenized_turns == 0 and update.steps == 1
    assert update.ratio_mean == pytest.approx(1.0, abs=1e-4) and update.ratio_max < 1.001
    assert update.samplers == [f"{tiny} (no adapter)"]


def trained(item: TrainingItem) -> list[int]:
    return [label for label in item.labels if label != IGNORE_INDEX]
