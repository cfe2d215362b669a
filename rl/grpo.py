"""Single-turn GRPO with TRL's GRPOTrainer and the effort-ordered reward (`rl.reward.effort_reward`).

The dataset has a `prompt` column (conversational messages or text) and, per row:

- `task` (or `task_version`): which task the prompt poses; the prompts of one task at different efforts
  share it;
- `effort`: the reasoning effort the prompt asks for (off, low, medium, xhigh);
- `round` (optional, default 0): the collection round, when one dataset mixes rounds;
- `answer`: the expected final answer, unless a `correct(reply, row)` callable is given.

References come from the same batch, as the method builds them from the same round: each call scores
its completions, then `rl.reference.reference_table` (the one implementation, the same rules as a
multi-turn round) takes, per (task, round), the floored median thinking of each effort's successes in
this batch (at least `min_successes` of them) and gives every completion the shortest reference among
the efforts above its own (`xhigh`: none, correctness only). So the prompts of a task at its efforts must
reach the reward function together: one generation batch (`per_device_train_batch_size *
steps_per_generation` completions per process) holding every effort of a task, e.g. the rows ordered
task by task with `shuffle_dataset=False`. A task whose higher efforts are not in the batch, or have too
few successes there, gets no reference (correctness only). A fixed `reference_thinking_tokens` column is
refused rather than ignored.

Thinking tokens of a completion are the tokens between `<think>` and `</think>`. When the generated ids
are at hand and both markers are single tokens of the tokenizer, they are counted on the ids (exact,
and independent of whether decoding keeps the markers); otherwise the thinking text is found in the
completion (a `reasoning_content`/`reasoning`/`thinking` message field, else the text between the markers)
and tokenized with the tokenizer. A missing `<think>` means thinking started in the prompt; a missing
`</think>` means it never ended (every token after `<think>` is thinking and the reply is empty).

The policy is told its effort, as in collection and in a round's update: `grpo_trainer` renders each row's
conversational `prompt` to text with the policy's own chat template under the row's effort's conditioning
(`condition_prompts`, `sft.conditioning.render_prompt`: the template's `reasoning_effort` or `enable_thinking`
switch, else the system line `Reasoning effort: <effort>.`), so two rows that differ only in effort are
different prompt tokens. A text `prompt` cannot be conditioned and is refused (give messages).

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
from typing import Any, cast

import polars as pl

from qaflow.models.rollout import EFFORT_RANK
from rl.reference import reference_table
from rl.reward import RewardConfig, effort_reward
from sft.conditioning import render_prompt

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")

Correctness = Callable[[str, Mapping[str, Any]], bool]
"""correct(reply, row) -> success; `row` holds the dataset columns of that completion."""

TASK_COLUMNS = ("task_version", "task")
"""The dataset column that names a prompt's task (the first present)."""


def batch_references(
    tasks: Sequence[Any], rounds: Sequence[Any], efforts: Sequence[str], thinking: Sequence[int],
    successes: Sequence[bool], config: RewardConfig,
) -> list[float | None]:  # fmt: skip
    """The reference thinking length of each completion of one batch, from that batch's higher-effort
    successes of the same task and round (`rl.reference.reference_table`); None = no reference."""
    frame = pl.DataFrame(
        {
            "task_version": [str(t) for t in tasks],
            "round": [int(r) for r in rounds],
            "model": ["policy"] * len(tasks),
            "effort": list(efforts),
            "thinking_tokens": [int(t) for t in thinking],
            "exit_status": ["ok"] * len(tasks),
            "full_reward": [bool(s) for s in successes],
        },
        schema={
            "task_version": pl.String, "round": pl.Int64, "model": pl.String, "effort": pl.String,
            "thinking_tokens": pl.Int64, "exit_status": pl.String, "full_reward": pl.Boolean,
        },
    )  # fmt: skip
    table = reference_table(frame, config)
    lookup = {
        (row["task_version"], row["round"], row["effort"]): row["reference"] for row in table.iter_rows(named=True)
    }
    return [lookup[(str(t), int(r), e)] for t, r, e in zip(tasks, rounds, efforts, strict=True)]


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
        self.marker_ids: tuple[int, int] | None = None
        if isinstance(open_id, int) and isinstance(close_id, int) and unk not in (open_id, close_id):
            self.marker_ids = (open_id, close_id)

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
        if "reference_thinking_tokens" in columns:
            raise ValueError(
                "effort_reward computes references from the batch's higher-effort successes of the same task and "
                "round; drop the fixed `reference_thinking_tokens` column"
            )
        task_key = next((k for k in TASK_COLUMNS if k in columns), None)
        if task_key is None or "effort" not in columns:
            raise ValueError("effort_reward needs a `task` (or `task_version`) and an `effort` column")
        efforts = [str(e) for e in columns["effort"]]
        unknown = sorted(set(efforts) - set(EFFORT_RANK))
        if unknown:
            raise ValueError(f"unknown effort(s) {', '.join(unknown)}; choose from {', '.join(EFFORT_RANK)}")
        rounds = columns.get("round") or [0] * n
        thinking: list[int] = []
        successes: list[bool] = []
        for i, completion in enumerate(completions):
            row = {key: values[i] for key, values in columns.items() if isinstance(values, Sequence)}
            ids = completion_ids[i] if completion_ids is not None else None
            tokens, reply = self.thinking_and_reply(completion, ids)
            thinking.append(tokens)
            successes.append(self.is_correct(reply, row))
        references = batch_references(columns[task_key], rounds, efforts, thinking, successes, self.config)
        rewards: list[float] = []
        per_effort: dict[str, list[float]] = {}
        for effort, tokens, success, reference in zip(efforts, thinking, successes, references, strict=True):
            value = effort_reward(success, tokens, reference, self.config)
            rewards.append(value)
            per_effort.setdefault(effort, []).append(value)
        if log_extra is not None:
            log_extra("thinking_tokens", thinking)
            log_extra("reference_thinking_tokens", [math.nan if r is None else r for r in references])
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


def conditioned_prompt(tokenizer: Any, prompt: Any, effort: str) -> str:
    """`prompt` (messages) rendered as the policy is prompted at `effort` (see the module docstring).

    Raises:
        ValueError: `prompt` is text (it cannot carry the effort's conditioning) or the effort is unknown.
    """
    if isinstance(prompt, str):
        raise ValueError(
            "a text `prompt` cannot be conditioned on its effort; give it as messages (role/content) so the "
            "effort is rendered into it (sft.conditioning)"
        )
    if str(effort) not in EFFORT_RANK:
        raise ValueError(f"unknown effort {effort!r}; choose from {', '.join(EFFORT_RANK)}")
    return render_prompt(tokenizer, prompt, str(effort))


def condition_prompts(dataset: Any, tokenizer: Any) -> Any:
    """`dataset` with every conversational `prompt` rendered under its row's `effort` (a text prompt)."""
    return dataset.map(lambda row: {"prompt": conditioned_prompt(tokenizer, row["prompt"], row["effort"])})


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
    """A `trl.GRPOTrainer` with the effort-ordered reward as its one reward function, on `train_dataset` with
    each prompt conditioned on its effort (`condition_prompts`)."""
    from trl import GRPOTrainer

    return GRPOTrainer(
        model=model,
        reward_funcs=[
            cast(
                Callable[..., list[float | None]],
                effort_reward_function(tokenizer, config=reward_config, correct=correct),
            )
        ],
        args=args if args is not None else grpo_config(),
        train_dataset=condition_prompts(train_dataset, tokenizer),
        processing_class=tokenizer,
        **kwargs,
    )
