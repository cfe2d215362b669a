"""What every pipeline stage shares: `PipelineStep`, the one interface a stage implements (after
datatrove's PipelineStep); `StageContext`, the runner's state a stage may read (the config, the output
and pool folders, the executor, progress, and the folders and kept frames of other stages);
`StageInfo`, the per-stage record the runner saves as info.json; and small helpers used by more than
one stage. Stages never resume themselves: the runner decides which stages run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
from pydantic import BaseModel, Field

from curation.sources import StageResult
from curation.stages.config import PipelineConfig

Progress = Callable[[str], None]


class StageInfo(BaseModel):
    stage: str
    done: bool = False
    skipped: str | None = Field(None, description="Why the stage did nothing (no model, nothing to do...).")
    reused: bool = Field(False, description="Done by an earlier run of the pipeline, and not redone in this one.")
    seconds: float = 0.0
    rows_in: int = 0
    rows_out: int = 0
    unit: str = "tasks"
    by_source: dict[str, int] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)


@dataclass
class StageContext:
    """The runner's state, as the stages see it. `stages` is the runner's stage order (it numbers the
    stage folders)."""

    config: PipelineConfig
    out: Path
    pool_dir: Path
    executor: Any
    say: Progress
    stages: tuple[str, ...]

    def stage_dir(self, stage: str) -> Path:
        return self.out / "stages" / f"{self.stages.index(stage):02d}-{stage}"

    def kept(self, stage: str) -> pl.DataFrame:
        return pl.read_parquet(self.stage_dir(stage) / "kept.parquet")


class PipelineStep(ABC):
    """One stage of the pipeline.

    `run` gets the tasks the previous stages kept and the stage's `StageInfo` (to note `skipped` and
    extra `info`) and returns the stage's result and, for a stage that counts something else than
    tasks, the frame its `rows_out` and `by_source` are counted on (None: the kept frame).
    """

    name: ClassVar[str]
    unit: ClassVar[str] = "tasks"
    """What `rows_in`/`rows_out` count: `tasks` or `rollouts`."""
    feeds_next: ClassVar[bool] = True
    """Whether the stage's kept frame is the next stage's input; if not, the next stage gets this
    stage's input."""

    @abstractmethod
    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, pl.DataFrame | None]:
        """Run the stage on `tasks`."""


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text) or "source"


def rel(path: Any, root: Path) -> str:
    p = Path(path)
    return str(p.resolve().relative_to(root.resolve())) if p.is_absolute() else str(p)


def counts(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))
