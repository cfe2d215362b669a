"""One policy update on pre-collected multi-turn trajectories with given advantages (ours: TRL has no
trainer for this).

Each trajectory is tokenized with the SFT stage's masking, so exactly the tokens the model generated
(reasoning, text, tool calls, end-of-turn tokens, in every turn) carry the trajectory's advantage and
observation tokens carry nothing. The loss is the clipped policy-gradient objective

    L = - sum_t min(rho_t A, clip(rho_t, 1 - eps, 1 + eps) A) / N  (+ kl_coef * KL_t summed / N)

with rho_t = pi(y_t) / pi_old(y_t) (pi_old: the policy before this update), N the number of generated
tokens in the batch (token-level normalisation), and KL the k3 estimator against the reference
policy (the base model: the LoRA adapter disabled). Trajectories with advantage 0 carry no gradient
and are skipped. The old and reference log-probabilities are computed with the model in eval mode (LoRA
dropout off), so they are those of the policy that generated; the update itself runs in train mode.

Each trajectory is rendered under its effort's conditioning (`sft.conditioning`), exactly as the policy
saw it when it collected, so old and new log-probabilities are of the conditioned prompt. Nothing is cut
silently: a session longer than the model's context (`context_length`, default the model's own) is left
out and counted in `dropped`; with `allow_truncation` it is cut after its last assistant turn that fits
and counted in `truncated`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sft.conditioning import Conditioning
from sft.config import LoraSettings
from sft.masking import IGNORE_INDEX, MaskingConfig, mask_sessions, model_context_length


class UpdateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    learning_rate: float = Field(1e-5, gt=0)
    epochs: int = Field(1, ge=1, description="Passes over the round's trajectories.")
    batch_size: int = Field(4, ge=1, description="Trajectories per optimizer step.")
    clip: float | None = Field(0.2, gt=0, description="PPO ratio clipping epsilon; None = plain policy gradient.")
    kl_coef: float = Field(0.0, ge=0, description="Weight of the KL penalty to the reference (base) policy.")
    max_grad_norm: float = Field(1.0, gt=0)
    context_length: int | None = Field(
        None,
        ge=8,
        description="Longest session in tokens; None: the model's context (config max_position_embeddings, else "
        "the tokenizer's model_max_length when it is a real length).",
    )
    allow_truncation: bool = Field(
        False,
        description="Cut a session longer than context_length after its last assistant turn that fits (counted as "
        "truncated); by default it is left out (counted as dropped).",
    )
    lora: LoraSettings | None = Field(default_factory=LoraSettings, description="None = full fine-tuning.")
    seed: int = 0


@dataclass
class Trajectory:
    messages: Sequence[Mapping[str, Any]]
    tools: Any
    advantage: float
    key: str = ""
    conditioning: Conditioning | None = None


class UpdateStats(BaseModel):
    trajectories: int = 0
    skipped_zero_advantage: int = 0
    context_length: int | None = Field(None, description="The session limit the update applied (None: none known).")
    dropped: list[tuple[str, str]] = Field(
        default_factory=list, description="(trajectory key, reason) of every session left out of the update."
    )
    truncated: list[str] = Field(
        default_factory=list, description="Keys of the sessions cut after an assistant turn (allow_truncation)."
    )
    steps: int = 0
    generated_tokens: int = 0
    losses: list[float] = Field(default_factory=list)
    clip_fraction: float = 0.0
    mean_kl: float = 0.0


def token_logprobs(logits: Any, labels: Any) -> tuple[Any, Any]:
    """Log-probabilities of each next token (positions 0..T-2 predict 1..T-1) and the mask of generated ones."""
    import torch

    targets = labels[:, 1:]
    mask = targets != IGNORE_INDEX
    safe = torch.where(mask, targets, torch.zeros_like(targets))
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    return logp, mask


def policy_loss(
    logits: Any,
    labels: Any,
    advantage: float,
    *,
    old_logp: Any | None = None,
    ref_logp: Any | None = None,
    clip: float | None = 0.2,
    kl_coef: float = 0.0,
) -> tuple[Any, dict[str, float]]:
    """Summed (not averaged) per-token loss of one trajectory, and stats; the caller divides by N."""
    import torch

    logp, mask = token_logprobs(logits, labels)
    adv = torch.tensor(advantage, dtype=logp.dtype, device=logp.device)
    old = logp.detach() if old_logp is None else old_logp
    ratio = torch.exp(logp - old)
    if clip is None:
        per_token = -ratio * adv
        clipped = torch.zeros_like(mask)
    else:
        bounded = torch.clamp(ratio, 1 - clip, 1 + clip)
        per_token = -torch.minimum(ratio * adv, bounded * adv)
        clipped = (ratio * adv > bounded * adv) & mask
    kl = torch.zeros_like(logp)
    if ref_logp is not None and kl_coef > 0:
        delta = ref_logp - logp
        kl = torch.exp(delta) - delta - 1
        per_token = per_token + kl_coef * kl
    loss = (per_token * mask).sum()
    n = int(mask.sum())
    return loss, {"tokens": n, "clipped": float(clipped.sum()), "kl": float((kl.detach() * mask).sum())}


def load_policy(base: str, adapter: str | None, lora: LoraSettings | None) -> Any:
    """The trainable policy: base + the current adapter, or base + a fresh LoRA, or the full base model."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base)
    if adapter is not None:
        from peft import PeftModel

        return PeftModel.from_pretrained(model, adapter, is_trainable=True)
    if lora is not None:
        from peft import LoraConfig, get_peft_model

        return get_peft_model(
            model,
            LoraConfig(
                r=lora.r,
                lora_alpha=lora.alpha,
                lora_dropout=lora.dropout,
                target_modules=lora.target_modules,
                task_type="CAUSAL_LM",
            ),
        )
    return model


def masking_config(model: Any, tokenizer: Any, config: UpdateConfig) -> MaskingConfig:
    """The update's length rule: the configured or the model's context, dropped or (opted in) cut at a turn."""
    limit = config.context_length or model_context_length(getattr(model, "config", None), tokenizer)
    return MaskingConfig(max_length=limit, overlong="truncate_turns" if config.allow_truncation else "drop")


def old_logprobs(model: Any, items: Sequence[tuple[Any, Any, float]], kl: bool) -> tuple[list[Any], list[Any]]:
    """Per item, the log-probabilities of its generated tokens under the current policy and (`kl`, a PEFT model)
    under the reference (adapter disabled), in eval mode (no dropout); the model's mode is restored."""
    import torch

    device = next(model.parameters()).device
    training = model.training
    model.eval()
    old, ref = [], []
    try:
        with torch.no_grad():
            for ids, labels, _ in items:
                ids, labels = ids.to(device), labels.to(device)
                old.append(token_logprobs(model(input_ids=ids).logits, labels)[0])
                if kl and hasattr(model, "disable_adapter"):
                    with model.disable_adapter():
                        ref.append(token_logprobs(model(input_ids=ids).logits, labels)[0])
                else:
                    ref.append(None)
    finally:
        model.train(training)
    return old, ref


def policy_update(
    model: Any, tokenizer: Any, template: str, trajectories: Sequence[Trajectory], config: UpdateConfig
) -> UpdateStats:
    """Tokenize (each under its conditioning, within the context), compute old and reference log-probs, then
    `epochs` passes of clipped policy-gradient steps."""
    import torch

    stats = UpdateStats(trajectories=len(trajectories))
    stats.skipped_zero_advantage = sum(t.advantage == 0.0 for t in trajectories)
    masking = masking_config(model, tokenizer, config)
    stats.context_length = masking.max_length
    masked = mask_sessions(
        [t.messages for t in trajectories],
        [t.tools for t in trajectories],
        tokenizer,
        template,
        masking,
        [t.conditioning for t in trajectories],
    )
    stats.dropped = [(trajectories[i].key, reason) for i, reason in masked.dropped]
    stats.truncated = [trajectories[e.index].key for e in masked.examples if e.truncated]
    items = [
        (torch.tensor([e.input_ids]), torch.tensor([e.labels]), trajectories[e.index].advantage)
        for e in masked.examples
        if trajectories[e.index].advantage != 0.0
    ]
    if not items:
        return stats
    device = next(model.parameters()).device
    old, ref = old_logprobs(model, items, config.kl_coef > 0)
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.learning_rate)
    rng = random.Random(config.seed)
    order = list(range(len(items)))
    clipped = kl_sum = 0.0
    for _ in range(config.epochs):
        rng.shuffle(order)
        for start in range(0, len(order), config.batch_size):
            batch = order[start : start + config.batch_size]
            n_tokens = sum(int((items[i][1][:, 1:] != IGNORE_INDEX).sum()) for i in batch)
            optimizer.zero_grad()
            total = 0.0
            for i in batch:
                ids, labels, adv = items[i]
                ids, labels = ids.to(device), labels.to(device)
                logits = model(input_ids=ids).logits
                loss, info = policy_loss(
                    logits, labels, adv, old_logp=old[i], ref_logp=ref[i], clip=config.clip, kl_coef=config.kl_coef
                )
                (loss / max(n_tokens, 1)).backward()
                total += float(loss.detach()) / max(n_tokens, 1)
                clipped += info["clipped"]
                kl_sum += info["kl"]
                stats.generated_tokens += info["tokens"]
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], config.max_grad_norm)
            optimizer.step()
            stats.steps += 1
            stats.losses.append(total)
    stats.clip_fraction = clipped / max(stats.generated_tokens, 1)
    stats.mean_kl = kl_sum / max(stats.generated_tokens, 1)
    model.eval()
    return stats
