"""The pipeline funnel as a Sankey-style picture: one column per stage, a stacked bar per source, and
bands joining what each source keeps from one stage to the next (what leaves is drawn fading out)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def draw_sankey(report: Any, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = [s for s in report.stages if s.unit == "tasks"]
    sources = sorted({src for s in stages for src in s.by_source})
    colours = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(stages)), 4.5))
    width = 0.35
    prev: dict[str, tuple[float, float]] = {}
    for x, stage in enumerate(stages):
        bottom = 0.0
        spans: dict[str, tuple[float, float]] = {}
        for k, src in enumerate(sources):
            n = float(stage.by_source.get(src, 0))
            ax.bar(x, n, width, bottom=bottom, color=colours(k % 10), edgecolor="white", linewidth=0.5,
                   label=src if x == 0 else None)  # fmt: skip
            spans[src] = (bottom, bottom + n)
            if src in prev and x > 0:
                (p0, p1), (c0, c1) = prev[src], (bottom, bottom + n)
                xs = [x - 1 + width / 2, x - width / 2]
                ax.fill_between(xs, [p0, c0], [p0 + (c1 - c0), c1], color=colours(k % 10), alpha=0.25, linewidth=0)
                if p1 - p0 > c1 - c0:
                    ax.fill_between(xs, [p0 + (c1 - c0), c1], [p1, c1], color="grey", alpha=0.12, linewidth=0)
            bottom += n
        ax.text(x, bottom, f"{int(bottom)}", ha="center", va="bottom", fontsize=8)
        prev = spans
    ax.set_xticks(range(len(stages)), [s.stage + (" (skipped)" if s.skipped else "") for s in stages], rotation=30,
                  ha="right", fontsize=8)  # fmt: skip
    ax.set_ylabel("tasks")
    ax.set_title(f"pipeline funnel · {report.name}")
    if sources:
        ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
