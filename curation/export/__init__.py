"""`qaflow export`: rollouts and task pools as Hugging Face datasets, each with a dataset card.

`sft` is the main module (SFT rows, and the public names below); `rl` and `tasks` are the other two exports;
`common` is what every export shares (reports, splits, the folder writer, the hub push); `facts` what the ledger
knows about each task version, and the gate; `guard` whether a rollout can become a training row; `sharegpt`
the SFT export's ShareGPT variant; `card` the dataset card; `transforms` template-safe shapes of a session; `limits`
the default caps.

The public names load `sft` on first use, so `curation.export.limits` and `curation.export.transforms` stay
light enough for the CLI to import at startup (the other modules import datasets and pyarrow).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curation.export.sft import (
        ExportError,
        ExportKind,
        ExportReport,
        FunnelStep,
        GateOptions,
        NothingToExport,
        Provenance,
        RemovalReason,
        Removed,
        SplitSpec,
        conform_frame,
        export_rl,
        export_sft,
        export_tasks,
        load_export,
        load_funnel,
        push_export,
        require_hub_token,
        rows_to_task_dir,
        sft_rows,
    )

__all__ = [
    "ExportError",
    "ExportKind",
    "ExportReport",
    "FunnelStep",
    "GateOptions",
    "NothingToExport",
    "Provenance",
    "RemovalReason",
    "Removed",
    "SplitSpec",
    "conform_frame",
    "export_rl",
    "export_sft",
    "export_tasks",
    "load_export",
    "load_funnel",
    "push_export",
    "require_hub_token",
    "rows_to_task_dir",
    "sft_rows",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("curation.export.sft"), name)
    raise AttributeError(f"module 'curation.export' has no attribute {name!r}")
