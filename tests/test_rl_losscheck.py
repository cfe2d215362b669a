"""The loss check on the tiny model: our SFT and RL losses match their references; a changed loss is flagged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from qaflow.cli.grammar import RootGroup
from rl.cli import register
from rl.losscheck import CLIP, FixedInputs, losscheck, rl_ours
from rl.update import policy_loss
from sft.tiny_model import build_tiny_model

GROUPS = ["embed", "norm", "mlp", "attn_q", "attn_k", "attn_v", "attn_o"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def rl_without_clip(model: Any, inputs: FixedInputs) -> Any:
    """The RL loss with the ratio clipping dropped: what the check must catch."""
    logits = model(input_ids=inputs.input_ids).logits
    n = int((inputs.labels[:, 1:] != -100).sum())
    total = 0
    for row, advantage in enumerate((0.7, -0.4)):
        loss, _ = policy_loss(
            logits[row : row + 1],
            inputs.labels[row : row + 1],
            advantage,
            old_logp=inputs.old[row : row + 1],
            ref_logp=inputs.ref[row : row + 1],
            clip=None,
            kl_coef=0.05,
        )
        total = total + loss
    return total / n


def sft_unmasked(model: Any, inputs: FixedInputs) -> Any:
    """The SFT loss on every token, observations included."""
    return model(input_ids=inputs.input_ids, labels=inputs.input_ids).loss


def test_the_trained_losses_match_their_references_and_a_changed_loss_is_flagged(tiny: Path) -> None:
    report = losscheck(tiny, seq_len=32)
    assert report.flagged == [] and report.threshold == 1e-4
    for check in report.checks:
        assert [g.group for g in check.groups] == GROUPS
        assert check.ours == pytest.approx(check.reference, rel=1e-5)
        assert check.overall < 1e-5
    assert report.checks[1].ours != 0.0 and CLIP == 0.2

    changed = losscheck(tiny, seq_len=32, sft=sft_unmasked, rl=rl_without_clip)
    sft, rl = changed.checks
    assert sft.overall > 1e-2 and rl.overall > 1e-2
    assert {f.split(":")[0] for f in changed.flagged} == {"sft", "rl"}
    assert rl_ours is not rl_without_clip


def test_cli_losscheck(tiny: Path) -> None:
    app = typer.Typer(cls=RootGroup)  # qaflow's grammar: --json [FILE|-]
    register(app)
    result = CliRunner().invoke(app, ["rl", "losscheck", str(tiny), "--seq-len", "24", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [c["loss"] for c in data["checks"]] == ["sft", "rl"]
    assert all(c["overall"] < 1e-5 for c in data["checks"])
    assert CliRunner().invoke(app, ["rl", "losscheck", str(tiny / "missing")]).exit_code == 2
