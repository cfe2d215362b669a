"""One policy update on pre-collected multi-turn trajectories with given advantages (ours: TRL has no
trainer for this).

Token in, token out. A trajectory collected by a provider that logs its samples (`sft.sampled`, joined by
`rl.tokens`) is trained on exactly the ids the policy sampled: the context tokens (prompt, observations,
template glue, prefilled `<think>`) carry no loss, every generated id the sampler did not force (a forced
`</think>`) carries the trajectory's advantage, a turn cut by the length limit ends where it was cut (no
end-of-turn token it did not sample), and the old policy of the ratio is the sampling log-probabilities. The
ratio of the trainer's own log-probabilities to the sampling ones, before the first step, is reported per
update (`ratio_mean`, `ratio_max`: 1 when sampler and trainer agree).

A trajectory without sampled tokens (records from before the sample log, imported or scripted rollouts) is
tokenized with the SFT stage's masking, re-rendered through the chat template, so the tokens of its
assistant turns (reasoning, text, tool calls, end-of-turn tokens) carry the advantage and observation tokens
nothing, with the old log-probabilities recomputed on that text; its assistant turns are counted in
`retokenized_turns` (0 for a round collected with the local policy or an endpoint). The loss is the clipped
policy-gradient objective

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

from rl.tokens import SampledSequence, assistant_turns
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
    tokens: SampledSequence | None = None
    """What the policy sampled (rl.tokens); None: re-rendered from `messages` (counted as retokenized)."""


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
    sampled_turns: int = Field(0, description="Assistant turns trained on the ids the policy sampled.")
    retokenized_turns: int = Field(
        0, description="Assistant turns re-rendered through the chat template (no sampled tokens): should be 0."
    )
    cut_turns: int = Field(0, description="Sampled turns cut by the length limit (trained without an end of turn).")
    ratio_mean: float | None = Field(
        None, description="Mean of pi_trainer / pi_sampler over the sampled trained tokens, before the first step."
    )
    ratio_max: float | None = Field(None, description="Its maximum.")
    samplers: list[str] = Field(default_factory=list, description="The models (adapters) that sampled the tokens.")
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


@dataclass
class TrainingItem:
    """One trajectory as the update trains it: ids, labels (IGNORE_INDEX: no loss), advantage and, for sampled
    tokens, the sampling log-probabilities aligned with the next-token positions (index t predicts id t + 1)."""

    key: str
    input_ids: list[int]
    labels: list[int]
    advantage: float
    sampled_logprobs: list[float] | None = None
    truncated: bool = False


def sampled_item(trajectory: Trajectory, masking: MaskingConfig) -> TrainingItem | str:
    """The trajectory's sampled tokens as a training item, or why it is left out (over the context length)."""
    seq = trajectory.tokens
    assert seq is not None
    end, truncated = len(seq.ids), False
    if masking.max_length is not None and end > masking.max_length:
        if masking.overlong == "drop":
            return f"{end} tokens > max_length {masking.max_length}"
        fitting = [e for e in seq.turn_ends if e <= masking.max_length]
        if not fitting:
            return f"{end} tokens > max_length {masking.max_length} and no assistant turn ends before it"
        end, truncated = fitting[-1], True
    ids = seq.ids[:end]
    labels = [i if t else IGNORE_INDEX for i, t in zip(ids, seq.trained[:end], strict=True)]
    old = [lp if lp is not None else 0.0 for lp in seq.logprobs[1:end]]
    return TrainingItem(trajectory.key, ids, labels, trajectory.advantage, old, truncated)


def training_items(
    tokenizer: Any, template: str, trajectories: Sequence[Trajectory], masking: MaskingConfig, stats: UpdateStats
) -> list[TrainingItem]:
    """What the update trains on, per trajectory with a non-zero advantage: its sampled tokens, else its
    re-rendered session (see the module docstring); left-out and cut ones are recorded in `stats`."""
    items: list[TrainingItem] = []
    rendered = []
    for t in trajectories:
        if t.advantage == 0.0:
            continue
        if t.tokens is None:
            rendered.append(t)
            continue
        item = sampled_item(t, masking)
        if isinstance(item, str):
            stats.dropped.append((t.key, item))
            continue
        items.append(item)
        stats.sampled_turns += t.tokens.turns
        stats.cut_turns += t.tokens.cut_turns
        stats.samplers = list(dict.fromkeys([*stats.samplers, *t.tokens.samplers]))
    if rendered:
        masked = mask_sessions(
            [t.messages for t in rendered],
            [t.tools for t in rendered],
            tokenizer,
            template,
            masking,
            [t.conditioning for t in rendered],
        )
        stats.dropped += [(rendered[i].key, reason) for i, reason in masked.dropped]
        for e in masked.examples:
            t = rendered[e.index]
            items.append(TrainingItem(t.key, e.input_ids, e.labels, t.advantage, None, e.truncated))
            stats.retokenized_turns += assistant_turns(t.messages)
    stats.truncated = [i.key for i in items if i.truncated]
    return items


def old_logprobs(model: Any, items: Sequence[TrainingItem], kl: bool) -> tuple[list[Any], list[Any]]:
    """Per item, the log-probabilities of its generated tokens under the current policy and (`kl`, a PEFT model)
    under the reference (adapter disabled), in eval mode (no dropout); the model's mode is restored."""
    import torch

    device = next(model.parameters()).device
    training = model.training
    model.eval()
    old, ref = [], []
    try:
        with torch.no_grad():
            for item in items:
                ids = torch.tensor([item.input_ids], device=device)
                labels = torch.tensor([item.labels], device=device)
                old.append(token_logprobs(model(input_ids=ids).logits, labels)[0])
                if kl and hasattr(model, "disable_adapter"):
                    with model.disable_adapter():
                        ref.append(token_logprobs(model(input_ids=ids).logits, labels)[0])
                else:
                    ref.append(None)
    finally:
        model.train(training)
    return old, ref


def sampling_ratio(items: Sequence[TrainingItem], trainer: Sequence[Any], stats: UpdateStats) -> list[Any]:
    """The old policy per item: the sampling log-probabilities where there are any (the trainer's own
    otherwise); the ratio trainer / sampler over the sampled trained tokens goes to `stats`."""
    import torch

    old = []
    ratios = []
    for item, own in zip(items, trainer, strict=True):
        if item.sampled_logprobs is None:
            old.append(own)
            continue
        sampled = torch.tensor([item.sampled_logprobs], dtype=own.dtype, device=own.device)
        mask = torch.tensor([item.labels[1:]], device=own.device) != IGNORE_INDEX
        ratios.append(torch.exp(own - sampled)[mask])
        old.append(sampled)
    if ratios:
        joined = torch.cat(ratios)
        if joined.numel():
            stats.ratio_mean, stats.ratio_max = float(joined.mean()), float(joined.max())
    return old


def policy_update(
    model: Any, tokenizer: Any, template: str, trajectories: Sequence[Trajectory], config: UpdateConfig
) -> UpdateStats:
    """Build the training items (sampled tokens, else re-rendered within the context), compute the trainer's own
    and reference log-probs, then `epochs` passes of clipped policy-gradient steps."""
    import torch

    stats = UpdateStats(trajectories=len(trajectories))
    stats.skipped_zero_advantage = sum(t.advantage == 0.0 for t in trajectories)
    masking = masking_config(model, tokenizer, config)
    stats.context_length = masking.max_length
    items = training_items(tokenizer, template, trajectories, masking, stats)
    if not items:
        return stats
    device = next(model.parameters()).device
    own, ref = old_logprobs(model, items, config.kl_coef > 0)
    old = sampling_ratio(items, own, stats)
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.learning_rate)
    rng = random.Random(config.seed)
    order = list(range(len(items)))
    clipped = kl_sum = 0.0
    for _ in range(config.epochs):
        rng.shuffle(order)
        for start in range(0, len(order), config.batch_size):
            batch = order[start : start + config.batch_size]
            n_tokens = sum(sum(label != IGNORE_INDEX for label in items[i].labels[1:]) for i in batch)
            optimizer.zero_grad()
            total = 0.0
            for i in batch:
                ids = torch.tensor([items[i].input_ids], device=device)
                labels = torch.tensor([items[i].labels], device=device)
                logits = model(input_ids=ids).logits
                loss, info = policy_loss(
                    logits,
                    labels,
                    items[i].advantage,
                    old_logp=old[i],
                    ref_logp=ref[i],
                    clip=config.clip,
                    kl_coef=config.kl_coef,
                )
                (loss / max(n_tokens, 1)).backward()
                total += float(loss.detach()) / max(n_tokens, 1)
                clipped += info["clipped"]
                kl_sum += info["kl"]
                stats.generated_tokens += int(info["tokens"])
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], config.max_grad_norm)
            optimizer.step()
            stats.steps += 1
            stats.losses.append(total)
    stats.clip_fraction = clipped / max(stats.generated_tokens, 1)
    stats.mean_kl = kl_sum / max(stats.generated_tokens, 1)
    model.eval()
    return stats
