"""The local policy (`qaflow-local/<folder>`) through litellm: efforts as thinking budgets, sampling with seeds,
and the up-front check for settings a provider cannot honour."""

from __future__ import annotations

from pathlib import Path

import pytest

from qaflow.agents.effort import EffortMap, check_efforts
from qaflow.agents.harness import CodingAgent, HarnessConfig, attempt_seed
from qaflow.errors import LLMError
from qaflow.llm import LLM, LLMConfig
from qaflow.models.rollout import Effort
from sft.local_llm import (
    PROVIDER,
    LocalSampling,
    local_efforts,
    parse_reply,
    register_local_provider,
    think_token_ids,
    with_local_efforts,
)
from sft.tiny_model import build_tiny_model

BUDGETS = {Effort.LOW: 4, Effort.MEDIUM: 8, Effort.XHIGH: 16}
MESSAGES = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix calc.py."}]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    register_local_provider()
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def turn(tiny: Path, effort: Effort, *, temperature: float = 1.0, seed: int | None = 0, max_tokens: int = 6):
    extra = {**local_efforts(BUDGETS)[effort], **({} if seed is None else {"seed": seed})}
    config = LLMConfig(
        model=f"{PROVIDER}/{tiny}", max_tokens=max_tokens, temperature=temperature, max_retries=0, extra=extra
    )
    return LLM(config).complete(MESSAGES)


def test_each_effort_thinks_within_its_budget_and_off_does_not_think(tiny: Path) -> None:
    off = turn(tiny, Effort.OFF)
    assert off.usage.reasoning_tokens == 0 and off.reasoning is None and off.usage.completion_tokens <= 6
    for effort, budget in BUDGETS.items():
        reply = turn(tiny, effort)
        # a random model does not close its thinking by itself: the budget does, exactly
        assert reply.usage.reasoning_reported and reply.usage.reasoning_tokens == budget
        assert reply.reasoning is not None
        assert budget < reply.usage.completion_tokens <= budget + 1 + 6  # thinking, </think>, the answer


def test_through_litellm_the_prompt_is_conditioned_on_the_effort(tiny: Path) -> None:
    from transformers import AutoTokenizer

    from sft.local_llm import prompt_text

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    for effort in (Effort.LOW, Effort.XHIGH):
        reply = turn(tiny, effort, max_tokens=1)
        sampling = LocalSampling.from_params(local_efforts(BUDGETS)[effort])
        assert sampling.effort == effort
        text = prompt_text(tokenizer, MESSAGES, None, sampling) + "<think>\n"
        assert f"Reasoning effort: {effort.value}." in text
        # the provider prompted exactly that: the `effort` key reached it through litellm
        assert reply.usage.prompt_tokens == len(tokenizer(text, add_special_tokens=False)["input_ids"])
    bare = str(tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)) + "<think>\n"
    assert turn(tiny, Effort.LOW, max_tokens=1).usage.prompt_tokens > len(tokenizer(bare)["input_ids"])


def test_attempts_differ_by_seed_replay_with_the_same_seed_and_greedy_only_at_temperature_zero(tiny: Path) -> None:
    a, b, again = turn(tiny, Effort.LOW, seed=1), turn(tiny, Effort.LOW, seed=2), turn(tiny, Effort.LOW, seed=1)
    assert a.message != b.message and a.message == again.message
    greedy = {str(turn(tiny, Effort.LOW, temperature=0.0, seed=s).message) for s in (1, 2, None)}
    assert len(greedy) == 1


def test_the_agent_sends_a_seed_per_attempt_and_reports_its_sampling_settings() -> None:
    harness = with_local_efforts(HarnessConfig(seed=7), BUDGETS)
    config = LLMConfig(model=f"{PROVIDER}/m", temperature=0.8, max_tokens=32)
    one = CodingAgent(config, Effort.MEDIUM, harness, attempt_key="v:medium:0:0")
    two = CodingAgent(config, Effort.MEDIUM, harness, attempt_key="v:medium:1:0")
    assert one.sampling == {
        "temperature": 0.8,
        "max_tokens": 32,
        "enable_thinking": True,
        "thinking_budget": 8,
        "effort": "medium",
        "seed": attempt_seed(7, "v:medium:0:0"),
    }
    assert one.sampling["seed"] != two.sampling["seed"]
    assert "seed" not in CodingAgent(config, Effort.MEDIUM, HarnessConfig()).sampling
    # a table the user gave for local models wins over the built-in one
    own = HarnessConfig(efforts=EffortMap(per_model={f"{PROVIDER}/*": {Effort.LOW: {"thinking_budget": 3}}}))
    assert with_local_efforts(own) is own


def test_settings_a_provider_cannot_honour_fail_up_front_with_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")  # the key is checked first (tests/test_model_preflight.py)
    register_local_provider()
    local = LLMConfig(model=f"{PROVIDER}/m")
    with pytest.raises(LLMError) as failed:
        check_efforts(local, [Effort.OFF, Effort.LOW, Effort.XHIGH], EffortMap())
    assert "low sends reasoning_effort" in str(failed.value) and "xhigh sends reasoning_effort" in str(failed.value)
    assert "off" not in str(failed.value).split("accept")[1].split(":")[0]
    check_efforts(local, list(Effort), with_local_efforts(HarnessConfig()).efforts, seed=True)
    with pytest.raises(LLMError, match="sends seed"):
        check_efforts(LLMConfig(model="anthropic/claude-sonnet-4-5"), [Effort.LOW], EffortMap(), seed=True)
    check_efforts(LLMConfig(model="anthropic/claude-sonnet-4-5"), [Effort.LOW], EffortMap())
    allowed = LLMConfig(model=f"{PROVIDER}/m", extra={"allowed_openai_params": ["reasoning_effort"]})
    check_efforts(allowed, [Effort.LOW], EffortMap())


def test_sampling_settings_and_reply_parsing() -> None:
    assert LocalSampling.from_params({"reasoning_effort": "medium", "max_tokens": 10}).max_new_tokens == 10 + 1024
    explicit = LocalSampling.from_params({"reasoning_effort": "high", "thinking_budget": 5, "temperature": 0.5})
    assert (explicit.enable_thinking, explicit.thinking_budget, explicit.temperature) == (True, 5, 0.5)
    assert LocalSampling.from_params({}).enable_thinking is False
    # a turn that ran out of tokens while thinking is all reasoning, never a reply
    assert parse_reply("<think>\nstill going") == ("", "still going", [])


def test_the_tiny_tokenizer_has_single_token_thinking_markers(tiny: Path) -> None:
    from transformers import AutoTokenizer

    ids = think_token_ids(AutoTokenizer.from_pretrained(tiny))
    assert ids is not None and ids[0] != ids[1]
