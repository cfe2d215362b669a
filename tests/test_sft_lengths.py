"""Token lengths of an SFT export under a model's tokenizer: `sft check` and the dataset card state them and the
max_length TRL's SFTTrainer needs (its default of 1,024 cuts longer sessions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import AutoTokenizer
from typer.testing import CliRunner

from curation.export import GateOptions, export_sft
from qaflow.models.export import TRL_DEFAULT_MAX_LENGTH
from qaflow.models.frame import records_to_frame
from sft.tiny_model import build_tiny_model
from sft.train import load_rows
from tests.trajectories import make_record


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_the_lengths_are_the_tokens_trl_tokenizes_and_the_card_states_the_max_length(tiny: Path, tmp_path: Path):
    from qaflow.cli import app

    records = [make_record(task=f"demo/t{i}", tool_steps=n) for i, n in enumerate((0, 2, 40))]
    out = tmp_path / "sft"
    report = export_sft(
        records_to_frame(records), out, gate=GateOptions(include_unaccepted=True), sharegpt=False, tokenizer=str(tiny)
    )
    lengths = report.token_lengths
    assert lengths is not None
    print(lengths.model_dump())
    # what TRL's SFTTrainer tokenizes: the model's own chat template over messages and tools, token for token
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    rows = load_rows(out)
    expected = sorted(
        len(tokenizer.apply_chat_template(m, tools=t, tokenize=True, return_dict=True)["input_ids"])
        for m, t in zip(rows["messages"], rows["tools"], strict=True)
    )
    assert (lengths.sessions, lengths.min, lengths.max, lengths.p50) == (3, expected[0], expected[-1], expected[1])
    assert lengths.needed_max_length == expected[-1]
    assert lengths.over_trl_default == sum(n > TRL_DEFAULT_MAX_LENGTH for n in expected) >= 1
    card = (out / "README.md").read_text()
    assert "## Token lengths" in card and f"SFTConfig(max_length={expected[-1]})" in card
    assert f"its default 1024 would cut {lengths.over_trl_default} of 3 sessions" in card

    result = CliRunner().invoke(app, ["sft", "check", str(out), "--model", str(tiny), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["lengths"] == lengths.model_dump()
    text = CliRunner().invoke(app, ["sft", "check", str(out), "--model", str(tiny)])
    assert f"TRL SFTTrainer: max_length >= {expected[-1]} keeps every session whole" in text.output.replace("\n", " ")


def test_cli_export_sft_tokenizer_states_the_lengths_in_the_card(tiny: Path, tmp_path: Path) -> None:
    from qaflow.cli import app
    from qaflow.models.frame import write_shard

    shards = tmp_path / "rollouts"
    write_shard([make_record(task=f"demo/t{i}", tool_steps=n) for i, n in enumerate((0, 40))], shards)
    out = tmp_path / "sft"
    base = ["export", "sft", str(shards), "--include-unaccepted", "--no-sharegpt", "--no-filter"]
    result = CliRunner().invoke(app, [*base, "--out", str(out), "--tokenizer", str(tiny)])
    assert result.exit_code == 0, result.output
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    rows = load_rows(out)
    expected = sorted(
        len(tokenizer.apply_chat_template(m, tools=t, tokenize=True, return_dict=True)["input_ids"])
        for m, t in zip(rows["messages"], rows["tools"], strict=True)
    )
    assert expected[-1] > TRL_DEFAULT_MAX_LENGTH > expected[0]
    said = " ".join(result.output.split())
    assert f"TRL SFTTrainer: max_length >= {expected[-1]} keeps every session whole" in said
    card = (out / "README.md").read_text()
    section = card.split("## Token lengths", 1)[1].split("\n## ", 1)[0]
    assert f"Tokens per session under `{tiny}`'s tokenizer" in section
    assert f"| 2 | {expected[0]} |" in section and f"| {expected[-1]} |" in section
    assert "its default 1024 would cut 1 of 2 sessions" in section
    assert f"set `SFTConfig(max_length={expected[-1]})` (or larger)" in section
    saved = json.loads((out / "export_report.json").read_text())["token_lengths"]
    assert (saved["sessions"], saved["needed_max_length"]) == (2, expected[-1])

    missing = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "x"), "--tokenizer", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "--tokenizer" in missing.output
    assert not (tmp_path / "x").exists()
