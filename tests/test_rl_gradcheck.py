"""Gradient check on the tiny model: identical variants ~0, a planted difference large, eager vs sdpa small."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import typer
from transformers import AutoTokenizer
from typer.testing import CliRunner

from qaflow.cli.grammar import RootGroup
from rl.cli import register
from rl.gradcheck import Variant, fixed_batch, gradcheck, load_variant, param_group
from sft.tiny_model import build_tiny_model

GROUPS = ["embed", "norm", "mlp", "attn_q", "attn_k", "attn_v", "attn_o"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_param_groups_by_name():
    names = {
        "model.embed_tokens.weight": "embed",
        "lm_head.weight": "lm_head",
        "model.norm.weight": "norm",
        "model.layers.0.input_layernorm.weight": "norm",
        "model.layers.0.self_attn.q_norm.weight": "norm",
        "model.layers.0.self_attn.q_proj.weight": "attn_q",
        "model.layers.0.self_attn.k_proj.weight": "attn_k",
        "model.layers.0.self_attn.v_proj.weight": "attn_v",
        "model.layers.0.self_attn.o_proj.weight": "attn_o",
        "model.layers.0.mlp.gate_proj.weight": "mlp",
        "model.layers.0.mlp.dense_h_to_4h.weight": "mlp",
        "model.rotary.inv_freq": "other",
    }
    assert {n: param_group(n) for n in names} == names


def test_fixed_batch_is_deterministic(tiny: Path):
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    one = fixed_batch(tokenizer, batch_size=3, seq_len=40)
    two = fixed_batch(tokenizer, batch_size=3, seq_len=40)
    assert one["input_ids"].shape == (3, 40)
    assert torch.equal(one["input_ids"], two["input_ids"])
    assert torch.equal(one["labels"], one["input_ids"])
    assert bool(one["attention_mask"].all())


def test_identical_variants_give_zero(tiny: Path):
    report = gradcheck(tiny, a=Variant(), b=Variant(), threshold=1e-3)
    assert report.overall < 1e-6
    assert report.loss_a == report.loss_b
    assert [g.group for g in report.groups] == GROUPS
    assert all(g.rel_l2 < 1e-6 and not g.flagged for g in report.groups)
    assert report.flagged == []
    assert report.batch_shape == (2, 64)
    frame = report.group_frame()
    assert frame.columns == ["group", "params", "numel", "norm_a", "norm_b", "rel_l2", "flagged"]
    # 2 layers: per layer input/post-attention norms and q/k norms, plus the final norm
    assert dict(zip(frame["group"], frame["params"], strict=True))["norm"] == 9
    assert report.param_frame().height == sum(g.params for g in report.groups)


def test_changed_norm_epsilon_gives_a_large_difference(tiny: Path):
    report = gradcheck(
        tiny,
        a=Variant(config_overrides={"rms_norm_eps": 1e-6}),
        b=Variant(config_overrides={"rms_norm_eps": 1e-1}),
        threshold=1e-3,
    )
    assert report.overall > 1e-2
    assert report.loss_a != report.loss_b
    by_group = {g.group: g for g in report.groups}
    assert set(by_group) == set(GROUPS)
    assert all(g.rel_l2 > 1e-2 and g.flagged for g in by_group.values())
    assert report.flagged == GROUPS


def test_eager_vs_sdpa_is_small(tiny: Path):
    report = gradcheck(tiny, a=Variant(attn_implementation="eager"), b=Variant(attn_implementation="sdpa"))
    assert report.overall < 1e-5
    assert report.flagged == []
    assert abs(report.loss_a - report.loss_b) < 1e-5


def test_bfloat16_differs_by_its_precision(tiny: Path):
    report = gradcheck(tiny, a=Variant(), b=Variant(dtype="bfloat16"), threshold=5e-2)
    assert 1e-4 < report.overall < 5e-2
    assert report.flagged == []


def test_variant_errors(tiny: Path):
    with pytest.raises(ValueError, match="no attribute 'no_such_knob'"):
        load_variant(tiny, Variant(config_overrides={"no_such_knob": 1}))
    with pytest.raises(RuntimeError, match="liger"):
        load_variant(tiny, Variant(liger=True))


def _cli() -> typer.Typer:
    root = typer.Typer(cls=RootGroup)  # qaflow's grammar: --json [FILE|-]
    register(root)
    return root


def test_cli_gradcheck(tiny: Path):
    same = CliRunner().invoke(_cli(), ["rl", "gradcheck", str(tiny), "--b", "eager", "--json"])
    assert same.exit_code == 0, same.output
    data = json.loads(same.stdout)
    assert data["overall"] < 1e-6
    assert [g["group"] for g in data["groups"]] == GROUPS

    planted = CliRunner().invoke(_cli(), ["rl", "gradcheck", str(tiny), "--b", "eager", "--eps-b", "0.1"])
    assert planted.exit_code == 1
    assert "FLAGGED" in planted.stdout
    assert "rms_norm_eps=0.1" in planted.stdout

    bad = CliRunner().invoke(_cli(), ["rl", "gradcheck", str(tiny), "--dtype-b", "int8"])
    assert bad.exit_code == 2


@pytest.mark.parametrize("tied", [True, False])
def test_fp32_output_projection_with_the_rest_in_bfloat16(tiny: Path, tmp_path: Path, tied: bool):
    """The output projection's weight, gradient and logits are float32; the layers stay bfloat16. Tied: the
    shared matrix is the float32 one (its lookups are cast to bfloat16); untied: lm_head alone is float32."""
    path = tiny if tied else build_tiny_model(tmp_path / "untied", tie_embeddings=False)
    model = load_variant(path, Variant(dtype="bfloat16", fp32_lm_head=True))
    out = model(**fixed_batch(AutoTokenizer.from_pretrained(path)))
    out.loss.backward()
    head, embed = model.get_output_embeddings().weight, model.get_input_embeddings().weight
    assert (head is embed) is tied
    assert (head.dtype, head.grad.dtype, out.logits.dtype) == (torch.float32, torch.float32, torch.float32)
    assert embed.dtype == (torch.float32 if tied else torch.bfloat16)
    layer = model.model.layers[0]
    assert {layer.self_attn.q_proj.weight.dtype, layer.mlp.up_proj.weight.dtype} == {torch.bfloat16}
    assert layer.self_attn.q_proj.weight.grad.dtype == torch.bfloat16
    if tied:
        return
    report = gradcheck(path, a=Variant(), b=Variant(dtype="bfloat16", fp32_lm_head=True), threshold=5e-2)
    by_group = {g.group: g for g in report.groups}
    assert by_group["lm_head"].params == 1 and 0 < by_group["lm_head"].rel_l2 < 5e-2
    assert 1e-4 < report.overall < 5e-2 and report.flagged == []
    assert report.b.label() == "eager bfloat16 fp32-lm_head"
    with pytest.raises(ValueError, match="liger"):
        Variant(fp32_lm_head=True, liger=True)


def test_cli_gradcheck_fp32_output_projection(tiny: Path):
    args = ["rl", "gradcheck", str(tiny), "--b", "eager", "--dtype-b", "bfloat16", "--fp32-lm-head-b"]
    out = CliRunner().invoke(_cli(), [*args, "--threshold", "5e-2", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["b"]["fp32_lm_head"] is True and data["a"]["fp32_lm_head"] is False
    assert 1e-4 < data["overall"] < 5e-2
