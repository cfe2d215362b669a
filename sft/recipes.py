"""Training recipe presets for `qaflow sft train --recipe NAME`.

A recipe sets some fields of `SFTTrainConfig`; every field the config file sets, and every explicit CLI flag,
wins over it (explicit beats preset). The presets:

- `pi`, from Physical Intelligence's published fine-tuning recipe: LoRA on every linear layer
  (`all-linear`, rank 16, alpha 32), bf16 where the hardware supports it, else fp32 (`bf16: auto`), 1 epoch.
- `openthoughts`, from the OpenThoughts project's published SFT recipe for its OpenThinker models: full
  fine-tuning (`lora: null`), learning rate 4e-5, cosine schedule, 7 epochs.

Fields a recipe does not name keep their defaults (warmup 0.03, batch 1 x 8 accumulation, ...).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sft.config import LoraSettings, SFTTrainConfig

RecipeName = Literal["pi", "openthoughts"]


class Recipe(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: RecipeName
    source: str = Field(description="Where the recipe comes from (printed by `sft train`).")
    fields: dict[str, Any] = Field(description="SFTTrainConfig fields the recipe sets.")


RECIPES: dict[str, Recipe] = {
    "pi": Recipe(
        name="pi",
        source="Physical Intelligence's published fine-tuning recipe: LoRA on every linear layer, BF16, ~1 epoch",
        fields={"lora": LoraSettings(target_modules="all-linear"), "bf16": "auto", "epochs": 1.0},
    ),
    "openthoughts": Recipe(
        name="openthoughts",
        source="OpenThoughts' published SFT recipe (OpenThinker): full fine-tune, lr 4e-5, cosine, 7 epochs",
        fields={"lora": None, "learning_rate": 4e-5, "lr_scheduler_type": "cosine", "epochs": 7.0},
    ),
}


def apply_recipe(config: SFTTrainConfig, name: str, explicit: dict[str, Any] | None = None) -> SFTTrainConfig:
    """`config` with recipe `name`'s fields where the config did not set them itself (its `model_fields_set`),
    then `explicit` (CLI flags) over everything.

    Raises:
        ValueError: an unknown recipe name.
    """
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; choose from {', '.join(RECIPES)}")
    preset = {k: v for k, v in RECIPES[name].fields.items() if k not in config.model_fields_set}
    return config.model_copy(update={**preset, **(explicit or {})})
