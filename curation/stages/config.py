"""The pipeline's config models: `PipelineConfig` (one YAML, TOML or JSON file) and the sections of it
that are the pipeline's own (`LengthStage`, `DecontamStage`, `RepairStage`, `HardenStage`,
`RolloutStage`, `ExportStage`); the other sections are the matching command's own config model. They
live here, below both the runner and the stages, so that the stages can read them without importing
the runner; `curation.pipeline` re-exports them under the same names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from curation.decontam import BenchmarkSpec, DecontamConfig
from curation.dedup import DedupConfig
from curation.filters import FilterConfig
from curation.mixing import MixConfig
from curation.sources import SourceSpec
from qaflow.audit.runner import AuditConfig
from qaflow.config_file import load_yaml_config, validation_reason
from qaflow.errors import ConfigError
from qaflow.llm import LLMConfig
from qaflow.rollouts.job import RolloutJobConfig


class LengthStage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_chars: int | None = None
    max_chars: int | None = None
    min_words: int | None = None
    max_words: int | None = None


class DecontamStage(BaseModel):
    """`qaflow curate decontam`'s benchmarks and settings, by the same names."""

    model_config = ConfigDict(extra="forbid")
    benchmarks: list[BenchmarkSpec]
    config: DecontamConfig = Field(default_factory=DecontamConfig)


class RepairStage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_rounds: int = Field(2, ge=1)


class HardenStage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    process_chain: bool = True


class RolloutStage(RolloutJobConfig):
    """`qaflow rollout`'s settings (`RolloutJobConfig`, same names and defaults). The model is the
    pipeline's `model`; backend, offline and network follow `audit:` unless set here; only accepted
    tasks are rolled out unless `statuses` says otherwise."""

    model: LLMConfig | None = None  # type: ignore[assignment]  # set from the pipeline's `model` before the stage runs


class ExportStage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tasks: bool = True
    sft: bool = True
    rl: bool = True
    include_candidates: bool = Field(
        False,
        description="Also put the hardened `candidate` versions (never accepted) in the tasks dataset; by default it "
        "holds accepted versions only (`pipeline run --include-candidates` sets it).",
    )
    test_fraction: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="Share of tasks held out as the test split when the mix made no eval split (by task).",
    )
    split_seed: int = 0
    allow_harness_holes: bool = Field(
        False,
        description="Export accepted versions a proven harness hole reaches as accepted (else they are candidates: "
        "`qaflow.harden.gate.is_clean`)",
    )


class PipelineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    output_dir: Path
    model: str | None = Field(None, description="litellm model for augment and rollout; None skips those stages.")
    sources: list[SourceSpec]
    dedup: DedupConfig | None = Field(default_factory=DedupConfig)
    decontam: DecontamStage | None = None
    length: LengthStage | None = None
    mix: MixConfig | None = None
    augment: list[str] | None = Field(None, description="Augmentation styles (needs a model).")
    audit: AuditConfig = Field(
        default_factory=AuditConfig, description="As `qaflow audit` (same names, same defaults)."
    )
    repair: RepairStage | None = Field(default_factory=RepairStage)
    harden: HardenStage | None = Field(default_factory=HardenStage)
    rollout: RolloutStage | None = Field(default_factory=RolloutStage)
    rollout_filter: FilterConfig | None = Field(
        default_factory=FilterConfig, description="As `qaflow filter --config`."
    )
    export: ExportStage = Field(default_factory=ExportStage)

    @classmethod
    def load(cls, path: Path) -> PipelineConfig:
        """Read a YAML, TOML or JSON config; relative paths (output_dir, source paths) are taken from the
        config file's folder.

        Raises:
            ConfigError: unreadable or invalid, naming the file and every problem.
        """
        data = load_yaml_config(path, what="pipeline config")
        base = Path(path).resolve().parent

        def absolute(value: Any) -> Any:
            return str(base / value) if isinstance(value, str) and not Path(value).is_absolute() else value

        data["output_dir"] = absolute(data.get("output_dir", "out"))
        for source in data.get("sources") or []:
            for key in ("path", "out_dir"):
                if key in source:
                    source[key] = absolute(source[key])
        for bench in (data.get("decontam") or {}).get("benchmarks") or []:
            if "path" in bench:
                bench["path"] = absolute(bench["path"])
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ConfigError(path, f"invalid pipeline config: {validation_reason(e)}") from e
