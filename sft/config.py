"""The SFT run configuration (pydantic, from YAML)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from qaflow.config_file import load_config
from sft.masking import MaskingConfig

LRScheduler = Literal[
    "cosine",
    "linear",
    "constant",
    "constant_with_warmup",
    "cosine_with_restarts",
    "polynomial",
    "inverse_sqrt",
]
"""The learning-rate schedules of transformers' `SchedulerType` that need no extra arguments."""


class LoraSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    r: int = Field(16, ge=1, description="LoRA rank.")
    alpha: int = Field(32, ge=1, description="LoRA alpha (scale = alpha / r).")
    dropout: float = Field(0.05, ge=0, lt=1)
    target_modules: str | list[str] = Field("all-linear", description="PEFT target modules; all-linear by default.")


class SFTTrainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="Base model folder (or hub id when reachable).")
    dataset: Path = Field(description="Exported SFT dataset: a `save_to_disk` folder or parquet file/folder.")
    output_dir: Path
    eval_dataset: Path | None = Field(None, description="Validation set; else eval_fraction of the training rows.")
    eval_fraction: float = Field(0.1, ge=0, lt=1)
    chat_template: Path | None = Field(None, description="Training template file with {% generation %} markers.")
    masking: MaskingConfig = Field(
        default_factory=MaskingConfig,
        description="Session length rule: max_length None = the model's context length (config "
        "max_position_embeddings, else the tokenizer's model_max_length); longer sessions are dropped and counted "
        "(overlong: truncate_turns cuts them after the last assistant turn that fits).",
    )
    lora: LoraSettings | None = Field(default_factory=LoraSettings, description="None = full fine-tuning.")
    epochs: float = Field(1.0, gt=0)
    max_steps: int = Field(-1, description="Stop after this many optimizer steps (-1: epochs decide).")
    learning_rate: float = Field(1e-4, gt=0)
    batch_size: int = Field(1, ge=1)
    grad_accum: int = Field(8, ge=1)
    warmup: float = Field(0.03, ge=0, description="Warmup: steps, or a fraction of all steps when below 1.")
    lr_scheduler_type: LRScheduler = Field(
        "cosine", description="Learning-rate schedule after warmup (transformers' names); cosine as in the recipe."
    )
    save_steps: int = Field(50, ge=1, description="Checkpoint (and validation) every N steps.")
    logging_steps: int = Field(10, ge=1)
    bf16: Literal["auto"] | bool = Field("auto", description="auto: bf16 where the hardware supports it.")
    seed: int = 0
    use_cpu: bool = False

    @classmethod
    def load(cls, path: Path) -> SFTTrainConfig:
        """Read a YAML, TOML or JSON config; relative paths are taken from the config file's folder.

        Raises:
            ConfigError: unreadable or invalid, naming the file and every problem.
        """
        return load_config(
            path,
            cls,
            what="SFT config",
            path_keys=("dataset", "output_dir", "eval_dataset", "chat_template"),
            model_keys=("model",),
        )
