"""Single-turn GRPO with TRL's GRPOTrainer and the effort-ordered reward (`rl.reward.effort_reward`).

The dataset has a `prompt` column (conversational messages or text) and, per row:

- `effort`: the reasoning effort the prompt asks for (logged per effort; the reward itself depends on
  the reference, which is per effort);
- `reference_thinking_tokens`: the reference length for that effort (null or NaN: none, correctness only);
- `answer`: the expected final answer, unless a `correct(reply, row)` callable is given.

Thinking tokens of a completion are the tokens between `<think>` and `</think>`. When the generated ids
are at hand and both markers are single tokens of the tokenizer, they are counted on the ids (exact,
and independent of whether decoding keeps the markers); otherwise the thinking text is found in the
completion (a `reasoning_content`/`reasoning`/`thinking` message field, else the text between the markers)
and tokenized with the tokenizer. A missing `<think>` means thinking started in the prompt; a missing
`</think>` means it never ended (every token after `<think>` is thinking and the reply is empty).

`grpo_config` sets `scale_rewards="none"`: advantages are reward minus the group mean, not divided by the
group's standard deviation, so a group whose successes differ only a little in length gets a small push,
not a unit-variance one (Dr. GRPO). `loss_type` stays TRL's `"dapo"` (token losses normalised by the
active tokens of the whole accumulated batch, no length bias), `beta=0` (no reference model), and
truncated completions are kept in the loss (`mask_truncated_completions=False`): a completion cut off while
thinking is a failure the reward should teach against.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rl.reward import RewardConfig, effort_reward

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")

Correctness = Callable[[str, Mapping[str, Any]], bool]
"""correct(reply, row) -> success; `row` holds the dataset columns of that completion."""


def split_thinking(text: str) -> tuple[str, str]:
    """(thinking, reply) of a completion text, by the `<think>`/`</think>` markers (see the module docstring)."""
    if THINK_CLOSE in text:
        before, reply = text.split(THINK_CLOSE, 1)
        return before.split(THINK_OPEN, 1)[-1], reply
    if THINK_OPEN in text:
        return text.split(THINK_OPEN, 1)[1], ""
    return "", text


def _normalise(text: str) -> str:
    return " ".join(str(text).split())


def answer_matches(reply: str, answer: Any) -> bool:
    """The reply (whitespace collapsed) is the answer, or its last non-empty line is."""
    expected = _normalise(answer)
    if not expected:
        return False
    if _normalise(reply) == expected:
        return True
    lines = [line for line in reply.splitlines() if line.strip()]
    return bool(lines) and _normalise(lines[-1]) == expected


def _completion_text(completion: Any) -> tuple[str | None, str]:
    """(reasoning field text or None, content text) of a completion: a string or a list of messages."""
    if isinstance(completion, str):
        return None, completion
    reasoning: list[str] = []
    content: list[str] = []
    for message in completion or []:
        if not isinstance(message, Mapping) or message.get("role", "assistant") != "assistant":
            continue
        for key in REASONING_FIELDS:
            if message.get(key):
                reasoning.append(str(message[key]))
                break
        if message.get("content"):
            content.append(str(message["content"]))
    return ("".join(reasoning) if reasoning else None), "".join(content)


class EffortReward:
    """A GRPOTrainer reward function: `f(prompts=, completions=, completion_ids=, **columns) -> list[float]`."""

    __name__ = "effort_reward"

    def __init__(self, tokenizer: Any, config: RewardConfig | None = None, correct: Correctness | None = None):
        self.tokenizer = tokenizer
        self.config = config or RewardConfig()
        self.correct = correct
        open_id = tokenizer.convert_tokens_to_ids(THINK_OPEN) if hasattr(tokenizer, "convert_tokens_to_ids") else None
        close_id = tokenizer.convert_tokens_to_ids(THINK_CLOSE) if hasattr(tokenizer, "convert_tokens_to_ids") else None
        unk = getattr(tokenizer, "unk_token_id", None)
        valid = all(isinstance(i, int) and i != unk for i in (open_id, close_id))
        self.marker_ids: tuple[int, int] | None = (open_id, close_id) if valid else None

    def count_tokens(self, text: str) -> int:
        if not text:
            return 0
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def thinking_and_reply(self, completion: Any, ids: Sequence[int] | None = None) -> tuple[int, str]:
        """Thinking tokens and reply text of one completion."""
        reasoning, content = _completion_text(completion)
        if reasoning is not None:
            thinking_text, reply = reasoning, split_thinking(content)[1]
        else:
            thinking_text, reply = split_thinking(content)
        if ids is not None and self.marker_ids is not None:
            open_id, close_id = self.marker_ids
            ids = list(ids)
            start = ids.index(open_id) + 1 if open_id in ids else 0
            if close_id in ids[start:]:
                end = ids.index(close_id, start)
                if THINK_CLOSE not in content and reasoning is None:
                    reply = self.tokenizer.decode(ids[end + 1 :], skip_special_tokens=True)
                return end - start, reply
            if open_id in ids:
                return len(ids) - start, ""
            return 0, reply
        return self.count_tokens(thinking_text), reply

    def is_correct(self, reply: str, row: Mapping[str, Any]) -> bool:
        if self.correct is not None:
            return bool(self.correct(reply, row))
        if row.get("answer") is None:
            raise ValueError("effort_reward needs an `answer` column or a `correct` callable")
        return answer_matches(reply, row["answer"])

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        completion_ids: Sequence[Sequence[int]] | None = None,
        **columns: Any,
    ) -> list[float]:
        log_metric = columns.pop("log_metric", None)
        log_extra = columns.pop("log_extra", None)
        columns.pop("trainer_state", None)
        columns.pop("environments", None)
        n = len(completions)
        for key, values in columns.items():
            if isinstance(values, Sequence) and not isinstance(values, str) and len(values) != n:
                raise ValueError(f"column {key!r} has {len(values)} values for {n} completions")
        rewards: list[float] = []
        thinking: list[int] = []
        per_effort: dict[str, list[float]] = {}
        for i, completion in enumerate(completions):
            row = {key: values[i] for key, values in columns.items() if isinstance(values, Sequence)}
            ids = completion_ids[i] if completion_ids is not None else None
            tokens, reply = self.thinking_and_reply(completion, ids)
            reference = row.get("reference_thinking_tokens")
            if reference is not None and (isinstance(reference, float) and math.isnan(reference)):
                reference = None
            value = effort_reward(self.is_correct(reply, row), tokens, reference, self.config)
            rewards.append(value)
            thinking.append(tokens)
            per_effort.setdefault(str(row.get("effort", "unknown")), []).append(value)
        if log_extra is not None:
            log_extra("thinking_tokens", thinking)
        if log_metric is not None:
            for effort, values in per_effort.items():
                log_metric(f"effort_reward/{_metric_name(effort)}", sum(values) / len(values))
        return rewards


def _metric_name(effort: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", effort) or "unknown"


def effort_reward_function(
    tokenizer: Any, *, config: RewardConfig | None = None, correct: Correctness | None = None
) -> EffortReward:
    """The effort-ordered reward as a GRPOTrainer reward function (see the module docstring)."""
    return EffortReward(tokenizer, config, correct)


GRPO_DEFAULTS: dict[str, Any] = {
    "scale_rewards": "none",
    "loss_type": "dapo",
    "beta": 0.0,
    "mask_truncated_completions": False,
    "report_to": "none",
}


def grpo_config(**overrides: Any) -> Any:
    """A `trl.GRPOConfig` with GRPO_DEFAULTS (see the module docstring), any field overridden."""
    from trl import GRPOConfig

    return GRPOConfig(**{**GRPO_DEFAULTS, **overrides})


def grpo_trainer(
    model: Any,
    train_dataset: Any,
    *,
    tokenizer: Any,
    args: Any = None,
    reward_config: RewardConfig | None = None,
    correct: Correctness | None = None,
    **kwargs: Any,
) -> Any:
    """A `trl.GRPOTrainer` with the effort-ordered reward as its one reward function."""
    from trl import GRPOTrainer

    return GRPOTrainer(
        model=model,
        reward_funcs=[effort_reward_function(tokenizer, config=reward_config, correct=correct)],
        args=args if args is not None else grpo_config(),
        train_dataset=train_dataset,
        processing_class=tokenizer,
        **kwargs,
    )
