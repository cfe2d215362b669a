"""`qaflow rl round`: collect -> references -> rewards -> advantages -> one policy update -> checkpoint -> report.

Collection is the rollout stage with the current policy served locally (`qaflow-local/<policy>`), or by an
inference server (`endpoint`: `qaflow-endpoint/<served name>`, the start adapter loaded into it first), each
task at every configured effort `attempts` times, recorded in the pool's ledger under this round; or
pre-collected rollouts of the round (parquet, or a pool ledger) when `rollouts` is given. Both providers log
every sampled turn to `round-N/samples.jsonl`, and the update trains on those tokens (`rl.tokens`, `rl.update`).
References and advantages only ever use attempts of this round and this policy.

Collection samples (`temperature`, default 1.0; greedy only at an explicit 0) with a per-attempt seed derived
from `seed` and the attempt's rollout id, at each effort's thinking budget (`sft.local_llm`, overridable per
effort with `thinking_budgets`); a setting the policy cannot honour fails before any attempt runs. Only
tasks whose current version has one of `statuses` are collected on (default: accepted; a pool ledger given
as `rollouts` is filtered the same way, a parquet source is taken as is). Only correctly graded attempts
(`rl.graded`) are scored; the others are counted in the report by reason.

Each effort's session is rendered under its conditioning (`sft.conditioning`: the template's own switch or
the system line), in collection and in the update alike; the report lists it per effort. Sessions longer
than the model's context are left out of the update and counted (`dropped` per effort), or cut at a turn
boundary with `update.allow_truncation` (`truncated`).

A round that cannot learn (no group has reward variance, so every advantage is 0, or every session with a
non-zero advantage was left out) reports `updated: false` with the reason and writes no adapter; the next
round, given this round's folder as `adapter`, continues from the adapter this round started from (the last
real one, named in its report as `start_adapter`).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from qaflow.agents.harness import HarnessConfig
from qaflow.config_file import load_config
from qaflow.models.frame import read_rollouts, records_to_frame
from qaflow.models.records import VersionStatus
from qaflow.models.rollout import EFFORT_RANK, Effort
from rl.advantage import AdvantageMode, advantages, score
from rl.graded import exclusion_counts, split_graded, timed_out_passed_expr, zero_hacks
from rl.reward import RewardConfig
from rl.tokens import SampledSequence, sequences
from rl.update import Trajectory, UpdateConfig, UpdateStats, load_policy, policy_update
from sft.conditioning import Conditioning, effort_conditioning, own_template
from sft.sampled import SAMPLE_LOG_PARAM, SampleLog

ADAPTER_FILE = "adapter_config.json"
REPORT_FILE = "round_report.json"
SAMPLE_LOG_FILE = "samples.jsonl"


class EndpointSettings(BaseModel):
    """Collection through an inference server (`sft.endpoint_llm`): an OpenAI-compatible `/v1/completions` that takes
    token-id prompts and returns token ids and log-probabilities (vLLM; `sft.completions_server` on a CPU)."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="The server's base URL (without /v1), e.g. http://127.0.0.1:8000.")
    model: str = Field(description="The served name of the base model (`policy`).")
    concurrency: int = Field(8, ge=1, description="Requests in flight at once (as the server allows).")
    load_adapters: bool = Field(
        True,
        description="Load the round's start adapter into the server (`POST /v1/load_lora_adapter`) and sample with "
        "it; false: the server must already serve it under the adapter folder's name (a restart with the adapter).",
    )


class RoundConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    policy: str = Field(description="Base model folder.")
    adapter: Path | None = Field(
        None,
        description="The current policy's LoRA adapter: the previous round's folder (a round that made no update "
        "continues from the adapter it started from); None: the base model with a fresh LoRA.",
    )
    round: int = Field(0, ge=0)
    output_dir: Path
    pool: Path | None = Field(None, description="Task pool to collect on with the harness.")
    rollouts: Path | None = Field(None, description="Pre-collected rollouts (parquet file/folder or pool folder).")
    policy_model: str | None = Field(
        None,
        description="Only rollouts whose model is this string (pre-collected); required when they mix models.",
    )
    efforts: list[Effort] = Field(default_factory=lambda: [Effort.LOW, Effort.MEDIUM, Effort.XHIGH])
    attempts: int = Field(4, ge=1)
    jobs: int = Field(1, ge=1)
    backend: str = "auto"
    harness: HarnessConfig = Field(default_factory=lambda: HarnessConfig(max_turns=20))
    max_new_tokens: int = Field(
        512, ge=1, description="Answer tokens per model turn (after thinking) when collecting with the local policy."
    )
    temperature: float = Field(1.0, ge=0, description="Sampling temperature of collection; 0 = greedy (all equal).")
    seed: int = Field(0, description="Base of the per-attempt sampling seeds (unless harness.seed is set).")
    thinking_budgets: dict[Effort, int] = Field(
        default_factory=dict,
        description="Thinking-token budget per effort for the local policy, over sft.local_llm.DEFAULT_BUDGETS "
        "(0 = thinking off).",
    )
    statuses: list[VersionStatus] | None = Field(
        default_factory=lambda: [VersionStatus.ACCEPTED],
        description="Collect only on tasks whose current version has one of these statuses; None = every valid task.",
    )
    reward: RewardConfig = Field(default_factory=RewardConfig)
    advantage: AdvantageMode = "mean"
    update: UpdateConfig = Field(default_factory=UpdateConfig)
    chat_template: Path | None = None
    endpoint: EndpointSettings | None = Field(
        None, description="Collect through this inference server instead of the in-process local policy."
    )

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
    rollouts: int = Field(description="Correctly graded attempts: the ones scored and learned from.")
    collected: int = Field(0, description="Attempts of this round and policy, graded or not.")
    excluded: dict[str, int] = Field(
        default_factory=dict, description="Attempts left out, by reason (rl.graded.EXCLUSION_REASONS)."
    )
    hacked: int = Field(0, description="Rewarded attempts that changed a trust edge of their verifier, scored 0.")
    timed_out_passed: int = Field(
        0, description="Graded attempts that hit a limit and that the verifier passed: failures (rl.graded)."
    )
    by_effort: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Per effort: attempts, rates, rewards, `timed_out_passed`, `conditioning` (what the policy was "
        "conditioned on), `truncated` and `dropped` (sessions cut or left out of the update for the context length).",
    )
    update: UpdateStats = Field(
        default_factory=UpdateStats,
        description="The update: steps, losses, and token in/token out (`sampled_turns`, `retokenized_turns` (0 for "
        "a round collected here), `cut_turns`, `ratio_mean`/`ratio_max`: trainer over sampler).",
    )
    retokenized: dict[str, int] = Field(
        default_factory=dict, description="Rollouts without sampled tokens (re-rendered for the update), by reason."
    )
    sample_log_errors: list[str] = Field(default_factory=list, description="Unreadable lines of the sample logs.")
    updated: bool = Field(True, description="Whether the policy changed (an adapter was written).")
    reason: str | None = Field(None, description="Why the round made no update.")
    start_adapter: Path | None = Field(None, description="The adapter the round started from; None: the base model.")
    start_note: str = Field("", description="How start_adapter was found.")
    checkpoint: Path | None = Field(None, description="The adapter this round wrote; None when it made no update.")
    round_dir: Path | None = Field(None, description="The round's folder (report and scored rollouts).")

    @property
    def next_adapter(self) -> Path | None:
        """What the next round continues from: this round's adapter, else the one it started from."""
        return self.checkpoint if self.updated else self.start_adapter


def start_adapter(config: RoundConfig) -> tuple[Path | None, str]:
    """The adapter this round starts from and how it was found: `adapter` itself, or, when that is the folder
    of a round that made no update, the adapter that round started from.

    Raises:
        ValueError: `adapter` is neither an adapter nor the folder of a round that made no update.
    """
    if config.adapter is None:
        return None, "the base model with a fresh LoRA (no adapter given)"
    folder = Path(config.adapter)
    report = folder / REPORT_FILE
    if report.is_file():  # the round's report decides, over adapter files an earlier run may have left
        data = json.loads(report.read_text())
        if not data.get("updated", True):
            previous = data.get("start_adapter")
            what = f"{previous}" if previous else "the base model with a fresh LoRA"
            return (Path(previous) if previous else None), (
                f"{what}, the last real adapter ({folder} made no update: {data.get('reason')})"
            )
    if (folder / ADAPTER_FILE).is_file():
        return folder, f"the adapter {folder}"
    raise ValueError(f"adapter {folder}: no {ADAPTER_FILE} and not the folder of a round that made no update")


def policy_dir(config: RoundConfig) -> str:
    adapter, _ = start_adapter(config)
    return str(adapter) if adapter is not None else config.policy


def effort_conditionings(config: RoundConfig, template: str | None) -> dict[Effort, Conditioning]:
    """Per effort, what the local policy is conditioned on (as `sft.local_llm` renders it at the round's budgets)."""
    harness = collection_harness(config)
    model = f"{collection_provider(config)}/policy"
    return {
        e: effort_conditioning(template, e, thinking=bool(harness.efforts.kwargs(model, e).get("enable_thinking")))
        for e in Effort
    }


def no_update_reason(stats: UpdateStats, groups: int) -> str | None:
    """Why the update changed nothing, or None when it made steps."""
    if stats.steps > 0:
        return None
    if stats.skipped_zero_advantage == stats.trajectories:
        return f"no group has reward variance: every advantage is 0 ({groups} groups)"
    return (
        f"every session with a non-zero advantage was left out of the update ({len(stats.dropped)} dropped, "
        f"context {stats.context_length})"
    )


def endpoint_llm(config: RoundConfig, folder: Path) -> Any:
    """The LLM config of collection through `config.endpoint`, the round's start adapter loaded into the server
    first (its name: `qaflow-<folder name>-<hash of its path>`).

    Raises:
        EndpointError: the server refused the adapter.
    """
    import hashlib

    from qaflow.llm import LLMConfig
    from sft.endpoint_llm import PROVIDER as ENDPOINT
    from sft.endpoint_llm import TOKENIZER_PARAM, load_adapter, register_endpoint_provider

    endpoint = config.endpoint
    assert endpoint is not None
    register_endpoint_provider()
    adapter, _ = start_adapter(config)
    served, adapter_name = endpoint.model, None
    if adapter is not None:
        path = Path(adapter).resolve()
        adapter_name = f"qaflow-{path.name}-{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"
        if endpoint.load_adapters:
            load_adapter(endpoint.url, adapter_name, path)
        served = adapter_name
    return LLMConfig(
        model=f"{ENDPOINT}/{served}",
        api_base=endpoint.url,
        max_tokens=config.max_new_tokens,
        temperature=config.temperature,
        concurrency=endpoint.concurrency,
        extra={
            SAMPLE_LOG_PARAM: str(sample_log_path(config)),
            TOKENIZER_PARAM: str(folder),
            "served_base": endpoint.model,
            **({"adapter": adapter_name} if adapter_name else {}),
        },
    )


def collection_provider(config: RoundConfig) -> str:
    """The litellm provider collection goes through: the in-process local policy or the endpoint."""
    from sft.endpoint_llm import PROVIDER as ENDPOINT
    from sft.local_llm import PROVIDER as LOCAL

    return LOCAL if config.endpoint is None else ENDPOINT


def collection_harness(config: RoundConfig) -> HarnessConfig:
    """The round's harness config: the local effort table (for the local or the endpoint provider) and the
    sampling seed filled in."""
    from sft.local_llm import with_local_efforts

    harness = with_local_efforts(config.harness, config.thinking_budgets, collection_provider(config))
    if harness.seed is None:
        harness = harness.model_copy(update={"seed": config.seed})
    return harness


def collect(config: RoundConfig) -> pl.DataFrame:
    """This round's rollouts of the current policy.

    Raises:
        ValueError: no source, or the policy cannot honour one of the efforts (before any attempt).
        LLMError: the provider refuses an effort's settings (before any attempt).
    """
    if config.rollouts is not None:
        source = Path(config.rollouts)
        if (source / ".qaflow" / "ledger.sqlite").is_file():
            from qaflow.pool import Pool

            with Pool.open(source, create=False) as pool:
                frame = records_to_frame(pool.ledger.rollouts())
                if config.statuses is not None:
                    current = [r.version for r in pool.list() if r.status in config.statuses]
                    frame = frame.filter(pl.col("task_version").is_in(current))
        else:
            frame = read_rollouts(source)
        frame = frame.filter(pl.col("round") == config.round)
        if config.policy_model is not None:
            return frame.filter(pl.col("model") == config.policy_model)
        models = sorted(frame["model"].unique().to_list())
        if len(models) > 1:
            raise ValueError(
                f"{source}: the round's rollouts mix {len(models)} models ({', '.join(models)}); set policy_model "
                "to the one being trained"
            )
        return frame
    if config.pool is None:
        raise ValueError("a round needs `pool` (collect with the harness) or `rollouts` (pre-collected)")
    from qaflow.agents.effort import check_efforts
    from qaflow.llm import LLMConfig
    from qaflow.pool import Pool
    from qaflow.rollouts.job import RolloutJobConfig, run_rollouts
    from sft.local_llm import PROVIDER, check_local_efforts, register_local_provider

    folder = Path(policy_dir(config)).resolve()
    harness = collection_harness(config)
    if config.endpoint is None:
        register_local_provider()
        model = f"{PROVIDER}/{folder}"
        llm = LLMConfig(
            model=model,
            max_tokens=config.max_new_tokens,
            temperature=config.temperature,
            concurrency=1,
            extra={SAMPLE_LOG_PARAM: str(sample_log_path(config))},
        )
    else:
        llm = endpoint_llm(config, folder)
        model = llm.model
    check_efforts(llm, config.efforts, harness.efforts, seed=harness.seed is not None)
    check_local_efforts(folder, config.efforts, harness, collection_provider(config))
    job = RolloutJobConfig(
        model=llm,
        efforts=config.efforts,
        attempts=config.attempts,
        jobs=config.jobs,
        backend=config.backend,
        round=config.round,
        harness=harness,
        statuses=config.statuses,
    )
    with Pool.open(config.pool) as pool:
        run_rollouts(pool, job)
        frame = records_to_frame(pool.ledger.rollouts())
    return frame.filter(pl.col("round") == config.round, pl.col("model") == model)


def sample_log_path(config: RoundConfig) -> Path:
    """Where this round's collection logs the tokens it samples (`sft.sampled`)."""
    return (Path(config.output_dir) / f"round-{config.round}" / SAMPLE_LOG_FILE).resolve()


def sampled_sequences(frame: pl.DataFrame) -> tuple[dict[str, SampledSequence | str], list[str]]:
    """Per rollout its sampled tokens (or why it has none), from the sample logs its records name in
    `meta.sampling.sample_log`; and the logs' unreadable lines."""
    rows = frame.select("rollout_id", "messages", "meta_json").to_dicts()
    paths = sorted(
        {
            str(p)
            for r in rows
            if (p := (json.loads(r["meta_json"] or "{}").get("sampling") or {}).get(SAMPLE_LOG_PARAM))
        }
    )
    log = SampleLog.read(paths)
    return sequences(rows, log), log.bad_lines


def run_round(config: RoundConfig) -> RoundReport:
    from transformers import AutoTokenizer

    from rl.reference import GROUP
    from sft.templates import training_template

    adapter, note = start_adapter(config)
    collected = collect(config)
    if collected.is_empty():
        raise ValueError(f"round {config.round}: no rollouts of the current policy to learn from")
    frame, left_out = split_graded(collected)
    excluded = exclusion_counts(left_out)
    if frame.is_empty():
        reasons = ", ".join(f"{n} {r}" for r, n in excluded.items() if n)
        raise ValueError(f"round {config.round}: no correctly graded attempt to learn from ({reasons})")
    frame, hacked = zero_hacks(frame)
    scored = advantages(score(frame, config.reward), config.advantage)
    tokenizer = AutoTokenizer.from_pretrained(policy_dir(config))
    template = training_template(tokenizer, config.chat_template)
    conditionings = effort_conditionings(config, own_template(tokenizer, template))
    tokens, bad_lines = sampled_sequences(scored)
    trajectories = [
        Trajectory(
            messages=row["messages"],
            tools=row["tools_json"],
            advantage=row["advantage"],
            key=row["rollout_id"],
            conditioning=conditionings[Effort(row["effort"])],
            tokens=seq if isinstance(seq := tokens[row["rollout_id"]], SampledSequence) else None,
        )
        for row in scored.select("messages", "tools_json", "advantage", "rollout_id", "effort").iter_rows(named=True)
    ]
    retokenized = Counter(r for r in tokens.values() if isinstance(r, str))
    groups = scored.select([*GROUP, "effort"]).unique().height
    stats = UpdateStats(trajectories=len(trajectories), skipped_zero_advantage=len(trajectories))
    model = None
    if any(t.advantage != 0.0 for t in trajectories):
        model = load_policy(config.policy, str(adapter) if adapter else None, config.update.lora)
        stats = policy_update(model, tokenizer, template, trajectories, config.update)
    reason = no_update_reason(stats, groups)
    out = Path(config.output_dir) / f"round-{config.round}"
    out.mkdir(parents=True, exist_ok=True)
    if reason is None and model is not None:
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
    scored.drop("messages", "usage", "side_calls").write_parquet(out / "scored_rollouts.parquet")
    report = RoundReport(
        round=config.round,
        rollouts=scored.height,
        collected=collected.height,
        excluded=excluded,
        hacked=hacked,
        timed_out_passed=scored.filter(timed_out_passed_expr()).height,
        by_effort=effort_rows(scored, left_out, stats, conditionings),
        update=stats,
        retokenized=dict(retokenized),
        sample_log_errors=bad_lines,
        updated=reason is None,
        reason=reason,
        start_adapter=adapter,
        start_note=note,
        checkpoint=out if reason is None else None,
        round_dir=out,
    )
    (out / REPORT_FILE).write_text(json.dumps(report.model_dump(mode="json"), indent=2))
    return report


def effort_rows(
    scored: pl.DataFrame, left_out: pl.DataFrame, stats: UpdateStats, conditionings: dict[Effort, Conditioning]
) -> list[dict[str, Any]]:
    """The report's per-effort rows (see RoundReport.by_effort)."""
    by_effort = (
        scored.group_by("effort")
        .agg(
            pl.len().alias("attempts"),
            pl.col("success").mean().alias("success_rate"),
            pl.col("thinking_tokens").mean().alias("mean_thinking_tokens"),
            pl.col("reference").mean().alias("mean_reference"),
            pl.col("rl_reward").mean().alias("mean_reward"),
            pl.col("advantage").abs().mean().alias("mean_abs_advantage"),
            pl.col("rl_reward").n_unique().alias("distinct_rewards"),
            timed_out_passed_expr().sum().alias("timed_out_passed"),
        )
        .with_columns(pl.col("effort").replace_strict(EFFORT_RANK).alias("_rank"))
        .sort("_rank")
        .drop("_rank")
    )
    effort_of = dict(zip(scored["rollout_id"], scored["effort"], strict=True))
    dropped = [effort_of.get(key) for key, _ in stats.dropped]
    truncated = [effort_of.get(key) for key in stats.truncated]
    left_by_effort = {e: exclusion_counts(g) for (e,), g in left_out.group_by("effort")}
    rows = []
    for row in by_effort.to_dicts():
        effort = row["effort"]
        conditioning = conditionings.get(Effort(effort))
        rows.append(
            {
                **row,
                "excluded": sum(left_by_effort.get(effort, {}).values()),
                "conditioning": conditioning.model_dump(exclude_defaults=True) if conditioning else {},
                "truncated": truncated.count(effort),
                "dropped": dropped.count(effort),
            }
        )
    return rows
