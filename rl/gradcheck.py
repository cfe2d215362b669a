"""Gradient check: do two implementations of the same model give the same gradients?

The model is loaded twice from the same weights, once per `Variant` (attention implementation,
dtype, config overrides, Liger kernels), and both run forward and backward on one fixed batch
(token ids of a fixed text, labels = input ids, dropout off). Gradients are compared in float32:

    relative L2 = ||g_a - g_b|| / max(||g_a||, tiny)

per parameter, per parameter group (the same formula over the group's parameters together), and
overall. A group above `threshold` is flagged. With tied input and output embeddings the output
projection has no parameter of its own and its gradient is part of `embed`.

`fp32_lm_head` keeps the output projection in float32 while the rest runs in the variant's `dtype` (as
RL trainers do to keep the sampler's and the learner's log-probabilities close): its weight is float32 and
the hidden states are cast to float32 before it, so logits, loss and the projection's gradient are float32.
With tied embeddings the shared matrix is that weight: it is float32 and its lookups are cast to `dtype`
on the way into the first layer, so both variants keep the same parameters and compare as usual.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, model_validator

TINY = 1e-30

GROUP_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("embed", ("embed_tokens", "wte", "word_embeddings", "embed_in")),
    ("lm_head", ("lm_head", "embed_out")),
    ("norm", ("norm", "ln_")),
    ("mlp", ("mlp", "gate_proj", "up_proj", "down_proj", "experts", "router")),
    ("attn_q", ("q_proj",)),
    ("attn_k", ("k_proj",)),
    ("attn_v", ("v_proj",)),
    ("attn_qkv", ("qkv_proj", "c_attn", "query_key_value")),
    ("attn_o", ("o_proj", "out_proj", "dense")),
)
"""(group, substrings of the parameter name), first match wins; no match is `other`."""

FIXED_TEXT = (
    "You are a coding agent working in a sandboxed Linux machine. Read the file, edit the function, run the "
    "tests with python3 -m pytest and check the output.\n"
    "def mean(xs):\n    if not xs:\n        raise ValueError('empty')\n    return sum(xs) / len(xs)\n"
    "The task is complete: I fixed mean and median and verified the results. Done.\n"
)


class Variant(BaseModel):
    """How one side of the comparison is loaded."""

    model_config = ConfigDict(extra="forbid")

    attn_implementation: str = Field("eager", description="eager, sdpa, flash_attention_2, ...")
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    config_overrides: dict[str, Any] = Field(
        default_factory=dict, description="Model config attributes to change, e.g. {'rms_norm_eps': 1e-1}."
    )
    liger: bool = Field(False, description="Patch the model with Liger kernels (needs liger_kernel and CUDA).")
    fp32_lm_head: bool = Field(
        False, description="Keep the output projection (lm_head) in float32 while the rest runs in `dtype`."
    )

    @model_validator(mode="after")
    def _head_without_liger(self) -> Variant:
        if self.fp32_lm_head and self.liger:
            raise ValueError("fp32_lm_head with liger: Liger's fused linear cross-entropy bypasses the lm_head module")
        return self

    def label(self) -> str:
        parts = [self.attn_implementation, self.dtype]
        parts += [f"{k}={v}" for k, v in sorted(self.config_overrides.items())]
        if self.fp32_lm_head:
            parts.append("fp32-lm_head")
        if self.liger:
            parts.append("liger")
        return " ".join(parts)


class ParamDiff(BaseModel):
    name: str
    group: str
    numel: int
    norm_a: float
    norm_b: float
    diff: float
    rel_l2: float


class GroupDiff(BaseModel):
    group: str
    params: int
    numel: int
    norm_a: float
    norm_b: float
    rel_l2: float
    flagged: bool


class GradReport(BaseModel):
    a: Variant
    b: Variant
    threshold: float
    batch_shape: tuple[int, int]
    loss_a: float
    loss_b: float
    overall: float = Field(description="Relative L2 difference over all parameters together.")
    groups: list[GroupDiff]
    params: list[ParamDiff]

    @property
    def flagged(self) -> list[str]:
        return [g.group for g in self.groups if g.flagged]

    def group_frame(self) -> pl.DataFrame:
        return pl.DataFrame([g.model_dump() for g in self.groups])

    def param_frame(self) -> pl.DataFrame:
        return pl.DataFrame([p.model_dump() for p in self.params])


def param_group(name: str) -> str:
    """The group of a parameter by its name (see GROUP_PATTERNS)."""
    lowered = name.lower()
    for group, patterns in GROUP_PATTERNS:
        if any(p in lowered for p in patterns):
            return group
    return "other"


def fixed_batch(tokenizer: Any, *, batch_size: int = 2, seq_len: int = 64, text: str = FIXED_TEXT) -> dict[str, Any]:
    """`batch_size` rows of exactly `seq_len` consecutive token ids of `text` (repeated as needed), no padding."""
    import torch

    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if not ids:
        raise ValueError("the fixed text tokenizes to nothing")
    need = batch_size * seq_len
    ids = (ids * (need // len(ids) + 1))[:need]
    input_ids = torch.tensor(ids, dtype=torch.long).view(batch_size, seq_len)
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "labels": input_ids.clone()}


def load_variant(model_path: Path | str, variant: Variant, device: str = "cpu") -> Any:
    """The model at `model_path` loaded as `variant` describes, in eval mode (no dropout) on `device`."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if variant.liger:
        if importlib.util.find_spec("liger_kernel") is None:
            raise RuntimeError("liger=True needs the liger_kernel package, which is not installed")
        if not device.startswith("cuda"):
            raise RuntimeError("liger=True needs a CUDA device (Liger's kernels are Triton kernels)")
    config = AutoConfig.from_pretrained(model_path)
    for key, value in variant.config_overrides.items():
        if not hasattr(config, key):
            raise ValueError(f"{type(config).__name__} has no attribute {key!r} to override")
        setattr(config, key, value)
    model: Any = AutoModelForCausalLM.from_pretrained(
        model_path,
        config=config,
        attn_implementation=variant.attn_implementation,
        dtype=getattr(torch, variant.dtype),
    )
    if variant.liger:
        from liger_kernel.transformers import _apply_liger_kernel_to_instance

        _apply_liger_kernel_to_instance(model=model)
    if variant.fp32_lm_head:
        keep_lm_head_fp32(model, getattr(torch, variant.dtype))
    model.to(device)
    model.eval()
    return model


def keep_lm_head_fp32(model: Any, dtype: Any) -> None:
    """Make `model`'s output projection float32 and feed it float32 hidden states; with tied embeddings, cast
    the shared matrix's lookups back to `dtype` (see the module docstring).

    Raises:
        ValueError: the model has no output projection module.
    """
    import torch

    head = model.get_output_embeddings()
    if head is None or not hasattr(head, "weight"):
        raise ValueError(f"{type(model).__name__} has no output projection to keep in float32")
    head.float()
    head.register_forward_pre_hook(lambda _module, args: (args[0].to(torch.float32), *args[1:]))
    embed = model.get_input_embeddings()
    if embed is not None and getattr(embed, "weight", None) is head.weight and dtype != torch.float32:
        embed.register_forward_hook(lambda _module, _args, output: output.to(dtype))


def _gradients(model: Any, batch: dict[str, Any], device: str) -> tuple[float, dict[str, Any]]:
    model.zero_grad(set_to_none=True)
    inputs = {k: v.to(device) for k, v in batch.items()}
    loss = model(**inputs).loss
    loss.backward()
    grads = {}
    for name, p in model.named_parameters():
        if p.requires_grad:
            grads[name] = (p.grad if p.grad is not None else p.new_zeros(p.shape)).detach().float().cpu()
    return float(loss.detach().float()), grads


def gradcheck(
    model_path: Path | str,
    *,
    a: Variant,
    b: Variant,
    batch: dict[str, Any] | None = None,
    threshold: float = 1e-3,
    device: str = "cpu",
    seq_len: int = 64,
    batch_size: int = 2,
) -> GradReport:
    """Compare the gradients of variants `a` and `b` of the model at `model_path` on one batch.

    `batch` holds input_ids, attention_mask and labels; by default `fixed_batch` of the model's tokenizer.
    """
    if batch is None:
        from transformers import AutoTokenizer

        batch = fixed_batch(AutoTokenizer.from_pretrained(model_path), batch_size=batch_size, seq_len=seq_len)
    results = []
    for variant in (a, b):
        model = load_variant(model_path, variant, device)
        results.append(_gradients(model, batch, device))
        del model
    (loss_a, grads_a), (loss_b, grads_b) = results
    overall, groups, params = compare_gradients(grads_a, grads_b, threshold)
    return GradReport(
        a=a,
        b=b,
        threshold=threshold,
        batch_shape=tuple(batch["input_ids"].shape),
        loss_a=loss_a,
        loss_b=loss_b,
        overall=overall,
        groups=groups,
        params=params,
    )


def compare_gradients(
    grads_a: dict[str, Any], grads_b: dict[str, Any], threshold: float
) -> tuple[float, list[GroupDiff], list[ParamDiff]]:
    """Relative L2 of `grads_b` against `grads_a` (name -> float32 tensor) overall, per group (flagged above
    `threshold`) and per parameter.

    Raises:
        ValueError: different parameter names or shapes.
    """
    if grads_a.keys() != grads_b.keys():
        only = sorted(grads_a.keys() ^ grads_b.keys())
        raise ValueError(f"the variants have different parameters: {only[:5]}")
    params = []
    sums: dict[str, list[float]] = {}
    total = [0.0, 0.0, 0.0]
    for name, ga in grads_a.items():
        gb = grads_b[name]
        if ga.shape != gb.shape:
            raise ValueError(f"{name}: shapes differ ({tuple(ga.shape)} vs {tuple(gb.shape)})")
        sq = [float(ga.pow(2).sum()), float(gb.pow(2).sum()), float((ga - gb).pow(2).sum())]
        group = param_group(name)
        acc = sums.setdefault(group, [0.0, 0.0, 0.0, 0, 0])
        for i in range(3):
            acc[i] += sq[i]
            total[i] += sq[i]
        acc[3] += 1
        acc[4] += ga.numel()
        params.append(
            ParamDiff(
                name=name,
                group=group,
                numel=ga.numel(),
                norm_a=math.sqrt(sq[0]),
                norm_b=math.sqrt(sq[1]),
                diff=math.sqrt(sq[2]),
                rel_l2=_relative(sq[2], sq[0]),
            )
        )
    groups = [
        GroupDiff(
            group=group,
            params=int(acc[3]),
            numel=int(acc[4]),
            norm_a=math.sqrt(acc[0]),
            norm_b=math.sqrt(acc[1]),
            rel_l2=_relative(acc[2], acc[0]),
            flagged=_relative(acc[2], acc[0]) > threshold,
        )
        for group, acc in sums.items()
    ]
    order = [g for g, _ in GROUP_PATTERNS] + ["other"]
    groups.sort(key=lambda g: order.index(g.group))
    return _relative(total[2], total[0]), groups, params


def _relative(diff_sq: float, ref_sq: float) -> float:
    return math.sqrt(diff_sq) / max(math.sqrt(ref_sq), TINY)
