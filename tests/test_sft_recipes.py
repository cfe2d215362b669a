"""Recipe presets of `qaflow sft train`: what each sets, and explicit settings over the preset."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sft.config import LoraSettings, SFTTrainConfig
from sft.recipes import RECIPES, apply_recipe

BASE = "model: m\ndataset: data\noutput_dir: run\n"


def config(tmp_path: Path, extra: str = "") -> SFTTrainConfig:
    (tmp_path / "sft.yaml").write_text(BASE + extra)
    return SFTTrainConfig.load(tmp_path / "sft.yaml")


def test_presets_resolve_to_the_documented_values(tmp_path: Path) -> None:
    pi = apply_recipe(config(tmp_path), "pi")
    assert pi.lora == LoraSettings(target_modules="all-linear") and pi.lora.r == 16 and pi.lora.alpha == 32
    assert (pi.bf16, pi.epochs) == ("auto", 1.0)
    ot = apply_recipe(config(tmp_path), "openthoughts")
    assert ot.lora is None  # full fine-tuning
    assert (ot.learning_rate, ot.lr_scheduler_type, ot.epochs) == (4e-5, "cosine", 7.0)
    assert ot.warmup == SFTTrainConfig.model_fields["warmup"].default  # a field the recipe does not name
    assert "OpenThoughts" in RECIPES["openthoughts"].source and "Physical Intelligence" in RECIPES["pi"].source
    with pytest.raises(ValueError, match="unknown recipe 'x'"):
        apply_recipe(config(tmp_path), "x")


def test_the_config_file_and_explicit_flags_win_over_the_preset(tmp_path: Path) -> None:
    own = apply_recipe(config(tmp_path, "epochs: 2\nlora:\n  r: 4\n"), "openthoughts")
    assert own.epochs == 2.0 and own.lora is not None and own.lora.r == 4  # set in the file: kept
    assert own.learning_rate == 4e-5  # not set in the file: the recipe's
    flags = apply_recipe(config(tmp_path, "epochs: 2\n"), "openthoughts", {"epochs": 3.0, "learning_rate": 1e-5})
    assert (flags.epochs, flags.learning_rate, flags.lr_scheduler_type) == (3.0, 1e-5, "cosine")


def test_the_cli_refuses_an_unknown_recipe_and_a_bad_flag_in_one_line(tmp_path: Path) -> None:
    from qaflow.cli import app

    (tmp_path / "sft.yaml").write_text(BASE.replace("model: m", "model: ./missing-model"))
    unknown = CliRunner().invoke(app, ["sft", "train", str(tmp_path / "sft.yaml"), "--recipe", "nope"])
    assert unknown.exit_code == 2 and "unknown recipe 'nope'; choose from pi, openthoughts" in unknown.output
    bad = CliRunner().invoke(app, ["sft", "train", str(tmp_path / "sft.yaml"), "--lr-scheduler", "zigzag"])
    assert bad.exit_code == 2 and "lr_scheduler_type" in bad.output


def test_precision_auto_falls_back_to_fp32_with_a_note_only_without_bf16() -> None:
    from sft.train import resolve_precision

    assert resolve_precision("auto", cuda=True, bf16_supported=True).model_dump() == {
        "setting": "auto",
        "bf16": True,
        "note": "",
    }
    assert resolve_precision("auto", cuda=False, bf16_supported=False).note == (
        "bf16: auto fell back to fp32 (no CUDA device)"
    )
    assert "does not support bf16" in resolve_precision("auto", cuda=True, bf16_supported=False).note
    assert resolve_precision(False, cuda=True, bf16_supported=True).note == ""


def test_select_screens_16_tasks_at_3_efforts_by_default() -> None:
    from qaflow.models.rollout import Effort
    from sft.select import SelectConfig

    config = SelectConfig()
    assert config.subset_size == 16 and config.shortlist_efforts == [Effort.LOW, Effort.MEDIUM, Effort.XHIGH]
