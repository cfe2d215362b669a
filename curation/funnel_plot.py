"""The filter funnel as a picture: one horizontal bar per step, what it removed drawn beside what went on."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import polars as pl

KEPT_COLOUR = "#4c72b0"
REMOVED_COLOUR = "#dd8452"


def draw_funnel(funnel: pl.DataFrame, path: Path, *, title: str = "rollout filter funnel") -> Path:
    """Write `funnel` (step, rule, rows_in, removed, rows_out) as a PNG at `path`; the first bar is the input."""
    labels = ["input", *funnel["rule"].to_list()]
    rows_in = int(funnel["rows_in"][0]) if funnel.height else 0
    kept = [rows_in, *funnel["rows_out"].to_list()]
    removed = [0, *funnel["removed"].to_list()]
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.45 * len(labels)))
    y = list(range(len(labels)))
    ax.barh(y, kept, color=KEPT_COLOUR, label="rows left")
    ax.barh(y, removed, left=kept, color=REMOVED_COLOUR, label="removed at this step")
    for i, (k, r) in enumerate(zip(kept, removed, strict=True)):
        text = f"{k:,}" if not r else f"{k:,}  (−{r:,})"
        ax.text(k + r, i, f" {text}", va="center", fontsize=8)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, max(rows_in, 1) * 1.25)
    ax.set_xlabel("rollouts")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
