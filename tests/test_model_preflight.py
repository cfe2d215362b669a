"""Check before spending: a model no call could reach is refused before anything runs or is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.errors import LLMError
from qaflow.llm import LLMConfig, ScriptedReply
from qaflow.llm.client import check_model, import_litellm
from qaflow.pool import Pool
from tests.taskfactory import write_task

UNSERVED = [
    (LLMConfig(model="nosuchprovider/xyz"), "no provider serves this model string"),
    (LLMConfig(model="xyz"), "no provider serves this model string"),
    (LLMConfig(model="openai/gpt-4o-mini"), "missing API key: set OPENAI_API_KEY"),
    (LLMConfig(model="anthropic/claude-x"), "missing API key: set ANTHROPIC_API_KEY"),
    (
        LLMConfig(model="openai/m", api_key_env="QAFLOW_TEST_UNSET_KEY"),
        "QAFLOW_TEST_UNSET_KEY (api_key_env) is not set",
    ),
]
SERVED = [
    LLMConfig(model="openai/scripted", script=[ScriptedReply(content="hi")]),
    LLMConfig(model="openai/m", extra={"mock_response": "hi"}),  # litellm's own offline path
    LLMConfig(model="openai/local-vllm", api_base="http://127.0.0.1:9/v1"),  # a server may take no key
    LLMConfig(model="openai/m", api_key_env="QAFLOW_TEST_SET_KEY"),
]


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "QAFLOW_TEST_UNSET_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("QAFLOW_TEST_SET_KEY", "sk-test")


@pytest.mark.parametrize(("config", "why"), UNSERVED, ids=lambda c: getattr(c, "model", ""))
def test_a_model_no_call_could_reach_is_refused_with_the_reason(config: LLMConfig, why: str) -> None:
    with pytest.raises(LLMError) as caught:
        check_model(config)
    assert why in str(caught.value) and config.model in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("config", SERVED, ids=lambda c: c.model)
def test_models_a_call_could_reach_pass(config: LLMConfig) -> None:
    check_model(config)


def test_a_registered_custom_provider_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = import_litellm()
    monkeypatch.setattr(litellm, "custom_provider_map", [{"provider": "my-local", "custom_handler": object()}])
    check_model(LLMConfig(model="my-local/policy"))
    with pytest.raises(LLMError):
        check_model(LLMConfig(model="other-local/policy"))


@pytest.mark.parametrize("model", ["nosuchprovider/xyz", "openai/gpt-4o-mini"])
def test_rollout_run_exits_2_with_one_line_and_records_nothing(tmp_path: Path, model: str) -> None:
    root = tmp_path / "pool"
    write_task(root, "a")
    out = CliRunner().invoke(app, ["rollout", "run", str(root), "--model", model, "--efforts", "low"])
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {model}: "), out.output
    with Pool.open(root) as pool:
        assert pool.ledger.rollout_ids() == set()


def test_repair_review_and_pipeline_refuse_it_before_any_work(tmp_path: Path) -> None:
    root = tmp_path / "pool"
    write_task(root, "a")
    for args in (["repair", str(root), "--model", "nosuchprovider/xyz"], ["review", str(root / "a"), "--model", "xyz"]):
        out = CliRunner().invoke(app, args)
        assert out.exit_code == 2 and "no provider serves this model string" in out.output, out.output
    assert not (root / ".qaflow" / "repaired").exists()
    config = tmp_path / "pipeline.yaml"
    out_dir = tmp_path / "out"
    config.write_text(
        f"name: t\noutput_dir: {out_dir}\nmodel: openai/gpt-4o-mini\n"
        f"sources:\n  - kind: harbor\n    name: p\n    path: {root}\n"
    )
    out = CliRunner().invoke(app, ["pipeline", "run", str(config)])
    assert out.exit_code == 2 and f"{config}: model: openai/gpt-4o-mini: missing API key" in out.output, out.output
    assert not out_dir.exists()
