"""Writes inspect_pool.ipynb and rollouts.ipynb from the cells below (edit here, then run this file).

Both notebooks read `QAFLOW_POOL` (default: ../tasks_repo) and never write to it. If the pool has never
been audited, inspect_pool audits a scratch copy of it (bwrap when no Docker daemon answers); if it has
no rollouts, rollouts replays the reference solutions of its accepted tasks through the harness
(`openai/replay-oracle`, a scripted policy, not a model) in a scratch copy, so there is something real to
look at and nothing synthetic reaches the pool's ledger.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

SETUP = """\
import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl

POOL = Path(os.environ.get("QAFLOW_POOL", "../tasks_repo")).resolve()
BACKEND = os.environ.get("QAFLOW_BACKEND", "auto")
pl.Config.set_tbl_rows(40)
print(POOL)


def scratch_copy(pool: Path) -> Path:
    \"\"\"A copy of `pool` (task folders and ledger, no rollout shards) in a temporary folder: what the
    notebook runs goes there, never into the pool it inspects.\"\"\"
    import shutil
    import tempfile

    copy = Path(tempfile.mkdtemp(prefix="qaflow-notebook-")) / pool.name
    shutil.copytree(pool, copy, symlinks=True, ignore=shutil.ignore_patterns("rollouts"))
    return copy"""

INSPECT = [
    new_markdown_cell(
        "# Inspect a pool\n\nStatus counts, findings by code and source, probe timings, and one task's "
        "evidence, straight from the pool's ledger (`POOL/.qaflow/ledger.sqlite`) with polars. Set "
        "`QAFLOW_POOL` to look at another pool."
    ),
    new_code_cell(SETUP),
    new_code_cell(
        """\
from qaflow.pool import Pool

def audited(root: Path) -> bool:
    if not (root / ".qaflow" / "ledger.sqlite").is_file():
        return False
    with Pool.open(root, create=False) as p:
        return p.frame("results").height > 0

if not audited(POOL):  # audit a scratch copy once, out of the box; the pool itself is not written
    POOL = scratch_copy(POOL)
    print("not audited yet: auditing a scratch copy at", POOL)
    qaflow = Path(sys.executable).with_name("qaflow")
    args = [str(qaflow), "audit", str(POOL), "--backend", BACKEND, "--repeats", "2", "--max-mutants", "4"]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"audit failed ({done.returncode}):\\n{done.stderr[-3000:]}")
pool = Pool.open(POOL, create=False)
tasks, versions = pool.frame("tasks"), pool.frame("task_versions")
results, findings = pool.frame("results"), pool.frame("findings")
print(f"{tasks.height} tasks, {versions.height} versions, {results.height} results, {findings.height} findings")"""
    ),
    new_markdown_cell("## Status of the current versions"),
    new_code_cell(
        """\
status = tasks.group_by("status").len().sort("len", descending=True)
fig, ax = plt.subplots(figsize=(6, 3))
ax.bar(status["status"].to_list(), status["len"].to_list(), color="tab:blue")
ax.set_title("current task versions by status")
plt.show()
status"""
    ),
    new_markdown_cell("## Findings by code and source (current versions, errors and warnings)"),
    new_code_cell(
        """\
current = findings.join(tasks.select("version", "name", "source"), left_on="task_version", right_on="version")
by_code = current.group_by("code", "severity").agg(pl.col("name").n_unique().alias("tasks"))
by_code = by_code.sort("tasks", descending=True)
fig, ax = plt.subplots(figsize=(7, 3))
ax.barh(by_code["code"].to_list(), by_code["tasks"].to_list(), color="tab:red")
ax.set_xlabel("tasks")
ax.set_title("findings on current versions")
plt.show()
current.group_by("source", "code").len().sort("source", "len", descending=[False, True])"""
    ),
    new_markdown_cell("## Probe timings\n\nSeconds per trial by probe family (nop, oracle, mutant, tamper, ...)."),
    new_code_cell(
        """\
timings = results.with_columns(pl.col("probe").str.split(":").list.first().alias("family")).group_by("family").agg(
    pl.len().alias("trials"),
    pl.col("duration_s").median().alias("median_s"),
    pl.col("duration_s").quantile(0.9).alias("p90_s"),
    pl.col("duration_s").sum().alias("total_s"),
).sort("total_s", descending=True)
fig, ax = plt.subplots(figsize=(6, 3))
ax.bar(timings["family"].to_list(), timings["median_s"].to_list(), color="tab:green")
ax.set_ylabel("median seconds per trial")
plt.show()
timings"""
    ),
    new_markdown_cell("## One task, with its evidence\n\nThe first task that needs repair (or set `TASK`)."),
    new_code_cell(
        """\
needing = tasks.filter(pl.col("status") == "needs_repair")["name"].to_list()
TASK = os.environ.get("QAFLOW_TASK") or (needing or tasks["name"].to_list())[0]
row = tasks.filter(pl.col("name") == TASK).row(0, named=True)
print(TASK, row["status"], row["version"][:12], row["path"])
for f in current.filter(pl.col("name") == TASK).iter_rows(named=True):
    print(f"- {f['code']} ({f['severity']}): {f['message']}")
    print(json.dumps(json.loads(f["evidence_json"]), indent=2)[:1500])
results.filter(pl.col("task_version") == row["version"]).select("probe", "attempt", "status", "reward", "duration_s")"""
    ),
]

ROLLOUTS = [
    new_markdown_cell(
        "# Rollouts\n\nDifficulty bands, pass@k, the effort-order report and the rollout filter funnel for the "
        "rollouts recorded in a pool's ledger. With no rollouts yet, the reference solutions of the accepted "
        "tasks are replayed through the harness by a scripted policy (`openai/replay-oracle`, not a model) in "
        "real sandboxes, so the figures below come from real trials."
    ),
    new_code_cell(SETUP),
    new_code_cell(
        """\
from qaflow.pool import Pool
from qaflow.models.frame import records_to_frame
from qaflow.rollouts.replay import replay_pool

pool = Pool.open(POOL, create=False) if (POOL / ".qaflow" / "ledger.sqlite").is_file() else None
if pool is None or not pool.ledger.rollout_ids():  # replay in a scratch copy: the pool itself is not written
    if pool is not None:
        pool.close()
    POOL = scratch_copy(POOL)
    print("no rollouts yet: replaying the reference solutions in a scratch copy at", POOL)
    pool = Pool.open(POOL)
    if not pool.list():
        pool.scan()
    ran = replay_pool(pool, attempts=2, backend=BACKEND)
    print(f"replayed {ran} attempts")
frame = records_to_frame(pool.ledger.rollouts())
print(frame.height, "rollouts;", frame["model"].unique().to_list())
NOTHING = None
if frame.height == 0:
    accepted = sum(1 for row in pool.list() if row.status.value == "accepted")
    NOTHING = (
        f"nothing to plot: no rollouts, and the replay runs only accepted tasks ({accepted} here); "
        "run `qaflow audit POOL` first, or roll out a model with `qaflow rollout run POOL --model M`"
    )
    print(NOTHING)"""
    ),
    new_markdown_cell("## Pass rate, pass@k and difficulty bands"),
    new_code_cell(
        """\
from IPython.display import display
from qaflow.rollouts.stats import pass_table, task_bands

if NOTHING:
    print(NOTHING)
else:
    table = pass_table(frame, ks=(1, 2))
    bands = task_bands(frame)
    order = ["impossible", "very_hard", "hard", "medium", "easy", "trivial"]
    counts = {b: 0 for b in order} | dict(bands.group_by("band").len().iter_rows())
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(order, [counts[b] for b in order], color="tab:purple")
    ax.set_title("tasks by difficulty band")
    plt.show()
    display(table)"""
    ),
    new_markdown_cell("## Effort order\n\nHigher effort should think more and succeed more; inversions are flagged."),
    new_code_cell(
        """\
import tempfile

from IPython.display import Image, display
from rl.report import effort_report, plot_effort_report

if NOTHING:
    print(NOTHING)
else:
    report = effort_report(frame)
    png = plot_effort_report(report, Path(tempfile.mkdtemp()) / "effort.png")
    display(Image(filename=str(png)))
    print("inversions:", len(report.inversions))
    display(report.table())"""
    ),
    new_markdown_cell("## Rollout filter funnel (default rules)"),
    new_code_cell(
        """\
from curation.filters import apply_filters
from curation.funnel_plot import draw_funnel

if NOTHING:
    print(NOTHING)
else:
    result = apply_filters(frame)
    funnel_png = draw_funnel(result.funnel, Path(tempfile.mkdtemp()) / "funnel.png")
    display(Image(filename=str(funnel_png)))
    display(result.funnel)"""
    ),
]


def main() -> None:
    here = Path(__file__).resolve().parent
    for name, cells in (("inspect_pool.ipynb", INSPECT), ("rollouts.ipynb", ROLLOUTS)):
        nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
        nbformat.write(nb, here / name)
        print("wrote", here / name)


if __name__ == "__main__":
    main()
