"""`qaflow rl round`: collect -> references -> rewards -> advantages -> one policy update -> checkpoint -> report.

Collection is the rollout stage with the current policy served locally (`qaflow-local/<policy>`),
each task at every configured effort `attempts` times, recorded in the pool's ledger under this
round; or pre-collected rollouts of the round (parquet, or a pool ledger) when `rollouts` is given.
References and advantages only ever use attempts of this round and this policy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from qaflow.agents.harness import HarnessConfig
from qaflow.config_file import load_config
from qaflow.models.frame import read_rollouts, records_to_frame
from qaflow.models.rollout import EFFORT_RANK, Effort
from rl.advantage import AdvantageMode, advantages, score
from rl.reward import RewardConfig
from rl.update import Trajectory, UpdateConfig, UpdateStats, load_policy, policy_update


class RoundConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    policy: str = Field(description="Base model folder.")
    adapter: Path | None = Field(None, description="The current policy's LoRA adapter (the previous round's).")
    round: int = Field(0, ge=0)
    output_dir: Path
    pool: Path | None = Field(None, description="Task pool to collect on with the harness.")
    rollouts: Path | None = Field(None, description="Pre-collected rollouts (parquet file/folder or pool folder).")
    policy_model: str | None = Field(None, description="Only rollouts whose model is this string (pre-collected).")
    efforts: list[Effort] = Field(default_factory=lambda: [Effort.LOW, Effort.MEDIUM, Effort.XHIGH])
    attempts: int = Field(4, ge=1)
    jobs: int = Field(1, ge=1)
    backend: str = "auto"
    harness: HarnessConfig = Field(default_factory=lambda: HarnessConfig(max_turns=20))
    max_new_tokens: int = Field(512, ge=1, description="Per model turn when collecting with the local policy.")
    reward: RewardConfig = Field(default_factory=RewardConfig)
    advantage: AdvantageMode = "mean"
    update: UpdateConfig = Field(default_factory=UpdateConfig)
    chat_template: Path | None = None

    @classmethod
    def load(cls, path: Path) -> RoundConfig:
        """Read a YAML, TOML or JSON config; relative paths are taken from the config file's folder.

        Raises:
            ConfigError: unreadable or invalid, naming the file and every problem.
        """
        return load_config(
            path,
            cls,
            what="round config",
            path_keys=("adapter", "output_dir", "pool", "rollouts", "chat_template"),
            model_keys=("policy",),
        )


class RoundReport(BaseModel):
    round: int
    rollouts: int
    by_effort: list[dict[str, Any]] = Field(default_factory=list)
    update: UpdateStats = Field(default_factory=UpdateStats)
    checkpoint: Path | None = None


def policy_dir(config: RoundConfig) -> str:
    return str(config.adapter) if config.adapter is not None else config.policy


def collect(config: RoundConfig) -> pl.DataFrame:
    """This round's rollouts of the current policy."""
    if config.rollouts is not None:
        source = Path(config.rollouts)
        if (source / ".qaflow" / "ledger.sqlite").is_file():
            from qaflow.pool import Pool

            with Pool.open(source, create=False) as pool:
                frame = records_to_frame(pool.ledger.rollouts())
        else:
            frame = read_rollouts(source)
        frame = frame.filter(pl.col("round") == config.round)
        if config.policy_model is not None:
            frame = frame.filter(pl.col("model") == config.policy_model)
        return frame
    if config.pool is None:
        raise ValueError("a round needs `pool` (collect with the harness) or `rollouts` (pre-collected)")
    from qaflow.llm import LLMConfig
    from qaflow.pool import Pool
    from qaflow.rollouts.job import RolloutJobConfig, run_rollouts
    from sft.local_llm import PROVIDER, register_local_provider

    register_local_provider()
    model = f"{PROVIDER}/{Path(policy_dir(config)).resolve()}"
    job = RolloutJobConfig(
        model=LLMConfig(model=model, max_tokens=config.max_new_tokens, concurrency=1),
        efforts=config.efforts,
        attempts=config.attempts,
        jobs=config.jobs,
        backend=config.backend,
        round=config.round,
        harness=config.harness,
    )
    with Pool.open(config.pool) as pool:
        run_rollouts(pool, job)
        frame = records_to_frame(pool.ledger.rollouts())
    return frame.filter(pl.col("round") == config.round, pl.col("model") == model)


def run_round(config: RoundConfig) -> RoundReport:
    from transformers import AutoTokenizer

    from sft.templates import training_template

    frame = collect(config)
    if frame.is_empty():
        raise ValueError(f"round {config.round}: no rollouts of the current policy to learn from")
    scored = advantages(score(frame, config.reward), config.advantage)
    tokenizer = AutoTokenizer.from_pretrained(policy_dir(config))
    template = training_template(tokenizer, config.chat_template)
    trajectories = [
        Trajectory(messages=row["messages"], tools=row["tools_json"], advantage=row["advantage"], key=row["rollout_id"])
        for row in scored.select("messages", "tools_json", "advantage", "rollout_id").iter_rows(named=True)
    ]
    model = load_policy(config.policy, str(config.adapter) if config.adapter else None, config.update.lora)
    stats = policy_update(model, tokenizer, template, trajectories, config.update)
    out = Path(config.output_dir) / f"round-{config.round}"
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    scored.drop("messages", "usage", "side_calls").write_parquet(out / "scored_rollouts.parquet")
    by_effort = (
        scored.group_by("effort")
        .agg(
            pl.len().alias("attempts"),
            pl.col("success").mean().alias("success_rate"),
            pl.col("thinking_tokens").mean().alias("mean_thinking_tokens"),
            pl.col("reference").mean().alias("mean_reference"),
            pl.col("rl_reward").mean().alias("mean_reward"),
            pl.col("advantage").abs().mean().alias("mean_abs_advantage"),
        )
        .with_columns(pl.col("effort").replace_strict(EFFORT_RANK).alias("_rank"))
        .sort("_rank")
        .drop("_rank")
    )
    report = RoundReport(
        round=config.round, rollouts=scored.height, by_effort=by_effort.to_dicts(), update=stats, checkpoint=out
    )
    (out / "round_report.json").write_text(json.dumps(report.model_dump(mode="json"), indent=2))
    return report
