"""Task filters: difficulty bands, length, language and audit verdict, each a pure frame -> StageResult.

- `attach_pass_rates` / `difficulty_filter`: pass rates from recorded rollouts (a pass is full reward with exit
  status ok, as in `qaflow.rollouts.stats`), bands by `qaflow.rollouts.stats.difficulty_band`.
- `length_filter`: bounds on characters and words (whitespace-separated) of the instruction, inclusive.
- `language_filter`: `detect_language`, a script-and-stopword heuristic (below).
- `attach_status` / `audit_filter`: the ledger status of each task's exact version; only `accepted` passes.

Language heuristic: text is counted in units per script: a Latin, Cyrillic, Arabic, Greek, Hebrew or
Devanagari word is one unit, a Han, kana or Hangul character is one unit. When non-Latin units are at least
`script_share` (0.5) of all units, the language is that script's usual one (Han -> zh, Hiragana/Katakana ->
ja, Hangul -> ko, Cyrillic -> ru, Arabic -> ar, Greek -> el, Hebrew -> he, Devanagari -> hi); Han with any kana
is ja. Otherwise the words of the text are checked against small stopword lists of en, de, fr, es, it, pt
and nl; the language with the most stopword hits wins (ties: the order of that list) when its hits are at
least `min_stopwords` (2) and 5% of the words, else the text is `und` (undetermined: code, paths, too short).
Undetermined texts are kept unless `keep_undetermined` is false.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

from curation.sources import StageResult, removed_frame
from qaflow.ledger import Ledger
from qaflow.rollouts.stats import band_expr, passed_expr, settled_expr

BAND_NAMES = ("impossible", "very_hard", "hard", "medium", "easy", "trivial")

SCRIPTS: tuple[tuple[str, str, bool], ...] = (
    ("ja", r"[\u3040-\u30ff]", True),
    ("ko", r"[\uac00-\ud7af\u1100-\u11ff]", True),
    ("zh", r"[\u4e00-\u9fff\u3400-\u4dbf]", True),
    ("ru", r"[\u0400-\u04ff]+", False),
    ("ar", r"[\u0600-\u06ff]+", False),
    ("el", r"[\u0370-\u03ff]+", False),
    ("he", r"[\u0590-\u05ff]+", False),
    ("hi", r"[\u0900-\u097f]+", False),
)
"""(language, pattern, counted per character): CJK characters count one each, other scripts by the word."""
_SCRIPT_RES = [(lang, re.compile(pattern)) for lang, pattern, _ in SCRIPTS]
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+")
_WORD = re.compile(r"[^\W\d_]+")

_STOPWORD_TEXT = {
    "en": "the a an and or of to in on for with is are be it this that as by from at file files into each which "
    "should must when if then all not your you",
    "de": "der die das und oder ein eine ist sind mit von zu den dem nicht auf für im wenn dann",
    "fr": "le la les et ou un une des est sont avec pour dans du au ce cette qui ne pas sur",
    "es": "el la los las y o un una es son con para en del al que por este esta no se",
    "it": "il lo la gli le e o un una è sono con per nel della che non di da questo",
    "pt": "o a os as e ou um uma é são com para em do da que não por este esta",
    "nl": "de het een en of is zijn met voor in van dat die niet op te dit als",
}
STOPWORDS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in _STOPWORD_TEXT.items()}


def detect_language(
    text: str, *, script_share: float = 0.5, min_stopwords: int = 2, min_stopword_share: float = 0.05
) -> str:
    """A language code by the heuristic in the module docstring, or `und`."""
    counts = {lang: len(rx.findall(text)) for lang, rx in _SCRIPT_RES}
    if counts["ja"] and counts["zh"]:
        counts["ja"] += counts.pop("zh")
    units = sum(counts.values()) + len(_LATIN_WORD.findall(text))
    if units and sum(counts.values()) / units >= script_share:
        return max(counts, key=lambda lang: counts[lang])
    words = [w.casefold() for w in _WORD.findall(text)]
    if not words:
        return "und"
    hits = {lang: sum(w in stops for w in words) for lang, stops in STOPWORDS.items()}
    best = max(hits, key=lambda lang: hits[lang])
    if hits[best] >= min_stopwords and hits[best] / len(words) >= min_stopword_share:
        return best
    return "und"


def _result(tasks: pl.DataFrame, keep: pl.Series, reasons: pl.Series, stage: str, info: dict) -> StageResult:
    keep = keep.fill_null(False)
    gone = tasks.select("id").with_columns(reasons.alias("reason")).filter(~keep)
    removed = removed_frame((i, stage, r) for i, r in zip(gone["id"], gone["reason"], strict=True))
    kept = tasks.filter(keep)
    return StageResult(kept=kept, removed=removed, info={"rows_in": tasks.height, "rows_out": kept.height, **info})


def length_filter(
    tasks: pl.DataFrame,
    *,
    min_chars: int | None = None,
    max_chars: int | None = None,
    min_words: int | None = None,
    max_words: int | None = None,
    column: str = "instruction",
) -> StageResult:
    """Keep instructions whose length is within every given bound (inclusive). Stage `length`."""
    stats = tasks.select(
        pl.col(column).fill_null("").str.len_chars().alias("chars"),
        pl.col(column).fill_null("").str.extract_all(r"\S+").list.len().alias("words"),
    )
    keep = pl.Series([True] * tasks.height, dtype=pl.Boolean)
    reasons = pl.Series([None] * tasks.height, dtype=pl.String)
    checks = (
        ("chars", min_chars, "<", "fewer than {} characters ({})"),
        ("chars", max_chars, ">", "more than {} characters ({})"),
        ("words", min_words, "<", "fewer than {} words ({})"),
        ("words", max_words, ">", "more than {} words ({})"),
    )
    for col, bound, op, template in checks:
        if bound is None:
            continue
        values = stats[col]
        bad = values < bound if op == "<" else values > bound
        text = pl.Series([template.format(bound, v) for v in values.to_list()], dtype=pl.String)
        reasons = pl.select(pl.when(keep & bad).then(text).otherwise(reasons)).to_series()
        keep = keep & ~bad
    bounds = {"min_chars": min_chars, "max_chars": max_chars, "min_words": min_words, "max_words": max_words}
    return _result(tasks, keep, reasons, "length", {"bounds": bounds})


def language_filter(
    tasks: pl.DataFrame,
    languages: Iterable[str] = ("en",),
    *,
    keep_undetermined: bool = True,
    column: str = "instruction",
) -> StageResult:
    """Keep instructions detected as one of `languages` (and `und` ones when `keep_undetermined`). Stage
    `language`; `info["detected"]` counts every detected language."""
    allowed = set(languages) | ({"und"} if keep_undetermined else set())
    detected = pl.Series([detect_language(t or "") for t in tasks[column].to_list()], dtype=pl.String)
    keep = detected.is_in(sorted(allowed))
    reasons = pl.Series([f"language {d} not in {sorted(allowed)}" for d in detected.to_list()], dtype=pl.String)
    counts = dict(sorted(detected.value_counts().iter_rows()))
    return _result(tasks, keep, reasons, "language", {"detected": counts})


def attach_pass_rates(tasks: pl.DataFrame, rollouts: pl.DataFrame, *, key: str = "version") -> pl.DataFrame:
    """`attempts`, `passes` and `pass_rate` columns from a rollout frame (ROLLOUT_SCHEMA), matched on the task
    version (`task_version`) or, with key="name", on the task name (`task`). Only graded attempts count
    (`settled_expr`: not an infrastructure or model error); tasks without any get nulls."""
    by = "task_version" if key == "version" else "task"
    rates = (
        rollouts.filter(settled_expr(rollouts))
        .with_columns(passed_expr().alias("_passed"))
        .group_by(by)
        .agg(pl.len().cast(pl.Int64).alias("attempts"), pl.col("_passed").sum().cast(pl.Int64).alias("passes"))
        .with_columns((pl.col("passes") / pl.col("attempts")).alias("pass_rate"))
        .rename({by: key})
    )
    base = tasks.drop([c for c in ("attempts", "passes", "pass_rate") if c in tasks.columns])
    return base.join(rates, on=key, how="left", maintain_order="left")


def difficulty_filter(tasks: pl.DataFrame, bands: Iterable[str], *, keep_unrated: bool = False) -> StageResult:
    """Keep tasks whose pass-rate band is in `bands` (BAND_NAMES; `difficulty_band` boundaries). A task with no
    pass rate is kept only with `keep_unrated`. Stage `difficulty`."""
    wanted = sorted(set(bands))
    unknown = set(wanted) - set(BAND_NAMES)
    if unknown:
        raise ValueError(f"unknown difficulty bands {sorted(unknown)}; choose from {list(BAND_NAMES)}")
    if "pass_rate" not in tasks.columns:
        raise ValueError("the task frame has no pass_rate column: call attach_pass_rates first")
    band = tasks.select(band_expr(pl.col("pass_rate")).alias("band"))["band"]
    rated = tasks["pass_rate"].is_not_null()
    keep = pl.select(pl.when(rated).then(band.is_in(wanted)).otherwise(pl.lit(keep_unrated))).to_series()
    why = pl.format("band {} (pass rate {}) not in {}", band, tasks["pass_rate"].round(3), pl.lit(", ".join(wanted)))
    reasons = pl.select(pl.when(rated).then(why).otherwise(pl.lit("no recorded pass rate"))).to_series()
    counts = dict(sorted(band.fill_null("unrated").value_counts().iter_rows()))
    return _result(tasks, keep, reasons, "difficulty", {"bands": counts, "wanted": wanted})


def attach_status(tasks: pl.DataFrame, ledger: Ledger) -> pl.DataFrame:
    """A `status` column: the ledger status of each row's exact version (null when the version is unknown)."""
    statuses = {v.version: v.status.value for v in ledger.versions()}
    column = pl.Series("status", [statuses.get(v) for v in tasks["version"].to_list()], dtype=pl.String)
    return tasks.with_columns(column)


def audit_filter(tasks: pl.DataFrame, *, allowed: Iterable[str] = ("accepted",)) -> StageResult:
    """Keep tasks whose `status` is in `allowed` (default only `accepted`). Stage `audit`."""
    if "status" not in tasks.columns:
        raise ValueError("the task frame has no status column: call attach_status first")
    allowed = sorted(set(allowed))
    keep = tasks["status"].is_in(allowed)
    reasons = pl.select(
        pl.when(pl.lit(tasks["status"]).is_null())
        .then(pl.lit("not audited (version not in the ledger)"))
        .otherwise(pl.format("audit status {}", pl.lit(tasks["status"])))
    ).to_series()
    counts = dict(sorted(tasks["status"].fill_null("unknown").value_counts().iter_rows()))
    return _result(tasks, keep, reasons, "audit", {"statuses": counts})
