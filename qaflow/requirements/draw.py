"""A requirement graph as a PNG (matplotlib, Agg backend): requirements, artifacts and checks in three columns."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Literal

import networkx as nx

COLUMNS = {"requirement": 0, "artifact": 1, "check": 2}
COLORS = {"requirement": "#f4a261", "artifact": "#8ecae6", "check": "#90be6d"}
EDGE_STYLES: dict[str, Literal["solid", "dashed", "dotted"]] = {
    "produces": "solid",
    "depends_on": "dashed",
    "verified_by": "dotted",
}
UNVERIFIED = "#e63946"


def draw_png(g: nx.DiGraph, unverified: set[str], path: Path, *, title: str | None = None) -> Path:
    """Write the picture of the requirement graph `g` to `path`; `unverified` requirements are outlined in red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    layout = nx.DiGraph()
    for node, data in g.nodes(data=True):
        layout.add_node(node, layer=COLUMNS.get(data.get("kind", "artifact"), 1))
    for column in COLUMNS.values():  # multipartite_layout needs every layer present
        if not any(d["layer"] == column for _, d in layout.nodes(data=True)):
            layout.add_node(f"__empty{column}", layer=column)
    pos = nx.multipartite_layout(layout, subset_key="layer")
    rows = max(1, max(sum(1 for _, d in layout.nodes(data=True) if d["layer"] == c) for c in COLUMNS.values()))
    fig, ax = plt.subplots(figsize=(14, max(4.0, 0.55 * rows + 1.5)))
    nodes = list(g.nodes)
    nx.draw_networkx_nodes(
        g, pos, nodelist=nodes, ax=ax, node_size=500,
        node_color=[COLORS.get(g.nodes[n].get("kind", ""), "#cccccc") for n in nodes],
        edgecolors=[UNVERIFIED if n in unverified else "#333333" for n in nodes],
        linewidths=[2.5 if n in unverified else 0.8 for n in nodes],
    )  # fmt: skip
    for kind, style in EDGE_STYLES.items():
        edges = [(u, v) for u, v, d in g.edges(data=True) if d.get("kind") == kind]
        nx.draw_networkx_edges(g, pos, edgelist=edges, ax=ax, style=style, arrows=True, arrowsize=12,
                               edge_color="#555555", node_size=500)  # fmt: skip
    names = {n: "\n".join(textwrap.wrap(str(g.nodes[n].get("key", n)), 28)[:3]) for n in nodes}
    nx.draw_networkx_labels(g, pos, labels=names, ax=ax, font_size=7)
    legend = [
        Line2D([0], [0], marker="o", color="w", markerfacecolor=c, markersize=10, label=k) for k, c in COLORS.items()
    ] + [Line2D([0], [0], color="#555555", linestyle=s, label=k) for k, s in EDGE_STYLES.items()]
    ax.legend(handles=legend, loc="lower center", ncol=6, fontsize=8, frameon=False, bbox_to_anchor=(0.5, -0.08))
    ax.set_title(title or "requirement graph")
    ax.axis("off")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
