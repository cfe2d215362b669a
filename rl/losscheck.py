"""Loss check: do the losses we train with give the gradients of the losses we mean?

`rl.gradcheck` compares two implementations of a model on a plain LM loss. This compares the two losses
training uses, on the same model and fixed inputs, against reference implementations written here from
their definitions, token by token in float64 (sharing no code with the trained path):

- **sft**: the masked next-token cross entropy SFT trains on (`sft.train` hands TRL pre-tokenized labels, -100
  outside what the assistant generated, and the trainer takes the model's own loss): the mean over positions t
  whose next label is not -100 of `logsumexp(z_t) - z_t[y_{t+1}]`.
- **rl**: the clipped policy-gradient loss of `rl.update.policy_loss` as `policy_update` uses it (each row's
  summed loss over the batch's generated tokens N): `sum_t [-min(r_t A, clip(r_t, 1 - eps, 1 + eps) A) + beta
  (exp(q_t - l_t) - (q_t - l_t) - 1)] / N` with `l_t` the token's log-probability, `r_t = exp(l_t - o_t)`,
  `o_t` / `q_t` fixed old / reference log-probabilities.

Fixed inputs: `rl.gradcheck.fixed_batch` rows, labels masked on alternating 8-token spans (the first span, the
prompt, always masked), advantages +0.7 and -0.4 by row, clip 0.2, beta 0.05, and old / reference
log-probabilities the model's own plus fixed offsets of up to 0.5 (so some ratios fall outside the clip range
and some do not). Gradients are compared per parameter group as relative L2 (`rl.gradcheck.compare_gradients`):
float32 against the float64 reference, agreement is about 1e-6; the default threshold is 1e-4 (what a change of
the loss moves is orders of magnitude more: dropping the clip or the mask gives 1e-1 to 1).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from rl.gradcheck import GroupDiff, compare_gradients, fixed_batch

IGNORE = -100
SPAN = 8
ADVANTAGES = (0.7, -0.4)
CLIP = 0.2
KL_COEF = 0.05
DEFAULT_THRESHOLD = 1e-4

LossFn = Callable[[Any, "FixedInputs"], Any]
"""(model, inputs) -> a scalar loss tensor to differentiate."""


class FixedInputs:
    """The batch both implementations of a loss see."""

    def __init__(self, input_ids: Any, labels: Any, old: Any, ref: Any):
        self.input_ids, self.labels, self.old, self.ref = input_ids, labels, old, ref


class LossCheck(BaseModel):
    loss: Literal["sft", "rl"]
    ours: float = Field(description="Our loss's value.")
    reference: float = Field(description="The reference's value.")
    overall: float = Field(description="Relative L2 of our gradients against the reference's, all parameters.")
    groups: list[GroupDiff]


class LossCheckReport(BaseModel):
    model: str
    batch_shape: tuple[int, int]
    threshold: float
    checks: list[LossCheck]

    @property
    def flagged(self) -> list[str]:
        return [f"{c.loss}: {g.group}" for c in self.checks for g in c.groups if g.flagged]


def fixed_inputs(model: Any, tokenizer: Any, *, batch_size: int = 2, seq_len: int = 64) -> FixedInputs:
    import torch

    batch = fixed_batch(tokenizer, batch_size=batch_size, seq_len=seq_len)
    ids = batch["input_ids"]
    positions = torch.arange(seq_len)
    generated = (positions // SPAN) % 2 == 1
    labels = torch.where(generated.expand_as(ids), ids, torch.full_like(ids, IGNORE))
    with torch.no_grad():
        own = torch.log_softmax(model(input_ids=ids).logits[:, :-1].float(), -1)
        own = own.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    steps = torch.arange(seq_len - 1, dtype=torch.float32).expand_as(own)
    old = own + 0.5 * torch.sin(steps * 0.7)
    ref = own + 0.3 * torch.cos(steps * 0.3)
    return FixedInputs(ids, labels, old, ref)


def sft_ours(model: Any, inputs: FixedInputs) -> Any:
    """The SFT loss as training computes it: the model's own loss on the masked labels."""
    return model(input_ids=inputs.input_ids, labels=inputs.labels).loss


def rl_ours(model: Any, inputs: FixedInputs) -> Any:
    """The RL loss as `rl.update.policy_update` computes it: per row `policy_loss`, summed, over N."""
    from rl.update import policy_loss

    logits = model(input_ids=inputs.input_ids).logits
    n = int((inputs.labels[:, 1:] != IGNORE).sum())
    total = 0
    for row, advantage in enumerate(ADVANTAGES[: len(inputs.labels)]):
        loss, _ = policy_loss(
            logits[row : row + 1],
            inputs.labels[row : row + 1],
            advantage,
            old_logp=inputs.old[row : row + 1],
            ref_logp=inputs.ref[row : row + 1],
            clip=CLIP,
            kl_coef=KL_COEF,
        )
        total = total + loss
    return total / n


def _targets(inputs: FixedInputs) -> list[tuple[int, int, int]]:
    """(row, position t, label of t + 1) of every position whose next token carries loss."""
    labels = inputs.labels.tolist()
    return [(b, t, row[t + 1]) for b, row in enumerate(labels) for t in range(len(row) - 1) if row[t + 1] != IGNORE]


def sft_reference(model: Any, inputs: FixedInputs) -> Any:
    """Mean over the targets of logsumexp(z_t) - z_t[y], in float64, one position at a time."""
    logits = model(input_ids=inputs.input_ids).logits.double()
    targets = _targets(inputs)
    total = 0
    for b, t, y in targets:
        z = logits[b, t]
        total = total + (z.logsumexp(0) - z[y])
    return total / len(targets)


def rl_reference(model: Any, inputs: FixedInputs) -> Any:
    """The clipped surrogate plus the k3 KL term (module docstring), in float64, one token at a time."""
    logits = model(input_ids=inputs.input_ids).logits.double()
    targets = _targets(inputs)
    total = 0
    for b, t, y in targets:
        z = logits[b, t]
        logp = z[y] - z.logsumexp(0)
        advantage = ADVANTAGES[b]
        ratio = (logp - float(inputs.old[b, t])).exp()
        surrogate = min_tensor(ratio * advantage, ratio.clamp(1 - CLIP, 1 + CLIP) * advantage)
        delta = float(inputs.ref[b, t]) - logp
        total = total - surrogate + KL_COEF * (delta.exp() - delta - 1)
    return total / len(targets)


def min_tensor(a: Any, b: Any) -> Any:
    return a if float(a.detach()) <= float(b.detach()) else b


def _gradients(model: Any, loss_fn: LossFn, inputs: FixedInputs) -> tuple[float, dict[str, Any]]:
    model.zero_grad(set_to_none=True)
    loss = loss_fn(model, inputs)
    loss.backward()
    grads = {
        name: (p.grad if p.grad is not None else p.new_zeros(p.shape)).detach().float().clone()
        for name, p in model.named_parameters()
        if p.requires_grad
    }
    return float(loss.detach()), grads


def losscheck(
    model_path: Path | str,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    seq_len: int = 64,
    batch_size: int = 2,
    sft: LossFn = sft_ours,
    rl: LossFn = rl_ours,
) -> LossCheckReport:
    """Compare the gradients of our SFT and RL losses (`sft`, `rl`: the trained ones by default) with the
    references on the model at `model_path` (float32, eval mode: no dropout) and the fixed inputs."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if batch_size > len(ADVANTAGES):
        raise ValueError(f"batch_size {batch_size}: the fixed inputs have {len(ADVANTAGES)} advantages")
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    inputs = fixed_inputs(model, AutoTokenizer.from_pretrained(model_path), batch_size=batch_size, seq_len=seq_len)
    checks = []
    for name, ours, reference in (("sft", sft, sft_reference), ("rl", rl, rl_reference)):
        loss_ours, grads_ours = _gradients(model, ours, inputs)
        loss_ref, grads_ref = _gradients(model, reference, inputs)
        overall, groups, _ = compare_gradients(grads_ref, grads_ours, threshold)
        checks.append(LossCheck(loss=name, ours=loss_ours, reference=loss_ref, overall=overall, groups=groups))
    return LossCheckReport(
        model=str(model_path), batch_shape=tuple(inputs.input_ids.shape), threshold=threshold, checks=checks
    )
