"""CLI: `qaflow curate sources|dedup|decontam|mix|augment` and `qaflow rank-recipes`.

Task inputs (INPUT...) are any mix of: a task frame (.parquet, as written by `--out`), a sources config
(.yaml/.yml/.toml/.json with `sources: [...]`), or a folder of Harbor tasks (source name: the folder's name).
Every command prints a summary (removals counted by stage and reason) or, with `--json`, the stage's info.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal

import polars as pl
import typer

from curation.sources import (
    HarborSource,
    SourceError,
    SourcesConfig,
    StageResult,
    collect_tasks,
    empty_removed,
    read_tasks,
    write_tasks,
)
from qaflow.cli.options import BackendOpt, JsonOpt
from qaflow.cli.output import console, emit_json, usage_error

app = typer.Typer(
    no_args_is_help=True,
    help="Curate task pools: gather sources, remove duplicates and benchmark contamination, mix, augment.",
)

InputsArg = Annotated[
    list[Path], typer.Argument(help="Task frames (.parquet), sources configs (.yaml/.toml/.json) or task folders.")
]
OutOpt = Annotated[Path | None, typer.Option("--out", help="Write the kept tasks here (parquet).")]
RemovedOpt = Annotated[
    Path | None, typer.Option("--removed", help="Write the removals (id, stage, reason) here (parquet or csv).")
]


def register(app_: typer.Typer) -> None:
    app_.add_typer(app, name="curate")
    app_.command("rank-recipes")(rank_recipes_command)


def load_inputs(paths: list[Path]) -> StageResult:
    frames: list[pl.DataFrame] = []
    removed = [empty_removed()]
    info: dict[str, Any] = {}
    for path in paths:
        try:
            if path.suffix == ".parquet":
                frames.append(read_tasks(path))
                continue
            if path.is_dir():
                result = collect_tasks([HarborSource(name=path.resolve().name, path=path)])
            elif path.suffix in (".yaml", ".yml", ".toml", ".json"):
                result = collect_tasks(SourcesConfig.load(path).sources)
            else:
                usage_error(f"{path}: not a task frame (.parquet), a sources config or a folder")
        except SourceError as e:
            usage_error(str(e))
        frames.append(result.kept)
        removed.append(result.removed)
        info.setdefault("sources", {}).update(result.info.get("sources", {}))
    kept = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
    if kept.height and kept["id"].n_unique() != kept.height:
        dupes = kept.filter(pl.col("id").is_duplicated())["id"].unique().sort().to_list()[:5]
        usage_error(f"the inputs share task ids (e.g. {dupes}); give each source its own name")
    return StageResult(kept=kept, removed=pl.concat(removed), info=info)


def _write_removed(removed: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        removed.write_csv(path)
    else:
        removed.write_parquet(path)


def finish(result: StageResult, out: Path | None, removed_path: Path | None, as_json: str | None, title: str) -> None:
    if out is not None:
        write_tasks(result.kept, out)
    if removed_path is not None:
        _write_removed(result.removed, removed_path)
    if as_json:
        emit_json({"kept": result.kept.height, "removed": result.removed.height, "info": result.info}, as_json)
        return
    out_console = console()
    out_console.print(f"{title}: kept {result.kept.height}, removed {result.removed.height}")
    reasons = Counter(
        (s, _reason_kind(r)) for s, r in zip(result.removed["stage"], result.removed["reason"], strict=True)
    )
    for (stage, kind), count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        out_console.print(f"  {count:>6}  {stage}: {kind}")


def _reason_kind(reason: str) -> str:
    """A reason without its particulars (ids, numbers), for counting."""
    head = re.split(r" of | with | \(|: ", reason, maxsplit=1)[0]
    return head.strip() or reason


@app.command("sources")
def sources_command(inputs: InputsArg, out: OutOpt = None, removed: RemovedOpt = None, as_json: JsonOpt = None):
    """Gather tasks from sources into one task frame.

    Columns: id, source, original_id, licence, name, instruction, path, version. Tasks a source cannot deliver
    are listed as removals (stage `source`) with the reason.

    Example: qaflow curate sources sources.yaml --out tasks.parquet --removed problems.csv
    """
    result = load_inputs(inputs)
    finish(result, out, removed, as_json, "sources")


@app.command("dedup")
def dedup_command(
    inputs: InputsArg,
    out: OutOpt = None,
    removed: RemovedOpt = None,
    threshold: Annotated[float, typer.Option(help="Jaccard of character shingles at or above which: dup.")] = 0.8,
    shingle_size: Annotated[int, typer.Option(help="Characters per shingle.")] = 5,
    num_perm: Annotated[int, typer.Option(help="MinHash permutations.")] = 128,
    exact: Annotated[bool, typer.Option("--exact/--no-exact", help="Remove exact duplicates.")] = True,
    near: Annotated[bool, typer.Option("--near/--no-near", help="Remove near duplicates.")] = True,
    backend: Annotated[Literal["numpy", "datasketch"], typer.Option(help="numpy (fast) or datasketch (reference).")] = (
        "numpy"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the MinHash functions.")] = 1,
    as_json: JsonOpt = None,
):
    """Remove exact and near-duplicate instructions.

    Exact: equal normalised text. Near: MinHash LSH over character shingles, confirmed by exact Jaccard >=
    threshold. One task per cluster is kept: accepted first, then one with a pass rate, then the shortest id.

    Example: qaflow curate dedup sources.yaml --out deduped.parquet --removed dups.csv --threshold 0.8
    """
    from curation.dedup import DedupConfig, dedup_tasks

    loaded = load_inputs(inputs)
    try:
        config = DedupConfig(
            threshold=threshold, shingle_size=shingle_size, num_perm=num_perm, exact=exact, near=near,
            backend=backend, seed=seed,
        )  # fmt: skip
    except ValueError as e:
        usage_error(str(e))
    result = dedup_tasks(loaded.kept, config)
    finish(_carry(loaded, result), out, removed, as_json, "dedup")


def _carry(loaded: StageResult, result: StageResult) -> StageResult:
    """The stage's result with the inputs' own removals (sources that failed) in front."""
    return StageResult(result.kept, pl.concat([loaded.removed, result.removed]), {**loaded.info, **result.info})


@app.command("decontam")
def decontam_command(
    inputs: InputsArg,
    bench: Annotated[
        list[str],
        typer.Option("--bench", help="Benchmark set: a folder of tasks, a data file or a dataset (repeatable)."),
    ],
    out: OutOpt = None,
    removed: RemovedOpt = None,
    ngram: Annotated[int, typer.Option(help="Words per n-gram; 0: no n-gram test.")] = 8,
    min_shared: Annotated[int, typer.Option(help="Shared n-grams that flag a task.")] = 1,
    min_fraction: Annotated[float, typer.Option(help="...and their least share of the task's n-grams.")] = 0.0,
    fuzzy: Annotated[float, typer.Option(help="Fuzzy ratio at or above which a task is flagged; 0: off.")] = 0.8,
    column: Annotated[str, typer.Option(help="Text column of dataset benchmarks.")] = "instruction",
    split: Annotated[str, typer.Option(help="Split of dataset benchmarks.")] = "train",
    as_json: JsonOpt = None,
):
    """Remove tasks contaminated by benchmark task sets.

    A task is flagged when its instruction shares a word 8-gram with a benchmark task's, or their fuzzy ratio
    is >= 0.8 (both configurable).

    Example: qaflow curate decontam tasks.parquet --bench ../terminal-bench/tasks --bench swe.jsonl --out clean.parquet
    """
    from curation.decontam import BenchmarkSpec, DecontamConfig, decontaminate, load_benchmark

    loaded = load_inputs(inputs)
    items = []
    try:
        for path in bench:
            items += load_benchmark(BenchmarkSpec(path=path, column=column, split=split))
        config = DecontamConfig(
            ngram=ngram or None, min_shared=min_shared, min_fraction=min_fraction, fuzzy_threshold=fuzzy or None
        )
    except (SourceError, ValueError) as e:
        usage_error(str(e))
    result = decontaminate(loaded.kept, items, config)
    finish(_carry(loaded, result), out, removed, as_json, "decontam")


def _pairs(values: list[str], what: str, cast: type) -> dict[str, Any]:
    parsed = {}
    for value in values:
        key, sep, number = value.rpartition("=")
        try:
            parsed[key] = cast(number)
        except ValueError:
            sep = ""
        if not sep or not key:
            usage_error(f"{what} {value!r}: expected SOURCE={cast.__name__.upper()}")
    return parsed


@app.command("mix")
def mix_command(
    inputs: InputsArg,
    out: OutOpt = None,
    removed: RemovedOpt = None,
    target: Annotated[int | None, typer.Option(help="Rows of the train mix (default: every task once).")] = None,
    weight: Annotated[list[str], typer.Option("--weight", help="SOURCE=W (repeatable); others weigh 1.")] = [],  # noqa: B006
    cap: Annotated[list[str], typer.Option("--cap", help="SOURCE=N: most rows of a source (repeatable).")] = [],  # noqa: B006
    top_k: Annotated[int | None, typer.Option(help="Keep only the k sources of highest weight.")] = None,
    eval_fraction: Annotated[float, typer.Option(help="Share of original ids held out for eval.")] = 0.0,
    eval_out: Annotated[Path | None, typer.Option(help="Write the eval split here (parquet).")] = None,
    upsample: Annotated[bool, typer.Option("--upsample/--no-upsample", help="Repeat tasks of short sources.")] = True,
    seed: int = 0,
    as_json: JsonOpt = None,
):
    """Mix sources by weight up to a target size, with caps, top-k and upsampling.

    Short sources are upsampled by repetition (ids `_copyN`). An eval split by original id is made first, so
    copies never cross splits; its tasks go to --eval-out (needed with --eval-fraction), which `qaflow export
    ... --test-tasks` takes as the test split. The mix metadata is stored in the parquet file (key
    `qaflow.mix`) and in OUT with suffix .mix.json.

    Example: qaflow curate mix deduped.parquet --target 5000 --weight tb=2 --cap local=500 --eval-fraction 0.05
    --out mix.parquet --eval-out eval.parquet
    """
    from curation.mixing import MixConfig, mix_tasks

    if eval_fraction > 0 and eval_out is None:
        usage_error("--eval-fraction holds tasks out of the mix: say where they go with --eval-out")
    loaded = load_inputs(inputs)
    try:
        config = MixConfig(
            weights=_pairs(weight, "--weight", float), caps=_pairs(cap, "--cap", int), top_k=top_k, target=target,
            eval_fraction=eval_fraction, upsample=upsample, seed=seed,
        )  # fmt: skip
        result = mix_tasks(loaded.kept, config)
    except ValueError as e:
        usage_error(str(e))
    metadata = json.dumps(result.info, default=str)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        result.kept.write_parquet(out, metadata={"qaflow.mix": metadata})
        out.with_suffix(".mix.json").write_text(json.dumps(result.info, indent=2, default=str) + "\n")
    if eval_out is not None and result.eval is not None:
        write_tasks(result.eval, eval_out)
    finish(_carry(loaded, result), None, removed, as_json, "mix")
    if not as_json:
        table = console()
        for source, row in result.info["sources"].items():
            table.print(
                f"  {source}: {row['quota']} rows ({row['originals']} tasks + {row['copies']} copies) "
                f"of {row['available']} available, weight {row['weight']:g}"
            )
        if result.info["shortfall"]:
            table.print(f"  short of the target by {result.info['shortfall']} (every source at its cap)")


@app.command("augment")
def augment_command(
    inputs: InputsArg,
    out_dir: Annotated[Path, typer.Option("--out-dir", help="Folder for the rewritten tasks (a pool).")],
    model: Annotated[str | None, typer.Option("--model", help="litellm model (default: env QAFLOW_MODEL).")] = None,
    style: Annotated[
        list[str] | None, typer.Option("--style", help="paraphrase (default), terse, verbose or files (repeatable).")
    ] = None,
    seeds: Annotated[
        int, typer.Option(min=1, help="Rewrites per style and task: styles x seeds variants, each audited.")
    ] = 1,
    out: OutOpt = None,
    removed: RemovedOpt = None,
    backend: BackendOpt = "auto",
    repeats: Annotated[int, typer.Option(min=1, help="Audit runs each of nop and oracle.")] = 6,
    jobs: Annotated[int, typer.Option(min=1, help="Audit trials run concurrently.")] = 2,
    cache_dir: Annotated[Path | None, typer.Option(help="LLM response cache folder.")] = None,
    script: Annotated[Path | None, typer.Option(hidden=True, help="Scripted replies (JSON) for offline runs.")] = None,
    as_json: JsonOpt = None,
):
    """Rewrite instructions with an LLM; keep the rewritten tasks that audit clean.

    Environment, tests and solution are kept. Every rewritten task is audited and kept only when accepted;
    near duplicates of existing instructions are dropped.

    Example: qaflow curate augment tasks.parquet --model openai/gpt-4o-mini --style paraphrase --style terse
    --out-dir augmented --out augmented.parquet
    """
    from curation.augment import AugmentConfig, Style, augment_tasks
    from qaflow.audit.runner import AuditConfig
    from qaflow.cli.llm_options import MODEL_ENV, load_script
    from qaflow.errors import LLMError
    from qaflow.llm import LLMConfig
    from qaflow.llm.client import check_model

    model = model or os.environ.get(MODEL_ENV)
    if not model:
        usage_error(f"no model: pass --model or set {MODEL_ENV}")
    loaded = load_inputs(inputs)
    try:
        config = AugmentConfig(
            out_dir=out_dir,
            llm=LLMConfig(model=model, cache_dir=cache_dir, script=load_script(script) if script else None),
            styles=[Style(s) for s in style or ["paraphrase"]],
            seeds=seeds,
            audit=AuditConfig(backend=backend, repeats=repeats, jobs=jobs),
        )
    except ValueError as e:
        usage_error(str(e))
    try:
        check_model(config.llm)  # before any rewrite is asked for or audited
    except LLMError as e:
        usage_error(str(e))
    status = console(stderr=True)
    result = augment_tasks(loaded.kept, config, progress=lambda m: status.print(m) if not as_json else None)
    finish(_carry(loaded, result), out, removed, as_json, "augment")


def rank_recipes_command(
    scores: Annotated[Path, typer.Argument(help="Scores: one row per recipe, one column per benchmark.")],
    out: Annotated[Path | None, typer.Option("--out", help="Save the ranking (.csv, .parquet or .json).")] = None,
    recipe_column: Annotated[str, typer.Option("--recipe-col", help="Column naming the recipe.")] = "recipe",
    missing: Annotated[str, typer.Option(help="skip (mean over present) or penalize (missing = lowest z).")] = "skip",
    ddof: Annotated[int, typer.Option(help="0: population std, 1: sample std.")] = 0,
    lower_is_better: Annotated[
        list[str], typer.Option("--lower-is-better", help="Benchmark where lower is better (repeatable).")
    ] = [],  # noqa: B006
    as_json: JsonOpt = None,
):
    """Rank candidate data recipes by the mean z-score of their benchmark results.

    Each benchmark is z-scored across the candidates (population std); ties are broken by more benchmarks
    scored, then name, and reported.

    Example: qaflow rank-recipes scores.csv --out ranking.csv --missing penalize
    """
    from curation.recipes import RankConfig, RecipeError, load_scores, rank_recipes, save_ranking, ties

    try:
        config = RankConfig(recipe_column=recipe_column, missing=missing, ddof=ddof, lower_is_better=lower_is_better)
        ranking = rank_recipes(load_scores(scores, recipe_column), config)
    except (RecipeError, ValueError) as e:
        usage_error(str(e))
    if out is not None:
        save_ranking(ranking, out)
    if as_json:
        emit_json(ranking.to_dicts(), as_json)
        return
    from rich.table import Table

    table = Table("rank", "recipe", "mean z", "benchmarks", "missing", "tied with")
    for row in ranking.iter_rows(named=True):
        mean = f"{row['mean_z']:+.3f}" if row["mean_z"] is not None else "-"
        table.add_row(str(row["rank"]), row["recipe"], mean, str(row["benchmarks"]), row["missing"], row["tied_with"])
    out_console = console()
    out_console.print(table)
    for group in ties(ranking):
        out_console.print(f"tie: {', '.join(group)} (same mean z; ordered by benchmarks scored, then name)")
